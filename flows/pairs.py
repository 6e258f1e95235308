"""pairs: generate chosen/rejected, judge every pair source, select what scoring reads -> data/pairs/"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.stages import pairs
from tasks.ops.params import load_params

pairs_task = stage_task("pairs", pairs.run)


@flow(name="pairs", log_prints=True)
def pairs_flow(params_path: str | None = None):
    return run_stage(pairs_task, "pairs", load_params(params_path))


if __name__ == "__main__":
    sys.exit(main(pairs_flow))
