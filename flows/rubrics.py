"""rubrics (planner): infer each user's expected aspects from question + profile -> data/rubrics/"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.stages import rubrics
from tasks.ops.params import load_params

rubrics_task = stage_task("rubrics", rubrics.run)


@flow(name="rubrics", log_prints=True)
def rubrics_flow(params_path: str | None = None):
    return run_stage(rubrics_task, "rubrics", load_params(params_path))


if __name__ == "__main__":
    sys.exit(main(rubrics_flow))
