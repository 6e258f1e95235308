"""ingest: LaMP-QA (hub or files) -> data/ingest/*.parquet + metrics/ingest.json"""
from __future__ import annotations

import os
import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import ingest, layout
from tasks.artifacts import tree_hash
from tasks.params import load_params


ingest_task = stage_task("ingest", ingest.run)


def source_key(s: dict):
    """Local files: their content hash; hub data is not hashable up front: its id (+ the params). A path that
    does not exist is the stage's error to report."""
    if s["source"] == "files" and os.path.exists(s.get("path") or ""):
        return tree_hash([s["path"]])
    return s.get("hub_id") if s["source"] == "hub" else s.get("path")


@flow(name="ingest", log_prints=True)
def ingest_flow(params_path: str | None = None):
    p = load_params(params_path)["ingest"]
    rl_prompts = source_key(p["rl_prompts"]) if p.get("rl_prompts") else None   # the second source (RL prompts)
    return run_stage_task(ingest_task, args={"p": p},
                          key={"source": source_key(p), "rl_prompts": rl_prompts, "code": code_hash("ingest")},
                          out=layout.INGEST)


if __name__ == "__main__":
    sys.exit(main(ingest_flow))
