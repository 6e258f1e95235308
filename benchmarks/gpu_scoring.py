"""The seq-cls scorer on a lent GPU, in one run of at most ~5 minutes (issue 48): speed and batch invariance.

A Llama-architecture seq-cls RM of a real size (~820M parameters, random weights, built from a config: no
download) with a word-level tokenizer and a chat template, on synthetic pairs whose contexts hold 0, 2, 5 or
10 "posts" (so lengths vary). Measured:

  speed      ours (SeqClsRM, length-sorted batches), ours with batch_invariant, a bare length-sorted
             inference_mode loop, the peers' loop (fixed batch 8, input order, padded to the longest):
             answers/s and ours/bare (target >= 0.9), invariant/ours (its cost), ours/peers
  repeat     ours twice: identical bits
  batches    batch sizes 1, 4, 16, 64, invariant off and on: scores that differ from batch 1, the largest
             move (absolute and in ulps of the score), decisions flipped (target with invariant: 0 moved)
  dtypes     bf16 against fp32 on the same pairs: decisions that differ, and the decisions within each
             dtype's resolution (tasks/core/precision.py)

Prints the ratios and writes JSON (--out). On CPU (or --smoke) a tiny config and a few pairs: seconds, so a
test runs it and it cannot rot between GPUs. Needs torch and transformers only (plus prbench's own modules).

    python benchmarks/gpu_scoring.py [--smoke] [--answers 4000] [--out gpu_scoring.json]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # run from anywhere

TEMPLATE = ("{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}")
WORDS = [f"w{i}" for i in range(2000)]
REAL = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16, num_attention_heads=16,
            num_key_value_heads=8, vocab_size=32000)            # ~820M parameters
SMOKE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=2100)


def build(folder: Path, smoke: bool) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForSequenceClassification, PreTrainedTokenizerFast

    specials = ["<unk>", "<pad>", "<|im_start|>", "<|im_end|>", "user", "assistant"]
    core = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(specials + WORDS)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>",
                                  bos_token="<|im_start|>", eos_token="<|im_end|>")
    tok.chat_template = TEMPLATE
    torch.manual_seed(0)
    config = LlamaConfig(**(SMOKE if smoke else REAL), num_labels=1, pad_token_id=1, bos_token_id=2, eos_token_id=3,
                         max_position_embeddings=4096)
    LlamaForSequenceClassification(config).to(torch.bfloat16).save_pretrained(folder)
    tok.save_pretrained(folder)


def answers(n_pairs: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """(question, context, answer) items, chosen then rejected of each pair under the same context."""
    rng = random.Random(seed)
    text = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))  # noqa: E731
    out = []
    for i in range(n_pairs):
        q, ctx = text(rng.randint(8, 30)), "\n".join(text(rng.randint(20, 80)) for _ in range((0, 2, 5, 10)[i % 4]))
        out += [(q, ctx, text(rng.randint(20, 200))), (q, ctx, text(rng.randint(20, 200)))]
    return out


def load(folder: Path, dtype: str, invariant: bool, batch_size: int = 16):
    from tasks.models.rms import seq_cls

    weights_hash, seq_cls._weights_hash = seq_cls._weights_hash, lambda model: "bench"   # no pyarrow on the GPU image
    try:
        return seq_cls.SeqClsRM("bench", {"kind": "seq-cls", "model": str(folder), "dtype": dtype, "max_length": 2048,
                                          "batch_size": batch_size, "batch_invariant": invariant})
    finally:   # the identity is hashed once, at load: put the real hash back for whoever imports seq_cls next
        seq_cls._weights_hash = weights_hash


def loops(rm):
    """The bare loop and the peers' loop over the same rendered texts (no truncation needed: all fit)."""
    import torch

    def texts(items):
        return [rm.tok.apply_chat_template([{"role": "user", "content": f"{q}\n\n{c}" if c else q},
                                            {"role": "assistant", "content": a}], tokenize=False) for q, c, a in items]

    def forward(batch):
        with torch.inference_mode():
            return rm.model(**{k: v.to(rm.device) for k, v in batch.items()}).logits[:, 0].float().tolist()

    def bare(items, bs=16):
        enc = rm.tok(texts(items), add_special_tokens=False)
        order = sorted(range(len(items)), key=lambda i: len(enc["input_ids"][i]))
        out = [0.0] * len(items)
        for s in range(0, len(order), bs):
            idx = order[s:s + bs]
            batch = rm.tok.pad({k: [enc[k][i] for i in idx] for k in ("input_ids", "attention_mask")},
                               return_tensors="pt")
            for i, v in zip(idx, forward(batch)):
                out[i] = v
        return out

    def peers(items):
        t, out = texts(items), []
        for s in range(0, len(t), 8):
            out += forward(rm.tok(t[s:s + 8], padding=True, add_special_tokens=False, return_tensors="pt"))
        return out
    return bare, peers


def timed(fn, items) -> tuple[list[float], float]:
    import torch

    fn(items[:32])   # warm-up: kernels chosen, allocator grown
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn(items)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, len(items) / (time.perf_counter() - start)


def ulps(a: float, b: float, dtype: str) -> float:
    from tasks.core.precision import MANTISSA_BITS

    m = max(abs(a), abs(b))
    return abs(a - b) / 2.0 ** ((math.frexp(m)[1] - 1 if m else -126) - MANTISSA_BITS[dtype])


def decisions(scores: list[float]) -> list[bool]:
    return [c > r for c, r in zip(scores[0::2], scores[1::2])]


