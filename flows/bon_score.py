"""bon_score: one RM scores every sampled answer -> data/bon/scores/<rm>.parquet. DVC runs one per
RM (a foreach stage, like score), so adding an RM scores only it and reuses samples and verdicts."""
from __future__ import annotations

import os
import sys

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import bon, layout
from tasks.artifacts import tree_hash
from tasks.bon import select
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "samples": bon.SAMPLE["samples"],
          "profile_context": layout.PROFILES["profile_context"], "inferred_rubrics": layout.RUBRICS["inferred_rubrics"]}


@task(name="bon_score", task_run_name="bon_score-{rm}", **STAGE_TASK)
def bon_score_task(params: dict, rm: str, input_hashes: dict, extra_hash: str, code: str, out: dict):
    try:
        metrics = select.run(params, rm, INPUTS, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="bon_score", flow_run_name="bon_score-{rm}", log_prints=True)
def bon_score_flow(rm: str, params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": params["common"], "llms": params.get("llms", {}),
            "bon": bon.bon_params(params, bon.SCORE_PARAMS),
            "scoring": {"rms": {rm: params["scoring"]["rms"].get(rm)}}}
    present = {k: v for k, v in INPUTS.items() if os.path.exists(v)}
    extra = tree_hash(["prompts", layout.TRAIN_RM["model"]])   # judge prompts, the trained BT model
    return run_stage_task(bon_score_task, params=used, rm=rm, input_hashes=hashes(present), extra_hash=extra,
                          code=code_hash("bon_score"), out=bon.scores(rm))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m flows.bon_score <rm name from params scoring.rms>")
    sys.exit(main(bon_score_flow, rm=sys.argv[1]))
