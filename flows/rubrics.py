"""rubrics (planner): infer each user's expected aspects from question + profile -> data/rubrics/"""
from __future__ import annotations

import sys

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import layout, rubrics
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "ranked_profile": layout.PROFILES["ranked_profile"]}


@task(name="rubrics", **STAGE_TASK)
def rubrics_task(params: dict, prompt_hash: str, input_hashes: dict, code: str, out: dict):
    try:
        metrics = rubrics.run(params, INPUTS, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="rubrics", log_prints=True)
def rubrics_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {k: params[k] for k in ("common", "llms", "rubrics")}
    return run_stage_task(rubrics_task, params=used, prompt_hash=hashes({"p": params["rubrics"]["prompt"]}),
                          input_hashes=hashes(INPUTS), code=code_hash("rubrics"), out=layout.RUBRICS)


if __name__ == "__main__":
    sys.exit(main(rubrics_flow))
