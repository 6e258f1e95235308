"""bon_report: best-of-k curves per RM with oracle and random lines, CIs, plot -> data/bon/, metrics/bon.json"""
from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow

from flows import ui
from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import bon
from tasks.bon import report
from tasks.artifacts import read_table
from tasks.params import load_params


def inputs(rms) -> dict:
    """Samples, verdicts, and the scores of the RMs in params (a removed RM's stale file is ignored)."""
    scores = {rm: bon.scores(rm)["scores"] for rm in sorted(rms) if Path(bon.scores(rm)["scores"]).exists()}
    return {"samples": bon.SAMPLE["samples"], "judged": bon.JUDGE["judged"], "scores": scores}


bon_report_task = stage_task("bon_report", report.run)


@flow(name="bon_report", flow_run_name="bon_report", log_prints=True)
def bon_report_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": {"seed": params["common"]["seed"]}, "bon": bon.bon_params(params, bon.REPORT_PARAMS)}
    ins = inputs(params["scoring"]["rms"])
    files = {"samples": ins["samples"], "judged": ins["judged"], **{f"scores:{k}": v for k, v in ins["scores"].items()}}
    state = run_stage_task(bon_report_task, args={"params": used, "inputs": ins},
                           key={"inputs": hashes(files), "code": code_hash("bon_report")}, out=bon.REPORT)
    if state.is_completed():   # the Prefect UI's table artifact "bon-largest-k"
        ui.bon(read_table(bon.REPORT["curve"], "bon_curve").to_pylist())
    return state


if __name__ == "__main__":
    sys.exit(main(bon_report_flow))
