"""ingest: LaMP-QA (hub or files) -> data/ingest/*.parquet + metrics/ingest.json"""
from __future__ import annotations

import sys

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import ingest, layout
from tasks.artifacts import tree_hash
from tasks.params import load_params


@task(name="ingest", **STAGE_TASK)
def ingest_task(p: dict, source_hash: str, code: str, out: dict):
    try:
        metrics = ingest.run(p, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="ingest", log_prints=True)
def ingest_flow(params_path: str | None = None):
    p = load_params(params_path)["ingest"]
    # hub data is not hashable up front; its identity is the id + the params
    source = tree_hash([p["path"]]) if p["source"] == "files" else p["hub_id"]
    return run_stage_task(ingest_task, p=p, source_hash=source, code=code_hash("ingest"), out=layout.INGEST)


if __name__ == "__main__":
    sys.exit(main(ingest_flow))
