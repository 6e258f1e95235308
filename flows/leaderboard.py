"""leaderboard: accuracy with bootstrap CIs per RM × strategy × domain, plots -> data/leaderboard/"""
from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow

from flows import ui
from flows.common import main, run_stage, stage_task
from tasks.core import layout
from tasks.stages import leaderboard
from tasks.core.artifacts import read_table
from tasks.ops.params import load_params


def score_files(rms) -> dict:
    """{rm: path} for the RMs in params (a removed RM's stale file is not on the board)."""
    return {rm: layout.scores(rm)["scores"] for rm in sorted(rms) if Path(layout.scores(rm)["scores"]).exists()}


leaderboard_task = stage_task("leaderboard", leaderboard.run)


@flow(name="leaderboard", flow_run_name="leaderboard", log_prints=True)
def leaderboard_flow(params_path: str | None = None):
    params = load_params(params_path)
    state = run_stage(leaderboard_task, "leaderboard", params, inputs=score_files(params["scoring"]["rms"]))
    if state.is_completed():
        rows = read_table(layout.LEADERBOARD["leaderboard"], "leaderboard").to_pylist()
        print(leaderboard.format_table(rows))
        ui.leaderboard(rows)   # the Prefect UI's table artifact "leaderboard"
    return state


if __name__ == "__main__":
    sys.exit(main(leaderboard_flow))
