"""score: one RM over the selected pairs under every profile strategy -> data/scores/<rm>.parquet.
DVC runs one of these per RM (a foreach stage), so adding an RM recomputes that RM alone."""
from __future__ import annotations

import functools
import os
import sys

from prefect import flow

from flows import runner
from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout, score
from tasks.artifacts import tree_hash
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "selected_pairs": layout.PAIRS["selected_pairs"],
          "profile_context": layout.PROFILES["profile_context"], "inferred_rubrics": layout.RUBRICS["inferred_rubrics"],
          "generic_pairs": layout.GENERIC_PAIRS["generic_pairs"]}


def stage_key() -> dict:
    present = {k: v for k, v in INPUTS.items() if os.path.exists(v)}
    extra = tree_hash(["prompts", layout.TRAIN_RM["model"]])   # judge prompts, the trained BT model
    return {"inputs": hashes(present), "extra": extra, "code": code_hash("score")}


score_chunk_task = runner.chunk_task("score-chunk", score.score_chunk)


def _run(params: dict, rm: str, inputs: dict, out: dict) -> dict:
    # each chunk (benchmark x strategy x slice of pairs) is a task on the configured runner
    chunks = functools.partial(runner.map_chunks, score_chunk_task, {"params": params, "rm_name": rm, "inputs": inputs},
                               stage_key(), label=f"score {rm}")
    return score.run(params, rm, inputs, out, map_chunks=chunks)


score_task = stage_task("score", _run)


@flow(name="score", flow_run_name="score-{rm}", log_prints=True)
def score_flow(rm: str, params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": params["common"], "llms": params.get("llms", {}),
            "scoring": {**params["scoring"], "rms": {rm: runner.unscheduled(params["scoring"]["rms"].get(rm))}},
            "scale": {"chunk_size": runner.scale_params(params)["chunk_size"]}}
    with runner.configured(params, rm):
        return run_stage_task(score_task.with_options(task_run_name=f"score-{rm}"),
                              args={"params": used, "rm": rm, "inputs": INPUTS}, key=stage_key(), out=layout.scores(rm))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m flows.score <rm name from params scoring.rms>")
    sys.exit(main(score_flow, rm=sys.argv[1]))
