"""bench_score: one `benchmarks:` entry (RewardBench 2, PRISM, ...) through the list-wise scorer, for
each RM the entry lists -> data/bench_scores/<benchmark>/<rm>.parquet. One DVC foreach stage per entry."""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import per_rm_main, run_stage, stage_task
from tasks.stages.benchmarks import stage
from tasks.ops.params import load_params


def _run(params: dict, rm: str, inputs: dict, out: dict) -> dict:
    return stage.run(params, rm, out)   # `rm` is the stage's foreach key: here the benchmark's name


bench_score_task = stage_task("bench_score", _run)


@flow(name="bench_score", flow_run_name="bench_score-{benchmark}", log_prints=True)
def bench_score_flow(benchmark: str, params_path: str | None = None):
    params = load_params(params_path)
    return run_stage(bench_score_task, "bench_score", params, rm=benchmark)


if __name__ == "__main__":
    sys.exit(per_rm_main(bench_score_flow))
