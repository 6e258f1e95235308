"""correlation: benchmark ranking of RMs vs their downstream ranking (BoN, RL, external tables) -> data/correlation/"""
from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow

from flows import ui
from flows.common import main, run_stage, stage_task
from tasks.core import layout
from tasks.core.artifacts import read_table
from tasks.downstream.correlation import stage
from tasks.ops.params import load_params
from tasks.core.stage_table import STAGES


def stage_inputs(p: dict, rms) -> dict:
    """The scores of the RMs in params (a removed RM's stale file is ignored), each downstream asked for."""
    scores = {rm: layout.scores(rm)["scores"] for rm in sorted(rms) if Path(layout.scores(rm)["scores"]).exists()}
    downstream = STAGES["correlation"].inputs
    root = Path(layout.BENCH_SCORES_DIR)   # every bench_score output (one folder per `benchmarks:` entry)
    bench = {d.name: str(d) for d in sorted(root.iterdir()) if d.is_dir()} if root.is_dir() else {}
    return {"scores": scores, "bench_scores": bench,
            **{k: (v if k in p["downstream"] else None) for k, v in downstream.items()}}


correlation_task = stage_task("correlation", stage.run)


@flow(name="correlation", flow_run_name="correlation", log_prints=True)
def correlation_flow(params_path: str | None = None):
    params = load_params(params_path)
    state = run_stage(correlation_task, "correlation", params,
                      inputs=stage_inputs(params["correlation"], params["scoring"]["rms"]))
    if state.is_completed():
        rows = read_table(layout.CORRELATION["correlation"], "correlation").to_pylist()
        print(stage.format_table(rows))
        ui.correlation(rows)   # the Prefect UI's table artifact "correlation"
    return state


if __name__ == "__main__":
    sys.exit(main(correlation_flow))
