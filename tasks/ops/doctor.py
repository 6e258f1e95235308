"""`prbench doctor`: does this machine compute the bytes the committed dvc.lock holds?

It trains a few steps of the embedded Bradley-Terry RM (train_rm's own `train`, on a tiny fixed set of
pairs made here) and hashes the weights, and runs the correlation stage's arithmetic on fixed data
(resampled means, every metric, through numpy's loops, numpy's and scipy's OpenBLAS) and hashes that:
once under the pinned numerics (tasks/core/numerics.py), then under each other capability the CPU offers,
each in a fresh process (torch, numpy and OpenBLAS read their switches once, when they load). It says
which kernels each library chose. The pinned hashes are compared with the reference machines'
(docs/determinism.md). Other capabilities differing from the pinned one is expected: that is what the
pins keep out."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from tasks.core import numerics

# the capabilities torch's dispatch knows on x86-64, with the CPU flags each needs (ATen's cpu_capability)
CAPABILITIES = {"avx2": ("avx2", "fma"), "default": (), "avx512": ("avx512f", "avx512bw", "avx512vl", "avx512dq")}
SEED, STEPS_PAIRS, BATCH = 7, 16, 4
# the pinned hashes, one for every x86-64 vendor (docs/determinism.md, Golden values), for these versions: the
# weights as an AMD EPYC (AVX-512), an Intel Xeon Sapphire Rapids and an Intel Xeon Ice Lake computed them under
# MKL's COMPATIBLE branch; the statistics as an AMD EPYC Zen 3 and the Intel Xeons did
REFERENCE = {"versions": {"torch": "2.13.0+cpu", "transformers": "5.24.0", "trl": "1.12.0"},
             "sha256": "76c9faeb9f577df3a3de4df5488a6c6fd91e0a4e5e0721ac0c75d9978e8d5f9d",
             "statistics_versions": {"numpy": "2.4.6", "scipy": "1.17.1"},
             "statistics_sha256": "80324adcaaec7294ba4a37fd8b00a671db0013302d87084b66fb8bc1ace54d74"}
TOPICS = ["a sourdough starter", "a rusty bicycle chain", "a first marathon", "a noisy neighbour",
          "a tomato seedling", "a job interview", "a leaking tap", "a long-haul flight"]
TONES = ["briefly and kindly", "with every step spelled out"]


def tiny_pairs() -> list[tuple[str, str, str]]:
    """(question, context, answer) items, chosen then rejected per pair: fixed text, no randomness."""
    items = []
    for i in range(STEPS_PAIRS):
        topic, tone = TOPICS[i % len(TOPICS)], TONES[i // len(TOPICS) % len(TONES)]
        question, context = f"What should I do about {topic}?", f"I like answers written {tone}."
        items.append((question, context, f"For {topic}, here is what works, {tone}: start small and check daily."))
        items.append((question, context, f"I cannot help with {topic}; ask somebody else."))
    return items


def weights_hash(capability: str) -> dict:
    """Train the tiny RM under the numerics already pinned in this process; the weights' sha256."""
    import tempfile
    from pathlib import Path

    import torch
    from transformers import AutoTokenizer

    from tasks.core.artifacts import file_hash
    from tasks.models.encoders import resolve_model
    from tasks.models.rms.encode import encode_many
    from tasks.stages.train_rm import train

    start = time.perf_counter()
    path, _ = resolve_model("embedded:all-MiniLM-L6-v2")
    tok = AutoTokenizer.from_pretrained(path)
    encoded = encode_many(tok, tiny_pairs(), 128, getattr(tok, "chat_template", None))
    with tempfile.TemporaryDirectory(prefix="prbench-doctor-") as folder:
        train(path, tok, encoded, {"epochs": 1, "learning_rate": 5e-5, "batch_size": BATCH}, SEED, Path(folder))
        digest = file_hash(Path(folder) / "model.safetensors")
    statistics = statistics_hash()
    return {"capability": capability, "torch": torch.backends.cpu.get_cpu_capability(),
            "onednn": os.environ.get("ONEDNN_MAX_CPU_ISA"), **kernels(), "sha256": digest, "statistics": statistics,
            "seconds": round(time.perf_counter() - start, 1)}


