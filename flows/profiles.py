"""profiles: each user's past posts ranked for the question -> data/profiles/*.parquet"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.stages import profiles
from tasks.ops.params import load_params

profiles_task = stage_task("profiles", lambda params, inputs, out: profiles.run(params["profiles"], params["common"],
                                                                                 inputs, out))


@flow(name="profiles", log_prints=True)
def profiles_flow(params_path: str | None = None):
    return run_stage(profiles_task, "profiles", load_params(params_path))


if __name__ == "__main__":
    sys.exit(main(profiles_flow))
