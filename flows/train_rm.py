"""train_rm: a Bradley-Terry RM on the train split's selected pairs -> data/models/bradley-terry/"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.stages import train_rm
from tasks.ops.params import load_params
from tasks.core.stage_table import STAGES

train_rm_task = stage_task("train_rm", train_rm.run)


def stage_inputs(p: dict) -> dict:
    """Only the planner strategy reads the inferred rubrics: the others do not retrain when they change."""
    inputs = dict(STAGES["train_rm"].inputs)
    if p["strategy"] != "planner":
        inputs.pop("inferred_rubrics")
    return inputs


# no log_prints: Prefect's print-to-log would catch the disassembly dill prints into its own captured
# stdout while `datasets` fingerprints a function (bytecode lines in the log, and dill sees no globals)
@flow(name="train_rm")
def train_rm_flow(params_path: str | None = None):
    from tasks.models.encoders import resolve_model

    params = load_params(params_path)
    backbone = resolve_model(params["train_rm"]["backbone"])[1]   # local weights hash: new weights, new run
    return run_stage(train_rm_task, "train_rm", params, inputs=stage_inputs(params["train_rm"]),
                     key_extra={"backbone": backbone})


if __name__ == "__main__":
    sys.exit(main(train_rm_flow))
