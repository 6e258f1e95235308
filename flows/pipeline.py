"""The whole DAG in one process, for users without DVC: `prbench run --no-dvc`.
Same stages and order as dvc.yaml; per-RM stages run once per `scoring.rms` entry."""
from __future__ import annotations

import importlib
import sys

from prefect import flow
from prefect.states import Failed

from flows.common import main
from tasks.params import load_params

# (stage, flow module, runs once per RM) in dependency order, as in dvc.yaml
STAGES = [("ingest", False), ("profiles", False), ("rubrics", False), ("pairs", False),
          ("generic_pairs", False), ("train_rm", False), ("score", True), ("leaderboard", False),
          ("human_eval", False), ("bon_sample", False), ("bon_judge", False), ("bon_score", True),
          ("bon_report", False), ("correlation", False)]


def _flow(stage: str):
    return getattr(importlib.import_module(f"flows.{stage}"), f"{stage}_flow")


@flow(name="prbench-pipeline", log_prints=True)
def pipeline(params_path: str | None = None, until: str | None = None):
    """Run every stage in order (or up to and including `until`); stop at the first failure."""
    rms = sorted(load_params(params_path)["scoring"]["rms"])
    for stage, per_rm in STAGES:
        for kwargs in ([{"rm": rm} for rm in rms] if per_rm else [{}]):
            state = _flow(stage)(params_path=params_path, return_state=True, **kwargs)
            if state.is_failed():
                return Failed(message=f"{stage}: {state.message}")
        if stage == until:
            break
    return "ok"


if __name__ == "__main__":
    sys.exit(main(pipeline))
