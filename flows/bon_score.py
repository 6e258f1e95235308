"""bon_score: one RM scores every sampled answer -> data/bon/scores/<rm>.parquet. DVC runs one per
RM (a foreach stage, like score), so adding an RM scores only it and reuses samples and verdicts."""
from __future__ import annotations

import functools
import os
import sys

from prefect import flow

from flows import runner
from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import bon, layout
from tasks.artifacts import tree_hash
from tasks.bon import select
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "samples": bon.SAMPLE["samples"],
          "profile_context": layout.PROFILES["profile_context"], "inferred_rubrics": layout.RUBRICS["inferred_rubrics"]}


def stage_key() -> dict:
    present = {k: v for k, v in INPUTS.items() if os.path.exists(v)}
    extra = tree_hash(["prompts", layout.TRAIN_RM["model"]])   # judge prompts, the trained BT model
    return {"inputs": hashes(present), "extra": extra, "code": code_hash("bon_score")}


bon_score_chunk_task = runner.chunk_task("bon_score-chunk", select.score_chunk)


def _run(params: dict, rm: str, inputs: dict, out: dict) -> dict:
    # each chunk (a slice of the distinct answers) is a task on the configured runner
    chunks = functools.partial(runner.map_chunks, bon_score_chunk_task,
                               {"params": params, "rm_name": rm, "inputs": inputs}, stage_key(),
                               label=f"bon_score {rm}")
    return select.run(params, rm, inputs, out, map_chunks=chunks)


bon_score_task = stage_task("bon_score", _run)


@flow(name="bon_score", flow_run_name="bon_score-{rm}", log_prints=True)
def bon_score_flow(rm: str, params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": params["common"], "llms": params.get("llms", {}),
            "bon": bon.bon_params(params, bon.SCORE_PARAMS),
            "scoring": {"rms": {rm: runner.unscheduled(params["scoring"]["rms"].get(rm))}},
            "scale": {"chunk_size": runner.scale_params(params)["chunk_size"]}}
    if used["bon"]["strategy"] == "planner":   # refused unless the rubrics stage built plans for bon.splits
        used.update(rubrics={"splits": params["rubrics"]["splits"]}, bon={**used["bon"], "splits": params["bon"]["splits"]})
    with runner.configured(params, rm):
        return run_stage_task(bon_score_task.with_options(task_run_name=f"bon_score-{rm}"),
                              args={"params": used, "rm": rm, "inputs": INPUTS}, key=stage_key(), out=bon.scores(rm))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m flows.bon_score <rm name from params scoring.rms>")
    sys.exit(main(bon_score_flow, rm=sys.argv[1]))
