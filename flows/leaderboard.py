"""leaderboard: accuracy with bootstrap CIs per RM × strategy × domain, plots -> data/leaderboard/"""
from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import layout, leaderboard
from tasks.artifacts import read_table
from tasks.params import load_params, stage_params


def score_files(rms) -> dict:
    """{rm: path} for the RMs in params (a removed RM's stale file is not on the board)."""
    return {rm: layout.scores(rm)["scores"] for rm in sorted(rms) if Path(layout.scores(rm)["scores"]).exists()}


@task(name="leaderboard", **STAGE_TASK)
def leaderboard_task(params: dict, inputs: dict, input_hashes: dict, code: str, out: dict):
    try:
        metrics = leaderboard.run(params, inputs, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="leaderboard", log_prints=True)
def leaderboard_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": {"seed": params["common"]["seed"]}, "leaderboard": stage_params(params, "leaderboard")}
    inputs = score_files(params["scoring"]["rms"])
    state = run_stage_task(leaderboard_task, params=used, inputs=inputs, input_hashes=hashes(inputs),
                           code=code_hash("leaderboard"), out=layout.LEADERBOARD)
    if state.is_completed():
        print(leaderboard.format_table(read_table(layout.LEADERBOARD["leaderboard"], "leaderboard").to_pylist()))
    return state


if __name__ == "__main__":
    sys.exit(main(leaderboard_flow))
