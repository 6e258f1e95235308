"""bon_score: one RM scores every BoN answer -> data/bon/scores/<rm>.parquet (a DVC foreach stage, like score)."""
from __future__ import annotations

import functools
import sys

from prefect import flow

from flows import runner
from flows.common import per_rm_main, run_stage, stage_key, stage_task
from tasks.downstream.bon import select
from tasks.ops.params import load_params

bon_score_chunk_task = runner.chunk_task("bon_score-chunk", select.score_chunk)


def _run(params: dict, rm: str, inputs: dict, out: dict) -> dict:
    # each chunk (a slice of the distinct answers) is a task on the configured runner
    chunks = functools.partial(runner.map_chunks, bon_score_chunk_task,
                               {"params": params, "rm_name": rm, "inputs": inputs}, stage_key("bon_score", params, rm),
                               label=f"bon_score {rm}")
    return select.run(params, rm, inputs, out, map_chunks=chunks)


bon_score_task = stage_task("bon_score", _run)


@flow(name="bon_score", flow_run_name="bon_score-{rm}", log_prints=True)
def bon_score_flow(rm: str, params_path: str | None = None):
    params = load_params(params_path)
    with runner.configured(params, rm):
        return run_stage(bon_score_task, "bon_score", params, rm=rm, used=runner.unscheduled_params(params, "bon_score", rm))


if __name__ == "__main__":
    sys.exit(per_rm_main(bon_score_flow))
