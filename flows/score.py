"""score: one RM over the selected pairs under every profile strategy -> data/scores/<rm>.parquet.
DVC runs one of these per RM (a foreach stage), so adding an RM recomputes that RM alone."""
from __future__ import annotations

import os
import sys

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import layout, score
from tasks.artifacts import tree_hash
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "selected_pairs": layout.PAIRS["selected_pairs"],
          "profile_context": layout.PROFILES["profile_context"], "inferred_rubrics": layout.RUBRICS["inferred_rubrics"],
          "generic_pairs": layout.GENERIC_PAIRS["generic_pairs"]}


@task(name="score", task_run_name="score-{rm}", **STAGE_TASK)
def score_task(params: dict, rm: str, input_hashes: dict, extra_hash: str, code: str, out: dict):
    try:
        metrics = score.run(params, rm, INPUTS, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="score", flow_run_name="score-{rm}", log_prints=True)
def score_flow(rm: str, params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": params["common"], "llms": params.get("llms", {}),
            "scoring": {**params["scoring"], "rms": {rm: params["scoring"]["rms"].get(rm)}}}
    present = {k: v for k, v in INPUTS.items() if os.path.exists(v)}
    extra = tree_hash(["prompts", layout.TRAIN_RM["model"]])   # judge prompts, the trained BT model
    return run_stage_task(score_task, params=used, rm=rm, input_hashes=hashes(present), extra_hash=extra,
                          code=code_hash("score"), out=layout.scores(rm))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m flows.score <rm name from params scoring.rms>")
    sys.exit(main(score_flow, rm=sys.argv[1]))
