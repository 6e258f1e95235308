"""bon_judge: the rubric judge scores every distinct sampled answer once -> data/bon/judged.parquet"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.downstream.bon import judge_stage
from tasks.ops.params import load_params

bon_judge_task = stage_task("bon_judge", judge_stage.run)


@flow(name="bon_judge", log_prints=True)
def bon_judge_flow(params_path: str | None = None):
    return run_stage(bon_judge_task, "bon_judge", load_params(params_path))


if __name__ == "__main__":
    sys.exit(main(bon_judge_flow))
