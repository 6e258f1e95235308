"""ingest: LaMP-QA (hub or files) -> data/ingest/*.parquet + metrics/ingest.json"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import ingest, layout
from tasks.artifacts import tree_hash
from tasks.params import load_params


ingest_task = stage_task("ingest", ingest.run)


@flow(name="ingest", log_prints=True)
def ingest_flow(params_path: str | None = None):
    p = load_params(params_path)["ingest"]
    # hub data is not hashable up front; its identity is the id + the params
    source = tree_hash([p["path"]]) if p["source"] == "files" else p["hub_id"]
    return run_stage_task(ingest_task, args={"p": p}, key={"source": source, "code": code_hash("ingest")},
                          out=layout.INGEST)


if __name__ == "__main__":
    sys.exit(main(ingest_flow))
