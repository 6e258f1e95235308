"""ingest: LaMP-QA (hub or files) -> data/ingest/*.parquet + metrics/ingest.json"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks import ingest
from tasks.params import load_params

# hub data is not hashable up front: its identity is the hub id in params (the task's args)
ingest_task = stage_task("ingest", lambda params, inputs, out: ingest.run(params["ingest"], out))


@flow(name="ingest", log_prints=True)
def ingest_flow(params_path: str | None = None):
    return run_stage(ingest_task, "ingest", load_params(params_path))


if __name__ == "__main__":
    sys.exit(main(ingest_flow))
