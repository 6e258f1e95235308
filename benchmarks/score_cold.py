"""`prbench score` of a small seq-cls RM, cold, and how close its scoring comes to a bare forward.

A MiniLM seq-cls head (22M parameters, saved to a temp folder) scores the bundled released-layout
sample: the first --pairs test pairs (scoring.per_domain_limit off) under none, raw_profile and oracle.

  cold      `python -m flows.cli score ...` as a subprocess in an empty folder: its own params copy and
            empty caches (ingest, embeddings), process start and model load included (goal <= 30 s)
  warm      the same command again (ingest and embeddings cached)
  scoring   in one process: tasks.ops.quick_score.score_all (encoding, truncation, length-sorted batches,
            forward) vs a bare torch.no_grad() forward over the same token batches, encoded beforehand
            (goal: scoring <= 2x bare); the fastest of --rounds each, since other load only adds time

    python benchmarks/score_cold.py [--pairs 24] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "data/sample/rewardbench"
STRATEGIES = "none,raw_profile,oracle"


def cli_seconds(tmp: Path, head: Path, pairs: int, out: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    cmd = [sys.executable, "-m", "flows.cli", "score", "--model", str(head), "--name", "minilm-head", "--data", str(DATA),
           "--strategy", STRATEGIES, "--limit", str(pairs), "--out", out]
    start, cpu = time.perf_counter(), os.times()
    proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    secs, after = time.perf_counter() - start, os.times()
    if proc.returncode:
        sys.exit(proc.stdout[-2000:] + proc.stderr[-3000:])
    used = after.children_user + after.children_system - cpu.children_user - cpu.children_system
    return secs, used, proc.stdout


def in_process(tmp: Path, head: Path, pairs_n: int, rounds: int) -> tuple[float, float, int]:
    """(best scoring seconds, best bare seconds, answers) over the same inputs and token batches."""
    os.chdir(tmp)
    import torch

    from tasks.models import chunks
    from tasks.ops.params import load_params
    from tasks.ops.quick_score import _pairs_from_file, profile_texts, resolve_data, score_all, select_pairs
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm
    from tasks.models.rms.encode import encode_many
    from tasks.models.rms.seq_cls import length_batches
    from tasks.core.artifacts import read_table
    from tasks.models.strategies import contexts as build_contexts, pair_inputs

    torch.set_num_threads(int(os.environ.get("PRBENCH_TORCH_THREADS", "2")))
    params = load_params(str(tmp / "params.yaml"))
    res = Resources(params)
    rm = make_rm("minilm-head", {"kind": "seq-cls", "model": str(head)}, res)
    src = resolve_data(str(DATA), params)
    questions = {q["id"]: q for q in read_table(src["questions"], "questions").to_pylist()}
    pairs = select_pairs(_pairs_from_file(Path(src["pairs"])), questions, params, pairs_n)
    profile = profile_texts(src, params, res, {p["question_id"] for p in pairs})
    ctx = {s: build_contexts(s, questions, profile, {}) for s in STRATEGIES.split(",")}
    items = [(x.question, x.context, a) for c in ctx.values() for x in pair_inputs(pairs, questions, c)
             for a in (x.chosen, x.rejected)]
    encs = encode_many(rm.tok, items, rm.max_length, rm.template)
    batches = []
    for idx in length_batches([len(e.ids) for e in encs], rm.batch_size):
        width = max(len(encs[i].ids) for i in idx)
        ids = torch.tensor([encs[i].ids + [rm.pad_id] * (width - len(encs[i].ids)) for i in idx])
        mask = torch.tensor([[1] * len(encs[i].ids) + [0] * (width - len(encs[i].ids)) for i in idx])
        extra = ({"token_type_ids": torch.tensor([encs[i].token_types + [0] * (width - len(encs[i].ids)) for i in idx])}
                 if encs[0].token_types is not None else {})
        batches.append({"input_ids": ids, "attention_mask": mask, **extra})
    chunk = chunks.chunk_size(params)
    score_all(rm, pairs[:2], questions, ctx, chunk)   # warm-up: first-call allocations are not throughput
    ours = bare = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        score_all(rm, pairs, questions, ctx, chunk)
        ours = min(ours, time.perf_counter() - start)
        start = time.perf_counter()
        with torch.no_grad():
            for b in batches:
                rm.model(**b).logits
        bare = min(bare, time.perf_counter() - start)
    return ours, bare, len(items)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    import faulthandler

    faulthandler.dump_traceback_later(240, exit=False)   # where it waits, should it hang on a loaded box
    from benchmarks.scoring_throughput import make_head

    with tempfile.TemporaryDirectory(prefix="score-cold-") as tmp:
        tmp = Path(tmp)
        make_head(tmp / "head")
        params = yaml.safe_load((ROOT / "params.yaml").read_text())
        params["scoring"]["per_domain_limit"] = None   # --limit picks the pairs
        (tmp / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        cold, cold_cpu, printed = cli_seconds(tmp, tmp / "head", args.pairs, "out-cold")
        print(f"cold prbench score: {cold:.1f} s ({cold_cpu:.1f} CPU s)", flush=True)
        warm, warm_cpu, _ = cli_seconds(tmp, tmp / "head", args.pairs, "out-warm")
        print(f"warm prbench score: {warm:.1f} s ({warm_cpu:.1f} CPU s)", flush=True)
        ours, bare, answers = in_process(tmp, tmp / "head", args.pairs, args.rounds)
    print(printed.strip())
    print(f"load average now {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"prbench score, {args.pairs} pairs x 3 strategies: cold {cold:.1f} s wall, {cold_cpu:.1f} CPU s "
          f"(goal <= 30 s on 2 idle cores), warm {warm:.1f} s wall, {warm_cpu:.1f} CPU s")
    print(f"scoring {answers} answers: {ours:.2f} s; bare torch.no_grad() forward over the same token batches: "
          f"{bare:.2f} s; scoring/bare = {ours / bare:.2f} (goal <= 2)")


if __name__ == "__main__":
    main()
