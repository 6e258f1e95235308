"""rl_eval: every trained policy and the untrained baseline answer the test questions; BoN's rubric judge
scores them -> data/rl/eval.parquet, data/rl/answers.parquet, metrics/rl.json, plots/rl_scores.png"""
from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout, rl
from tasks.artifacts import tree_hash
from tasks.params import load_params
from tasks.rl import evaluate


def inputs(rms) -> dict:
    """The checkpoints of the RMs in params (a removed RM's stale folder is ignored)."""
    policies = {rm: layout.rl_train(rm)["policy"] for rm in sorted(rms) if Path(layout.rl_train(rm)["policy"]).exists()}
    return {"questions": layout.INGEST["questions"], "ranked_profile": layout.PROFILES["ranked_profile"],
            "policies": policies}


rl_eval_task = stage_task("rl_eval", evaluate.run)


@flow(name="rl_eval", log_prints=True)
def rl_eval_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": params["common"], "llms": params.get("llms", {}), "rl": rl.rl_params(params, rl.EVAL_PARAMS),
            "bon": {"judge": params["bon"]["judge"]}}
    ins = inputs(params["scoring"]["rms"])
    files = {"questions": ins["questions"], "ranked_profile": ins["ranked_profile"],
             **{f"policy:{k}": v for k, v in ins["policies"].items()}}
    return run_stage_task(rl_eval_task, args={"params": used, "inputs": ins},
                          key={"inputs": hashes(files), "extra": tree_hash(["prompts"]), "code": code_hash("rl_eval")},
                          out=layout.RL_EVAL)


if __name__ == "__main__":
    sys.exit(main(rl_eval_flow))
