"""How much faster is scoring 4 RMs on a 2-worker Dask cluster than on a 1-worker one?

One project (the bundled sample's 30 test pairs x 3 strategies, selected = reference pairs, a
Bradley-Terry RM trained for one epoch), scored by length-longer, random, similarity (MiniLM) and
bradley-terry through `scale.task_runner: dask`: the four score flows at once, as `prbench run
--no-dvc` fans them out, against a fresh `dask scheduler` with 1, then 2 fresh `dask worker`
processes (one thread, PRBENCH_TORCH_THREADS=1 each, OMP and MKL follow it: one core per worker, as one machine each would be).
Every round starts from empty caches (a fresh project copy, fresh workers), so the model loads on
each worker are part of the cost, as on a real cluster. Prints seconds per setting and the ratio
t(1 worker) / t(2 workers); the fastest of --rounds counts (other load on the box only adds time).
On 2 shared cores expect well under 2x: the flow, the scheduler and Prefect's server share them.

    python benchmarks/cluster_speedup.py [--rounds 1] [--chunk-size 8]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # run from anywhere

RMS = {"length-longer": {"kind": "length-longer"}, "random": {"kind": "random"},
       "similarity": {"kind": "similarity", "encoder": "embedded:all-MiniLM-L6-v2"},
       "bradley-terry": {"kind": "bradley-terry", "max_length": 128, "batch_size": 4}}


def build(root: Path, chunk_size: int) -> None:
    from tasks.core import layout
    from tasks.stages import train_rm
    from tests.test_scale import inputs, scale_project

    root.mkdir(parents=True)
    params = scale_project(root, rms=RMS, chunk_size=chunk_size)
    params["train_rm"].update(epochs=1, max_length=128, batch_size=8)
    train_rm.run(params, inputs(root), {k: str(root / v) for k, v in layout.TRAIN_RM.items()})


def timed_round(base: Path, work: Path, workers: int) -> float:
    import os

    import yaml
    from prefect import flow

    from flows.pipeline import _fanned_out
    from tests.dask_cluster import DaskCluster

    proj = work / f"proj-{workers}"
    shutil.copytree(base, proj, ignore=shutil.ignore_patterns("cache", "runs", "scores", "metrics"))
    params = yaml.safe_load((proj / "params.yaml").read_text())
    params["common"]["cache_dir"] = str(proj / "cache")
    with DaskCluster(work / f"dask-{workers}", env={"PRBENCH_TORCH_THREADS": "1"}) as cluster:
        cluster.start({f"w{i}": {} for i in range(workers)})
        params["scale"] = {**params["scale"], "task_runner": "dask", "address": cluster.address}
        (proj / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

        @flow(name="cluster-speedup")
        def score_all():
            return [s.is_completed() for s in _fanned_out("score", sorted(RMS), None)]

        cwd = os.getcwd()
        os.chdir(proj)
        try:
            start = time.perf_counter()
            ok = score_all()
            took = time.perf_counter() - start
        finally:
            os.chdir(cwd)
    assert all(ok), f"a score flow failed; logs under {work}"
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--chunk-size", type=int, default=8, help="pairs per chunk task (8: 12 chunks per RM)")
    args = ap.parse_args()
    import tests.conftest  # noqa: F401 - offline env, a throwaway PREFECT_HOME
    from prefect import flow

    with tempfile.TemporaryDirectory(prefix="prbench-speedup-") as tmp:
        tmp = Path(tmp)
        build(tmp / "base", args.chunk_size)
        flow(name="warm-up")(lambda: None)()   # Prefect's server starts here, outside the timings
        times = {1: [], 2: []}
        for r in range(args.rounds):
            for workers in (1, 2):
                times[workers].append(timed_round(tmp / "base", tmp / f"round{r}", workers))
                print(f"round {r + 1}: {workers} worker(s) {times[workers][-1]:.1f} s", flush=True)
    t1, t2 = min(times[1]), min(times[2])
    print(f"4 RMs x 3 strategies x 30 pairs, {args.chunk_size} pairs per chunk: 1 worker {t1:.1f} s, "
          f"2 workers {t2:.1f} s")
    print(f"speed-up 2 workers vs 1: {t1 / t2:.2f}x")


if __name__ == "__main__":
    main()
