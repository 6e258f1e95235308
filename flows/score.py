"""score: one RM over the selected pairs under every profile strategy -> data/scores/<rm>.parquet.
DVC runs one of these per RM (a foreach stage), so adding an RM recomputes that RM alone."""
from __future__ import annotations

import functools
import sys

from prefect import flow

from flows import runner
from flows.common import per_rm_main, run_stage, stage_key, stage_task
from tasks.stages import score
from tasks.ops.params import load_params

score_chunk_task = runner.chunk_task("score-chunk", score.score_chunk)


def _run(params: dict, rm: str, inputs: dict, out: dict) -> dict:
    # each chunk (benchmark x strategy x slice of pairs) is a task on the configured runner
    chunks = functools.partial(runner.map_chunks, score_chunk_task, {"params": params, "rm_name": rm, "inputs": inputs},
                               stage_key("score", params, rm), label=f"score {rm}")
    return score.run(params, rm, inputs, out, map_chunks=chunks)


score_task = stage_task("score", _run)


@flow(name="score", flow_run_name="score-{rm}", log_prints=True)
def score_flow(rm: str, params_path: str | None = None):
    params = load_params(params_path)
    used = runner.unscheduled_params(params, "score", rm)
    with runner.configured(params, rm):
        return run_stage(score_task, "score", params, rm=rm, used=used)


if __name__ == "__main__":
    sys.exit(per_rm_main(score_flow))
