"""How fast does a seq-cls RM score pairs, and does memory stay flat as the pair count grows?

One MiniLM seq-cls head (saved to a temp folder), the same pairs (built from the bundled sample:
each reference pair with 0, 2 or 5 of the user's posts as context, so lengths vary), streamed
in chunks from Parquet and scored three ways, in one process taking turns chunk by chunk; the
fastest of --rounds turns counts (load from other processes on the box only ever adds time):

  ours     SeqClsRM.score_pairs (our truncation, length-sorted batches, dynamic padding)
  invariant  the same with `batch_invariant: true` (each answer in a shape its own length fixes)
  bare     tokenizer + length-sorted, dynamically padded torch.no_grad forwards: the limit here
  release  the release's loop: fixed batch 8, pad to the longest, original order

Prints answers/s, ours/bare (target >= 0.9), ours/release (target >= 1.5), invariant/ours (its cost:
`batch_invariant` is on by default only at >= 0.9), and ours' peak RSS scoring 10x the pairs vs 1x
(target <= 1.2x; one process each, so they do not share a peak).

    python benchmarks/scoring_throughput.py [--pairs 200] [--max-length 512] [--batch-size 16]
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # run from anywhere

COLUMNS = ["question", "context", "chosen", "rejected"]


def build_pairs(n: int, path: Path, repeat: int = 1) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    from tasks.stages.ingest import ingest_from_params

    p = yaml.safe_load((ROOT / "params.yaml").read_text())["ingest"]
    res = ingest_from_params({**p, "source": "files", "path": str(ROOT / "data/sample/rewardbench")})
    questions = {q["id"]: q["question"] for q in res.questions}
    posts: dict[str, list[str]] = {}
    for row in sorted(res.profiles, key=lambda r: r["position"]):
        posts.setdefault(row["question_id"], []).append(row["text"])
    rows = [{"question": questions[x["question_id"]], "chosen": x["chosen"], "rejected": x["rejected"],
             "context": "My past posts:\n" + "\n".join(posts.get(x["question_id"], [])[:k]) if k else ""}
            for k in (0, 2, 5) for x in res.pairs]
    random.Random(0).shuffle(rows)   # mixed lengths in every chunk
    rows = (rows * (n // len(rows) + 1))[:n]
    with pq.ParquetWriter(path, pa.schema([(c, pa.string()) for c in COLUMNS])) as w:
        for _ in range(repeat):   # written in pieces too: 10x never sits in memory at once
            w.write_table(pa.Table.from_pylist(rows, schema=w.schema), row_group_size=64)


def chunks(path: str, size: int):
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=size, columns=COLUMNS):
        yield batch.to_pylist()


def make_head(folder: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from tasks.models.encoders import EMBEDDED

    minilm = EMBEDDED["all-MiniLM-L6-v2"]()
    torch.manual_seed(0)
    AutoModelForSequenceClassification.from_pretrained(minilm, num_labels=1).save_pretrained(folder)
    AutoTokenizer.from_pretrained(minilm).save_pretrained(folder)


def scorer(mode: str, model: str, max_length: int, batch_size: int):
    """A function chunk -> list of scores (2 per pair) for one of the three ways."""
    import torch

    from tasks.models.rms.base import PairInput, user_message
    from tasks.models.rms.registry import make_rm

    rm = make_rm("bench", {"kind": "seq-cls", "model": model, "max_length": max_length, "batch_size": batch_size,
                           "batch_invariant": mode == "invariant"}, None)
    tok, net = rm.tok, rm.model
    if mode in ("ours", "invariant"):
        def ours(rows):
            pairs = [PairInput("", r["question"], r["context"], r["chosen"], r["rejected"]) for r in rows]
            return [s.score for ps in rm.score_pairs(pairs) for s in (ps.chosen, ps.rejected)]
        return ours

    def texts(rows):
        return ([user_message(r["question"], r["context"]) for r in rows for _ in (0, 1)],
                [r[side] for r in rows for side in ("chosen", "rejected")])

    def forward(enc):
        with torch.no_grad():
            return net(**{k: v.to(rm.device) for k, v in enc.items()}).logits[:, 0].float().tolist()

    if mode == "bare":
        def bare(rows):
            users, answers = texts(rows)
            enc = tok(users, answers, truncation=True, max_length=max_length)
            order = sorted(range(len(users)), key=lambda i: len(enc["input_ids"][i]))
            out = [0.0] * len(users)
            for s in range(0, len(order), batch_size):
                idx = order[s:s + batch_size]
                batch = tok.pad({k: [enc[k][i] for i in idx] for k in enc}, return_tensors="pt")
                for i, v in zip(idx, forward(batch)):
                    out[i] = v
            return out
        return bare

    def release(rows):
        users, answers = texts(rows)
        out = []
        for s in range(0, len(users), 8):
            out += forward(tok(users[s:s + 8], answers[s:s + 8], padding=True, truncation=True,
                               max_length=max_length, return_tensors="pt"))
        return out
    return release


def worker(args) -> None:
    """--worker throughput: the three ways in this one process, taking turns chunk by chunk, so
    load from other processes on the box falls on all three alike. --worker rss: ours alone."""
    modes = ["ours", "invariant", "bare", "release"] if args.worker == "throughput" else ["ours"]
    scorers = {m: scorer(m, args.model, args.max_length, args.batch_size) for m in modes}
    for score in scorers.values():
        score(next(chunks(args.data, 4)))   # warm-up: first-call allocations are not throughput
    seconds, answers = dict.fromkeys(modes, 0.0), 0
    for n, rows in enumerate(chunks(args.data, args.chunk)):
        best = dict.fromkeys(modes, float("inf"))
        for r in range(args.rounds if len(modes) > 1 else 1):   # the best of a few turns: other load only adds time
            for m in modes[(n + r) % len(modes):] + modes[:(n + r) % len(modes)]:   # rotate who goes first
                start = time.perf_counter()
                got = len(scorers[m](rows))
                best[m] = min(best[m], time.perf_counter() - start)
        seconds = {m: seconds[m] + best[m] for m in modes}
        answers += got
    print(json.dumps({"answers": answers, "seconds": seconds,
                      "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run_worker(kind: str, data: Path, model: Path, args) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, "--data", str(data), "--model", str(model),
           "--max-length", str(args.max_length), "--batch-size", str(args.batch_size), "--chunk", str(args.chunk),
           "--rounds", str(args.rounds)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--max-length", type=int, default=512, help="the scorer's default for MiniLM")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--chunk", type=int, default=64, help="pairs read from Parquet at a time")
    ap.add_argument("--scale", type=int, default=10, help="the memory check scores this many times the pairs")
    ap.add_argument("--rounds", type=int, default=2, help="turns per chunk and way; the fastest counts")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    with tempfile.TemporaryDirectory(prefix="scoring-bench-") as tmp:
        tmp = Path(tmp)
        make_head(tmp / "head")
        build_pairs(args.pairs, tmp / "x1.parquet")
        build_pairs(args.pairs, tmp / "x10.parquet", repeat=args.scale)
        speed = run_worker("throughput", tmp / "x1.parquet", tmp / "head", args)
        small = run_worker("rss", tmp / "x1.parquet", tmp / "head", args)
        big = run_worker("rss", tmp / "x10.parquet", tmp / "head", args)
    rate = {m: speed["answers"] / s for m, s in speed["seconds"].items()}
    for m, s in speed["seconds"].items():
        print(f"{m:8s} {speed['answers']} answers in {s:.1f}s = {rate[m]:.1f} answers/s")
    print(f"ours/bare    = {rate['ours'] / rate['bare']:.2f}  (target >= 0.9)")
    print(f"ours/release = {rate['ours'] / rate['release']:.2f}  (target >= 1.5)")
    print(f"invariant/ours = {rate['invariant'] / rate['ours']:.2f}  (batch_invariant's cost; on by default at >= 0.9)")
    print(f"peak RSS, ours: {small['answers']} answers {small['maxrss_mb']:.0f} MB, "
          f"{big['answers']} answers {big['maxrss_mb']:.0f} MB")
    print(f"RSS {args.scale}x/1x  = {big['maxrss_mb'] / small['maxrss_mb']:.2f}  (target <= 1.2)")


if __name__ == "__main__":
    main()
