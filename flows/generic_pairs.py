"""generic_pairs: the baseline benchmark (same chosen, a non-personalised rejected) -> data/pairs/generic.parquet"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.stages import generic_pairs
from tasks.ops.params import load_params

generic_pairs_task = stage_task("generic_pairs", generic_pairs.run)


@flow(name="generic_pairs", log_prints=True)
def generic_pairs_flow(params_path: str | None = None):
    return run_stage(generic_pairs_task, "generic_pairs", load_params(params_path))


if __name__ == "__main__":
    sys.exit(main(generic_pairs_flow))
