"""leaderboard: accuracy with bootstrap CIs per RM × strategy × domain, plots -> data/leaderboard/"""
from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow

from flows import ui
from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout, leaderboard
from tasks.artifacts import read_table
from tasks.params import load_params, stage_params
from tasks.rm_labels import label_params


def score_files(rms) -> dict:
    """{rm: path} for the RMs in params (a removed RM's stale file is not on the board)."""
    return {rm: layout.scores(rm)["scores"] for rm in sorted(rms) if Path(layout.scores(rm)["scores"]).exists()}


leaderboard_task = stage_task("leaderboard", leaderboard.run)


@flow(name="leaderboard", flow_run_name="leaderboard", log_prints=True)
def leaderboard_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": {"seed": params["common"]["seed"]}, "leaderboard": stage_params(params, "leaderboard"),
            **label_params(params)}   # the RM labels: shares an LLM with a judge, in-distribution
    inputs = score_files(params["scoring"]["rms"])
    state = run_stage_task(leaderboard_task, args={"params": used, "inputs": inputs},
                           key={"inputs": hashes(inputs), "code": code_hash("leaderboard")}, out=layout.LEADERBOARD)
    if state.is_completed():
        rows = read_table(layout.LEADERBOARD["leaderboard"], "leaderboard").to_pylist()
        print(leaderboard.format_table(rows))
        ui.leaderboard(rows)   # the Prefect UI's table artifact "leaderboard"
    return state


if __name__ == "__main__":
    sys.exit(main(leaderboard_flow))
