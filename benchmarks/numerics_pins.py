"""What each numerics pin costs (docs/determinism.md): the same work in fresh processes under this CPU's
own dispatch and under each pin alone, rounds interleaved so load hits every variant alike; the fastest
round of each, as a ratio to the native one. Each child times only its work, not its imports: wall
seconds and CPU seconds (all its threads), the second far less sensitive to a shared box's load.

  statistics  the correlation stage's arithmetic on 40 RMs x 24 questions (tests/test_cpu_emulation.py's
              kind of data): correlate and the paired comparison, 500 resamples, 199 permutations --
              numpy's loops, numpy's OpenBLAS (resampled means), scipy
  gemm        numpy's matmul of 384 x 384 float64 matrices, 40 times: OpenBLAS's core at its most
  training    `prbench doctor`'s 4-step Bradley-Terry training (torch: ATen, oneDNN, MKL)
  rounding    `statistics` under every pin, with the rounding rule for decisions (settled) and without

Variants (the child pins nothing itself; OMP/MKL/OpenBLAS/torch threads fixed at 1 in all):
  native   nothing set: what this CPU's libraries pick
  numpy    NPY_DISABLE_CPU_FEATURES only          openblas  OPENBLAS_CORETYPE only
  torch    ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA only       all  every pin, as a run has them
  older    no pin: the kernels of a CPU without AVX2 (numpy's baseline loops, OpenBLAS Sandybridge,
           ATen default), to show the measurement sees a kernel change where there is one

On a CPU with nothing above AVX2 the pins select what the libraries pick anyway, and the ratios are 1
within noise; the cost of leaving AVX-512 unused shows only on an AVX-512 machine (run it there).

    python benchmarks/numerics_pins.py [--rounds 5] [--only statistics,gemm,training]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# one thread: a kernel's cost does not hinge on it, and CPU seconds then hold up on a busy shared box
THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PRBENCH_TORCH_THREADS": "1"}
WORKLOADS = ("statistics", "gemm", "training")


def variants() -> dict[str, dict]:
    from tasks.core import numerics

    pins = {k: v for k, v in numerics.wanted("1", flags=numerics.cpuinfo()["flags"]).items()
            if k not in THREADS}
    pick = lambda *keys: {k: pins[k] for k in keys if k in pins}  # noqa: E731
    older = {"NPY_DISABLE_CPU_FEATURES": " ".join(numerics.NUMPY_ABOVE["default"]), "OPENBLAS_CORETYPE": "Sandybridge",
             "ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "DNNL_MAX_CPU_ISA": "SSE41"}
    return {"native": {}, "numpy": pick("NPY_DISABLE_CPU_FEATURES"), "openblas": pick("OPENBLAS_CORETYPE"),
            "torch": pick("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKL_CBWR"), "all": pins,
            "older": older}


def statistics(settle: bool = True) -> float:
    """Seconds of the correlation arithmetic on fixed data (seeded)."""
    import numpy as np

    from tasks.downstream.correlation import batch, metrics, paired, primary, resample
    from tasks.downstream.correlation.sides import Side

    if not settle:   # the rounding rule off: every module's settled() passes values through
        for module in (batch, metrics, primary, resample):
            module.settled = lambda x: np.asarray(x) + 0.0
    rng = np.random.default_rng(45)
    rms, questions = [f"rm-{i:02d}" for i in range(40)], [f"q{i:02d}" for i in range(24)]
    sides = {}
    for name, kind in (("personalised", "credit"), ("generic", "credit"), ("bon", "score")):
        side = Side(name, "bench")
        for rm in rms:
            mu = rng.uniform(0.2, 0.8)
            values = (rng.random(len(questions)) < mu).astype(float) if kind == "credit" else \
                np.clip(mu + rng.normal(0, 0.15, len(questions)), 0, 1)
            side.per_question[rm] = dict(zip(questions, values.tolist()))
        side.domains = {q: ("Art", "Food", "Travel")[i % 3] for i, q in enumerate(questions)}
        sides[name] = side
    p = {"rbo_p": 0.9, "bootstrap": 500, "permutations": 199, "ci": 0.95}
    start = time.perf_counter()
    paired.correlate(sides["personalised"], sides["bon"], rms, "accuracy", p, 2604)
    for predictor in ("accuracy", "worst_domain"):
        paired.compare(sides["personalised"], sides["generic"], sides["bon"], rms, predictor, p, 2604)
    return time.perf_counter() - start


def gemm() -> float:
    import numpy as np

    a = np.random.default_rng(1).random((384, 384))
    start = time.perf_counter()
    for _ in range(40):
        a = (a @ a) / 384.0
    return time.perf_counter() - start


def training() -> float:
    from tasks.ops.doctor import weights_hash

    start = time.perf_counter()
    weights_hash("benchmark")
    return time.perf_counter() - start


def child(workload: str) -> None:
    cpu = time.process_time()
    seconds = globals()[workload]()
    print(json.dumps({"seconds": seconds, "cpu": time.process_time() - cpu}))


def run_child(workload: str, env_extra: dict) -> dict:
    keep = {k: v for k, v in os.environ.items() if k not in (*variants()["all"], "PRBENCH_NUMERICS_REPLACED")}
    env = {**keep, **THREADS, **env_extra, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_VERBOSITY": "error", "OMP_WAIT_POLICY": "PASSIVE"}
    done = subprocess.run([sys.executable, __file__, "--child", workload], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    if done.returncode:
        sys.exit(done.stdout[-2000:] + done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    from tasks.core import numerics

    cpu = numerics.cpuinfo()
    print(f"CPU: {cpu['model']} ({', '.join(numerics.machine()['flags'])}); load {os.getloadavg()[0]:.1f} at start")
    chosen = variants()
    for workload in args.only.split(","):
        names = [n for n in chosen if workload == "training" and n in ("native", "torch", "all", "older")
                 or workload != "training" and n != "torch"]
        best = {n: {"seconds": float("inf"), "cpu": float("inf")} for n in names}
        for _ in range(args.rounds if workload != "training" else min(args.rounds, 3)):   # training: ~20 s a round
            for n in names:
                got = run_child(workload, chosen[n])
                best[n] = {k: min(best[n][k], got[k]) for k in best[n]}
        report(workload, best)
    rule = {"settled": {"seconds": float("inf"), "cpu": float("inf")}, "raw": {"seconds": float("inf"), "cpu": float("inf")}}
    for _ in range(args.rounds):   # interleaved: the rounding rule on, then off, under every pin
        for n, workload in (("settled", "statistics"), ("raw", "statistics_unsettled")):
            got = run_child(workload, chosen["all"])
            rule[n] = {k: min(rule[n][k], got[k]) for k in rule[n]}
    report("rounding", rule)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


def report(workload: str, best: dict) -> None:
    """One line: per variant its best wall and CPU seconds, and both as a ratio to the first variant."""
    first = next(iter(best.values()))
    cells = [f"{n} {b['seconds']:.2f} s / {b['cpu']:.2f} cpu-s" + ("" if b is first else
             f" ({b['seconds'] / first['seconds']:.2f}x / {b['cpu'] / first['cpu']:.2f}x)") for n, b in best.items()]
    print(f"{workload:<11}" + "  ".join(cells), flush=True)


def statistics_unsettled() -> float:
    return statistics(settle=False)


if __name__ == "__main__":
    main()
