"""ingest: LaMP-QA (hub or files) -> data/ingest/*.parquet + metrics/ingest.json"""
from __future__ import annotations

import os
import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.stages import ingest
from tasks.core.artifacts import tree_hash
from tasks.ops.params import load_params

# hub data is not hashable up front: its identity is the hub id in params (the task's args)
ingest_task = stage_task("ingest", lambda params, inputs, out: ingest.run(params["ingest"], out))


def source_key(s: dict):
    """Local files: their content hash; hub data is not hashable up front: its id (+ the params). A path that
    does not exist is the stage's error to report."""
    if s["source"] == "files" and os.path.exists(s.get("path") or ""):
        return tree_hash([s["path"]])
    return s.get("hub_id") if s["source"] == "hub" else s.get("path")


@flow(name="ingest", log_prints=True)
def ingest_flow(params_path: str | None = None):
    params = load_params(params_path)
    p = params["ingest"]
    rl_prompts = source_key(p["rl_prompts"]) if p.get("rl_prompts") else None   # the second source (RL prompts)
    return run_stage(ingest_task, "ingest", params, key_extra={"rl_prompts": rl_prompts})


if __name__ == "__main__":
    sys.exit(main(ingest_flow))
