"""bon_report: best-of-k per RM with CIs, oracle and random lines, the curve -> data/bon/ + metrics/bon.json"""
from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow

from flows import ui
from flows.common import main, run_stage, stage_task
from tasks.downstream import bon
from tasks.core.artifacts import read_table
from tasks.downstream.bon import report
from tasks.ops.params import load_params
from tasks.core.stage_table import STAGES


def inputs(rms) -> dict:
    """Samples, verdicts, and the scores of the RMs in params (a removed RM's stale file is ignored)."""
    scores = {rm: bon.scores(rm)["scores"] for rm in sorted(rms) if Path(bon.scores(rm)["scores"]).exists()}
    return {**STAGES["bon_report"].inputs, "scores": scores}


bon_report_task = stage_task("bon_report", report.run)


@flow(name="bon_report", flow_run_name="bon_report", log_prints=True)
def bon_report_flow(params_path: str | None = None):
    params = load_params(params_path)
    state = run_stage(bon_report_task, "bon_report", params, inputs=inputs(params["scoring"]["rms"]))
    if state.is_completed():   # the Prefect UI's table artifact "bon-largest-k"
        ui.bon(read_table(bon.REPORT["curve"], "bon_curve").to_pylist())
    return state


if __name__ == "__main__":
    sys.exit(main(bon_report_flow))