def batch_check(folder, items, invariant: bool, dtype: str) -> dict:
    rm = load(folder, dtype, invariant)
    runs = {}
    for bs in (1, 4, 16, 64):
        rm.batch_size = bs
        runs[bs] = [s.score for s in rm.score_answers(items)]
    base, out = runs[1], {}
    for bs in (4, 16, 64):
        moved = [(a, b) for a, b in zip(base, runs[bs]) if a != b]
        out[f"1_vs_{bs}"] = {"scores_moved": len(moved), "max_abs": max((abs(a - b) for a, b in moved), default=0.0),
                             "max_ulps": max((ulps(a, b, dtype) for a, b in moved), default=0.0),
                             "decisions_flipped": sum(x != y for x, y in zip(decisions(base), decisions(runs[bs])))}
    out["bitwise_equal"] = all(v["scores_moved"] == 0 for v in out.values())
    return out


def main(argv=None) -> dict:
    import torch

    from tasks.core import precision

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="a tiny config and a few pairs (automatic without a GPU)")
    ap.add_argument("--answers", type=int, default=4000, help="answers timed per way (GPU)")
    ap.add_argument("--check", type=int, default=512, help="answers in the batch and dtype checks (GPU)")
    ap.add_argument("--out", default="gpu_scoring.json")
    args = ap.parse_args(argv)
    smoke = args.smoke or not torch.cuda.is_available()
    n_time, n_check = (48, 32) if smoke else (args.answers, args.check)
    result: dict = {"device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu", "smoke": smoke,
                    "torch": torch.__version__, "params": None}
    with tempfile.TemporaryDirectory(prefix="gpu-scoring-") as tmp:
        folder = Path(tmp) / "rm"
        build(folder, smoke)
        ours = load(folder, "auto", False)
        dtype = str(ours.dtype).removeprefix("torch.")
        result.update(params=sum(p.numel() for p in ours.model.parameters()), dtype=dtype, numerics=ours.numerics())
        bare, peers = loops(ours)
        timed_items = answers(n_time // 2, seed=1)
        inv = load(folder, "auto", True)
        speed = {}
        for name, fn in (("ours", lambda xs: [s.score for s in ours.score_answers(xs)]),
                         ("invariant", lambda xs: [s.score for s in inv.score_answers(xs)]),
                         ("bare", bare), ("peers", peers)):
            if torch.cuda.is_available():
                torch.cuda.reset_peak_memory_stats()
            got, rate = timed(fn, timed_items)
            speed[name] = {"answers_per_s": round(rate, 2), "peak_gib": round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
                           if torch.cuda.is_available() else None}
            if name == "ours":
                again, _ = timed(fn, timed_items)
                result["repeat_identical"] = again == got
            if name == "bare":
                result["ours_vs_bare_decisions_differ"] = sum(
                    x != y for x, y in zip(decisions(result.pop("_ours")), decisions(got)))
            if name == "ours":
                result["_ours"] = got
        del inv
        rate = {k: v["answers_per_s"] for k, v in speed.items()}
        result["speed"] = speed
        result["ratios"] = {"ours/bare": round(rate["ours"] / rate["bare"], 3),
                            "invariant/ours": round(rate["invariant"] / rate["ours"], 3),
                            "ours/peers": round(rate["ours"] / rate["peers"], 3)}
        items = answers(n_check // 2, seed=2)
        result["batches"] = {("invariant" if on else "length-sorted"): batch_check(folder, items, on, dtype)
                             for on in (False, True)}
        del ours
        by_dtype = {d: [s.score for s in load(folder, d, True).score_answers(items)] for d in ("float32", "bfloat16")}
        rows = {d: [{"score_chosen": c, "score_rejected": r, "score_dtype": d, "tie": c == r, "invalid": False}
                    for c, r in zip(s[0::2], s[1::2])] for d, s in by_dtype.items()}
        result["dtypes"] = {"pairs": len(items) // 2,
                            "decisions_differ": sum(x != y for x, y in zip(*(decisions(s) for s in by_dtype.values()))),
                            "chosen_above": {d: sum(decisions(s)) for d, s in by_dtype.items()},
                            "within_resolution": {d: precision.count_within(r) for d, r in rows.items()}}
    Path(args.out).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"{result['device']}{' (smoke)' if smoke else ''}: {result['params'] / 1e6:.0f}M parameters, {dtype}")
    for k, v in speed.items():
        print(f"  {k:9s} {v['answers_per_s']:9.1f} answers/s" + (f"  peak {v['peak_gib']} GiB" if v["peak_gib"] else ""))
    print("  " + ", ".join(f"{k} = {v:.2f}" for k, v in result["ratios"].items()) + "  (ours/bare target >= 0.9)")
    print(f"  repeat identical: {result['repeat_identical']}; ours vs bare decisions differ: "
          f"{result['ours_vs_bare_decisions_differ']} of {len(timed_items) // 2}")
    for mode, b in result["batches"].items():
        print(f"  {mode:13s} batch 1 vs 4/16/64 bitwise equal: {b['bitwise_equal']}; " + "; ".join(
            f"{k}: {v['scores_moved']} moved (max {v['max_abs']:.3g} = {v['max_ulps']:.1f} ulps), "
            f"{v['decisions_flipped']} flipped" for k, v in b.items() if k != "bitwise_equal"))
    d = result["dtypes"]
    print(f"  bf16 vs fp32: {d['decisions_differ']} of {d['pairs']} decisions differ; within resolution: "
          f"{d['within_resolution']}")
    print(f"  wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