def statistics_hash() -> str:
    """The correlation stage's arithmetic on fixed seeded data, with ties as real runs have them: resampled
    means (numpy's OpenBLAS), every metric over the resamples (numpy's loops, scipy), a matrix product
    through scipy's own OpenBLAS, numpy's log, exp and tanh; the sha256 of all of their bytes."""
    import hashlib

    import numpy as np
    from scipy.linalg import blas

    from tasks.core.determinism import stable_rng
    from tasks.downstream.correlation import resample

    rng = stable_rng(SEED, "doctor", "statistics")
    scores = rng.random((12, 40))
    scores[11] = scores[0]                                           # two RMs that tie on every question
    draws = resample.draw(rng, 40, 12, 400)
    means = draws.weights @ scores.T / draws.weights.sum(axis=1, keepdims=True)
    down = (draws.weights @ np.sqrt(scores).T) / 40
    metrics = resample.metric_draws(means, down, [f"rm{i:02d}" for i in range(12)], 0.9, draws.rm_index)
    parts = [means, down, *metrics.values(), blas.dgemm(1.0, scores, scores.T),   # scipy's own OpenBLAS
             np.log(1 + scores), np.exp(-scores), np.tanh(scores)]   # numpy's SIMD loops (X86_V3 / X86_V4 / SVML)
    return hashlib.sha256(b"".join(np.ascontiguousarray(a, dtype=float).tobytes() for a in parts)).hexdigest()


def kernels() -> dict:
    """Which kernels numpy and each OpenBLAS chose in this process (numerics.numpy_kernels)."""
    got = numerics.numpy_kernels()
    return {"numpy": " ".join(got["numpy_dispatch"] or ()) or "baseline",
            "openblas": {b["library"]: b["core"] for b in got["openblas"]}}


def offered(flags: set) -> list[str]:
    """The capabilities to try, the pinned one first; all of them where the CPU's flags are unknown."""
    return [c for c, need in CAPABILITIES.items() if not flags or all(f in flags for f in need)]


