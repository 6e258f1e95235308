"""bon_sample: the policy's N answers per test question -> data/bon/samples.parquet"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.downstream.bon import sample
from tasks.ops.params import load_params

bon_sample_task = stage_task("bon_sample", sample.run)


@flow(name="bon_sample", log_prints=True)
def bon_sample_flow(params_path: str | None = None):
    return run_stage(bon_sample_task, "bon_sample", load_params(params_path))


if __name__ == "__main__":
    sys.exit(main(bon_sample_flow))
