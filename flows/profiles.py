"""profiles: rank each user's posts for their question -> data/profiles/*.parquet"""
from __future__ import annotations

import sys

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import layout, profiles
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "profiles": layout.INGEST["profiles"]}


@task(name="profiles", **STAGE_TASK)
def profiles_task(p: dict, common: dict, inputs: dict, input_hashes: dict, code: str, out: dict):
    try:
        metrics = profiles.run(p, common, inputs, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="profiles", log_prints=True)
def profiles_flow(params_path: str | None = None):
    params = load_params(params_path)
    return run_stage_task(profiles_task, p=params["profiles"], common=params["common"], inputs=INPUTS,
                          input_hashes=hashes(INPUTS), code=code_hash("profiles"), out=layout.PROFILES)


if __name__ == "__main__":
    sys.exit(main(profiles_flow))