def in_processes(capabilities: list[str], timeout: float) -> list[dict]:
    """One training per capability, each in a fresh process (its own pins, set before torch loads), all at
    once: the thread count is pinned, so sharing the cores changes the time, never the bytes."""
    env = {**os.environ, "TRANSFORMERS_VERBOSITY": "error"}
    procs = [subprocess.Popen([sys.executable, "-m", "tasks.ops.doctor", c], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for c in capabilities]
    rows = []
    for capability, proc in zip(capabilities, procs):
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            stderr += f"\ntimed out after {timeout:.0f} s"
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        rows.append(json.loads(lines[-1]) if proc.returncode == 0 and lines else
                    {"capability": capability, "error": (stderr.strip().splitlines() or ["no output"])[-1]})
    return rows


def problems(rows: list[dict], line: str | None, versions: dict) -> list[str]:
    """What is really wrong (each one line): not whether other capabilities differ, which they may."""
    pinned = rows[0]
    out = [line] if line else []
    if "error" in pinned:
        return [*out, f"the pinned training failed: {pinned['error']}"]
    if pinned["torch"] != numerics.CAPABILITY.upper():
        out.append(f"the pins did not take: torch reports {pinned['torch']} under ATEN_CPU_CAPABILITY="
                   f"{numerics.CAPABILITY} (docs/determinism.md)")
    core = numerics.OPENBLAS_CORE[numerics.CAPABILITY]
    if not line and pinned.get("numpy") != numerics.NUMPY_PINNED:   # below the floor numpy runs what it can
        out.append(f"the pins did not take: numpy runs {pinned.get('numpy')} loops, not {numerics.NUMPY_PINNED} "
                   "(NPY_DISABLE_CPU_FEATURES; docs/determinism.md)")
    for lib, got in sorted((pinned.get("openblas") or {}).items()):
        if not line and got != core:
            out.append(f"the pins did not take: {lib}'s OpenBLAS runs {got} kernels, not {core} (OPENBLAS_CORETYPE; "
                       "docs/determinism.md)")
    for what, ref_versions, ref, got in (
            ("weights", REFERENCE["versions"], REFERENCE["sha256"], pinned["sha256"]),
            ("statistics", REFERENCE["statistics_versions"], REFERENCE["statistics_sha256"], pinned.get("statistics"))):
        if all(versions.get(k) == v for k, v in ref_versions.items()) and got != ref:
            out.append(f"the pinned {what} differ from the reference machine's ({str(got)[:16]} vs {ref[:16]}) with "
                       "the same library versions: this machine will not reproduce the committed dvc.lock; please "
                       "report its CPU and this table")
    return out


def table(rows: list[dict]) -> str:
    """One row per capability: what each library chose, the two hashes, and whether they agree with the pinned."""
    pinned = rows[0]
    lines = [f"{'capability':<16}{'torch':<9}{'oneDNN':<8}{'numpy':<9}{'OpenBLAS numpy/scipy':<22}"
             f"{'weights sha256':<18}{'statistics':<18}{'seconds':>8}  vs pinned"]
    for r in rows:
        name = r["capability"] + (" (pinned)" if r is rows[0] else "")
        if "error" in r:
            lines.append(f"{name:<16}failed: {r['error']}")
            continue
        blas = "/".join(r.get("openblas", {}).get(lib) or "-" for lib in ("numpy", "scipy"))
        differ = [k for k in ("weights", "statistics") if r.get(KEYS[k]) != pinned.get(KEYS[k])]
        verdict = "-" if r is rows[0] else f"{' and '.join(differ)} differ" if differ else "agrees"
        lines.append(f"{name:<16}{r['torch']:<9}{r['onednn'] or '-':<8}{r.get('numpy') or '-':<9}{blas:<22}"
                     f"{r['sha256'][:16]:<18}{str(r.get('statistics'))[:16]:<18}{r['seconds']:>8}  {verdict}")
    return "\n".join(lines)


KEYS = {"weights": "sha256", "statistics": "statistics"}


def main(timeout: float = 300, out=sys.stdout) -> int:
    cpu = numerics.cpuinfo()
    line = numerics.below_floor(cpu["flags"], model=cpu["model"])
    wanted = {*REFERENCE["versions"], *REFERENCE["statistics_versions"]}
    versions = {k: v for k, v in numerics.libraries().items() if k in wanted}
    print(f"prbench doctor: {cpu['model'] or 'unknown CPU'} ({', '.join(numerics.machine()['flags']) or 'flags unknown'}); "
          + ", ".join(f"{k} {versions.get(k)}" for k in ("torch", "transformers", "trl", "numpy", "scipy")),
          file=out, flush=True)
    rows = in_processes(offered(cpu["flags"]), timeout)
    print(table(rows), file=out)
    if "sha256" in rows[0]:
        for what, key, ref in (("weights", "sha256", REFERENCE["sha256"]),
                               ("statistics", "statistics", REFERENCE["statistics_sha256"])):
            print(f"reference machine (docs/determinism.md), {what}: {ref[:16]}: "
                  f"{'agrees' if rows[0].get(key) == ref else 'differs'}", file=out)
    found = problems(rows, line, versions)
    for p in found:
        print(f"problem: {p}", file=out)
    if not found:
        print("prbench doctor: the pinned numerics work here", file=out)
    return 1 if found else 0


def add_parser(subparsers):
    """Register `prbench doctor` on the CLI's subparsers."""
    subparsers.add_parser("doctor", help="check this machine computes the committed bytes: a tiny RM training and the "
                          "correlation statistics under the pinned numerics and under each other CPU capability, "
                          "hashed, with the kernels torch, numpy and OpenBLAS chose (docs/determinism.md)"
                          ).set_defaults(func=lambda args: main())


if __name__ == "__main__":   # one capability, in a fresh process: torch, numpy and OpenBLAS read their switches once
    numerics.pin(os.environ.get("PRBENCH_TORCH_THREADS") or 2, capability=sys.argv[1])
    print(json.dumps(weights_hash(sys.argv[1])))
