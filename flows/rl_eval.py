"""rl_eval: every trained policy and the untrained one answer the test questions, judged -> data/rl/"""
from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.core import layout
from tasks.ops.params import load_params
from tasks.downstream.rl import evaluate
from tasks.core.stage_table import STAGES


def inputs(rms) -> dict:
    """The checkpoints of the RMs in params (a removed RM's stale folder is ignored)."""
    policies = {rm: layout.rl_train(rm)["policy"] for rm in sorted(rms) if Path(layout.rl_train(rm)["policy"]).exists()}
    return {**STAGES["rl_eval"].inputs, "policies": policies}


rl_eval_task = stage_task("rl_eval", evaluate.run)


@flow(name="rl_eval", flow_run_name="rl_eval", log_prints=True)
def rl_eval_flow(params_path: str | None = None):
    params = load_params(params_path)
    return run_stage(rl_eval_task, "rl_eval", params, inputs=inputs(params["scoring"]["rms"]))


if __name__ == "__main__":
    sys.exit(main(rl_eval_flow))
