"""`prbench doctor`: does this machine compute the bytes the committed dvc.lock holds?

It trains a few steps of the embedded Bradley-Terry RM (train_rm's own `train`, on a tiny fixed set of
pairs made here) and hashes the weights: once under the pinned numerics (tasks/core/numerics.py), then
under each other ATen capability the CPU offers, each in a fresh process (torch reads the capability
once). The pinned hash is compared with the reference machine's (docs/determinism.md). Other
capabilities differing from the pinned one is expected: that is what the pins keep out."""
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
# the pinned hash on the reference machine (an AMD EPYC with AVX-512; docs/determinism.md), for these versions
REFERENCE = {"versions": {"torch": "2.13.0+cpu", "transformers": "5.24.0", "trl": "1.12.0"},
             "sha256": "f20ed1ba5082325c406bac5997c0fe3ab834bc20342877186ef528b1480d38bc"}
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
    return {"capability": capability, "torch": torch.backends.cpu.get_cpu_capability(),
            "onednn": os.environ.get("ONEDNN_MAX_CPU_ISA"), "sha256": digest,
            "seconds": round(time.perf_counter() - start, 1)}


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
    same = all(versions.get(k) == v for k, v in REFERENCE["versions"].items())
    if same and pinned["sha256"] != REFERENCE["sha256"]:
        out.append(f"the pinned weights differ from the reference machine's ({pinned['sha256'][:16]} vs "
                   f"{REFERENCE['sha256'][:16]}) with the same library versions: this machine will not reproduce "
                   "the committed dvc.lock; please report its CPU and this table")
    return out


def table(rows: list[dict]) -> str:
    pinned = rows[0].get("sha256")
    lines = [f"{'capability':<16}{'torch reports':<15}{'oneDNN ISA':<13}{'weights sha256':<18}{'seconds':>8}  vs pinned"]
    for r in rows:
        name = r["capability"] + (" (pinned)" if r is rows[0] else "")
        if "error" in r:
            lines.append(f"{name:<16}failed: {r['error']}")
            continue
        verdict = "-" if r is rows[0] else "agrees" if r["sha256"] == pinned else "differs"
        lines.append(f"{name:<16}{r['torch']:<15}{r['onednn'] or '-':<13}{r['sha256'][:16]:<18}{r['seconds']:>8}  {verdict}")
    return "\n".join(lines)


def main(timeout: float = 300, out=sys.stdout) -> int:
    cpu = numerics.cpuinfo()
    line = numerics.below_floor(cpu["flags"], model=cpu["model"])
    versions = {k: v for k, v in numerics.libraries().items() if k in REFERENCE["versions"]}
    print(f"prbench doctor: {cpu['model'] or 'unknown CPU'} ({', '.join(numerics.machine()['flags']) or 'flags unknown'}); "
          f"torch {versions.get('torch')}, transformers {versions.get('transformers')}, trl {versions.get('trl')}",
          file=out, flush=True)
    rows = in_processes(offered(cpu["flags"]), timeout)
    print(table(rows), file=out)
    if "sha256" in rows[0]:
        ref = REFERENCE["sha256"]
        print(f"reference machine (docs/determinism.md): {ref[:16]}: "
              f"{'agrees' if rows[0]['sha256'] == ref else 'differs'}", file=out)
    found = problems(rows, line, versions)
    for p in found:
        print(f"problem: {p}", file=out)
    if not found:
        print("prbench doctor: the pinned numerics work here", file=out)
    return 1 if found else 0


def add_parser(subparsers):
    """Register `prbench doctor` on the CLI's subparsers."""
    subparsers.add_parser("doctor", help="check this machine computes the committed bytes: a tiny RM training under "
                          "the pinned numerics and under each other CPU capability, hashed (docs/determinism.md)"
                          ).set_defaults(func=lambda args: main())


if __name__ == "__main__":   # one training under the capability named (in a fresh process: torch reads it once)
    numerics.pin(os.environ.get("PRBENCH_TORCH_THREADS") or 2, capability=sys.argv[1])
    print(json.dumps(weights_hash(sys.argv[1])))
