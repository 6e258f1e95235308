"""bon_sample: the policy's N answers per test question -> data/bon/samples.parquet"""
from __future__ import annotations

import sys

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import bon, layout
from tasks.bon import sample
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "ranked_profile": layout.PROFILES["ranked_profile"]}


@task(name="bon_sample", **STAGE_TASK)
def bon_sample_task(params: dict, prompt_hash: dict, input_hashes: dict, code: str, out: dict):
    try:
        metrics = sample.run(params, INPUTS, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="bon_sample", log_prints=True)
def bon_sample_flow(params_path: str | None = None):
    params = load_params(params_path)
    p = bon.bon_params(params, bon.SAMPLE_PARAMS)
    used = {"common": params["common"], "llms": params.get("llms", {}), "bon": p}
    return run_stage_task(bon_sample_task, params=used, prompt_hash=hashes({"policy": p["prompt"]}),
                          input_hashes=hashes(INPUTS), code=code_hash("bon_sample"), out=bon.SAMPLE)


if __name__ == "__main__":
    sys.exit(main(bon_sample_flow))
