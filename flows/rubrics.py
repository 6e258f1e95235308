"""rubrics (planner): infer each user's expected aspects from question + profile -> data/rubrics/"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout, rubrics
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "ranked_profile": layout.PROFILES["ranked_profile"]}


rubrics_task = stage_task("rubrics", rubrics.run)


@flow(name="rubrics", log_prints=True)
def rubrics_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {k: params[k] for k in ("common", "llms", "rubrics")}
    return run_stage_task(rubrics_task, args={"params": used, "inputs": INPUTS},
                          key={"prompt": hashes({"p": params["rubrics"]["prompt"]}), "inputs": hashes(INPUTS),
                               "code": code_hash("rubrics")}, out=layout.RUBRICS)


if __name__ == "__main__":
    sys.exit(main(rubrics_flow))
