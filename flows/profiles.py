"""profiles: rank each user's posts for their question -> data/profiles/*.parquet"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout, profiles
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "profiles": layout.INGEST["profiles"]}


profiles_task = stage_task("profiles", profiles.run)


@flow(name="profiles", log_prints=True)
def profiles_flow(params_path: str | None = None):
    params = load_params(params_path)
    return run_stage_task(profiles_task, args={"p": params["profiles"], "common": params["common"], "inputs": INPUTS},
                          key={"inputs": hashes(INPUTS), "code": code_hash("profiles")}, out=layout.PROFILES)


if __name__ == "__main__":
    sys.exit(main(profiles_flow))
