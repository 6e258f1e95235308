"""The whole DAG in one process, for users without DVC: `prbench run --no-dvc`."""
from __future__ import annotations

import sys

from prefect import flow
from prefect.states import Failed

from flows.common import main
from flows.ingest import ingest_flow
from flows.pairs import pairs_flow
from flows.profiles import profiles_flow
from flows.rubrics import rubrics_flow

STAGES = [ingest_flow, profiles_flow, rubrics_flow, pairs_flow]   # in dependency order, as in dvc.yaml


@flow(name="prbench-pipeline", log_prints=True)
def pipeline(params_path: str | None = None):
    for stage in STAGES:
        state = stage(params_path=params_path, return_state=True)
        if state.is_failed():
            return Failed(message=f"{stage.name}: {state.message}")
    return "ok"


if __name__ == "__main__":
    sys.exit(main(pipeline))
