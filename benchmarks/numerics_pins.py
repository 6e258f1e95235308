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

--mkl: what MKL's COMPATIBLE branch costs the torch work of a run, every other pin on, the run's thread count (2):
  training   doctor's training, as above
  embedding  40 profile posts through MiniLM, each alone (as the encoder does on CPU)
  scoring    24 (context, answer) texts through the MiniLM sequence classifier, batches of 8 (score@bradley-terry)
  causal     SmolLM2-135M in torch (rl_train's policy): 24 greedy tokens for 2 prompts, then a forward and
             backward pass over 2 x 96 tokens
Variants: own (MKL's own dispatch: what an unpinned AMD box runs), avx2-strict (the Intel pin before
COMPATIBLE), compatible (the pin).

    python benchmarks/numerics_pins.py [--rounds 5] [--only statistics,gemm,training]
    python benchmarks/numerics_pins.py --mkl [--rounds 3] [--only training,embedding,scoring,causal]
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
MKL_WORKLOADS = ("training", "embedding", "scoring", "causal")
RUN_THREADS = {k: "2" for k in THREADS}   # the MKL comparison at a run's thread count (common.torch_threads)


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


def _profile_texts(n: int) -> list[str]:
    import json as _json

    rows = _json.loads((ROOT / "data/sample/lamp_qa/Art_and_Entertainment_test.json").read_text())
    return [it["text"] for r in rows for it in r["profile"]][:n]


def embedding() -> float:
    from tasks.models.encoders import Encoder

    enc = Encoder("embedded:all-MiniLM-L6-v2")
    enc.encode(["warm up"])   # the weights load outside the timing
    start = time.perf_counter()
    enc.encode(_profile_texts(40))
    return time.perf_counter() - start


def scoring() -> float:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from tasks.models.encoders import resolve_model

    path, _ = resolve_model("embedded:all-MiniLM-L6-v2")
    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    texts = _profile_texts(24)
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(texts), 8):
            model(**tok(texts[i:i + 8], padding=True, truncation=True, max_length=512, return_tensors="pt"))
    return time.perf_counter() - start


def causal() -> float:
    import tempfile as _tempfile

    import torch

    from tasks.downstream.rl.policy import base_folder, load_policy

    with _tempfile.TemporaryDirectory() as cache:
        folder, kwargs = base_folder({"model": "embedded:smollm2-135m"}, cache)
        from transformers import AutoTokenizer

        tok, lm = AutoTokenizer.from_pretrained(folder), load_policy(folder, kwargs)
        prompts = tok(["What should I cook tonight?", "How do I fix a bike chain?"], return_tensors="pt", padding=True)
        start = time.perf_counter()
        with torch.no_grad():
            lm.generate(**prompts, max_new_tokens=24, do_sample=False, pad_token_id=tok.eos_token_id)
        ids = torch.randint(0, lm.config.vocab_size, (2, 96), generator=torch.Generator().manual_seed(1))
        lm(input_ids=ids, labels=ids).loss.backward()
        return time.perf_counter() - start


def child(workload: str) -> None:
    cpu = time.process_time()
    seconds = globals()[workload]()
    print(json.dumps({"seconds": seconds, "cpu": time.process_time() - cpu}))


def run_child(workload: str, env_extra: dict, threads: dict = THREADS) -> dict:
    keep = {k: v for k, v in os.environ.items() if k not in (*variants()["all"], "PRBENCH_NUMERICS_REPLACED")}
    env = {**keep, **threads, **env_extra, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_VERBOSITY": "error", "OMP_WAIT_POLICY": "PASSIVE"}
    if env_extra.get("MKL_CBWR") is None:
        env.pop("MKL_CBWR", None)   # MKL's own dispatch
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
    ap.add_argument("--mkl", action="store_true", help="MKL's branches on the torch work of a run")
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    if args.mkl:
        return mkl(args.rounds, args.only.split(",") if args.only != ",".join(WORKLOADS) else list(MKL_WORKLOADS))
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


def mkl(rounds: int, workloads: list[str]) -> None:
    """Each torch workload under MKL's own dispatch, the old Intel pin and the COMPATIBLE pin; rounds interleaved."""
    from tasks.core import numerics

    cpu = numerics.cpuinfo()
    print(f"CPU: {cpu['model']} ({cpu['vendor']}); load {os.getloadavg()[0]:.1f} at start; {RUN_THREADS['MKL_NUM_THREADS']} "
          "threads")
    pins = variants()["all"]
    branches = {"own": {**pins, "MKL_CBWR": None}, "avx2-strict": {**pins, "MKL_CBWR": "AVX2,STRICT"},
                "compatible": {**pins, "MKL_CBWR": "COMPATIBLE"}}
    for workload in workloads:
        best = {n: {"seconds": float("inf"), "cpu": float("inf")} for n in branches}
        for _ in range(rounds):
            for n, env in branches.items():
                got = run_child(workload, {k: v for k, v in env.items()}, RUN_THREADS)
                best[n] = {k: min(best[n][k], got[k]) for k in best[n]}
        report(workload, best)
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
