"""correlation: benchmark ranking of RMs vs their downstream ranking (BoN, external tables) -> data/correlation/"""
from __future__ import annotations

import sys
from pathlib import Path

from prefect import flow

from flows import ui
from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout
from tasks.artifacts import read_table
from tasks.correlation import stage
from tasks.params import load_params, stage_params
from tasks.rm_labels import label_params


def stage_inputs(p: dict, rms) -> dict:
    """The scores of the RMs in params (a removed RM's stale file is ignored), BoN when asked for."""
    scores = {rm: layout.scores(rm)["scores"] for rm in sorted(rms) if Path(layout.scores(rm)["scores"]).exists()}
    return {"scores": scores, "bon": layout.BON_REPORT["per_question"] if "bon" in p["downstream"] else None,
            "rl": layout.RL_EVAL["answers"] if "rl" in p["downstream"] else None}


def input_files(inputs: dict, p: dict) -> dict:
    files = {**inputs["scores"], "bon": inputs["bon"], "rl": inputs.get("rl")}
    files.update({f"external{i}": f for i, f in enumerate([*(p.get("baselines") or []), *(p.get("downstream_tables") or [])])})
    return {k: v for k, v in files.items() if v and Path(v).exists()}   # a missing one is the stage's error to report


correlation_task = stage_task("correlation", stage.run)


@flow(name="correlation", flow_run_name="correlation", log_prints=True)
def correlation_flow(params_path: str | None = None):
    params = load_params(params_path)
    p = stage_params(params, "correlation")
    used = {"common": {"seed": params["common"]["seed"]}, "correlation": p,
            **label_params(params)}   # flags RMs sharing an LLM with a judge
    inputs = stage_inputs(p, params["scoring"]["rms"])
    state = run_stage_task(correlation_task, args={"params": used, "inputs": inputs},
                           key={"inputs": hashes(input_files(inputs, p)), "code": code_hash("correlation")},
                           out=layout.CORRELATION)
    if state.is_completed():
        rows = read_table(layout.CORRELATION["correlation"], "correlation").to_pylist()
        print(stage.format_table(rows))
        ui.correlation(rows)   # the Prefect UI's table artifact "correlation"
    return state


if __name__ == "__main__":
    sys.exit(main(correlation_flow))
