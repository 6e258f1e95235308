"""The pair explorer's size and load time (issue 62): report/pairs.html embeds its data (the page's policy lets
nothing load, so there is no lazy fetch to choose), so the question is whether one file stays usable. Per
setting it builds the page through the real explain stage and report code from synthetic pairs and scores, opens
it in headless Chromium and prints: bytes, bytes per pair, the browser's load-event time (the data parsed and
the first page of pairs drawn: the script runs before `load`), the time to open a pair and to change a filter
(in the page: the driver's round trip left out), and load time per MB measured in this run (the ratio that
says whether a bigger run stays usable). Goal: under 3 s to load and 0.2 s
to open a pair at the paper's scale, on the shared 2-core box.

    python benchmarks/explorer_size.py [--settings default,100rms,paper] [--keep DIR]

Settings: default = the bundled run's shape (18 RMs x 4 strategies, 6 pairs, the ladder on 30); 100rms = 100
extra `kind: random` RMs on it; paper = 2,830 pairs x 20 RMs x 4 strategies with ~100-word answers, 10
retrieved posts of 30-400 words each (params-paper.yaml: context_k 10, max_words_per_post 400) and 47
categories. The page shows each context's first 2,000 characters (tasks/ops/report/explorer.py CONTEXT_CHARS)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from tasks.core import layout  # noqa: E402
from tasks.core.artifacts import write_table  # noqa: E402

SETTINGS = {"default": (30, 18, 6), "100rms": (30, 118, 6), "paper": (2830, 20, 2830)}   # pairs, RMs, pairs scored
STRATEGIES = ["none", "raw_profile", "planner", "oracle"]
DOMAINS = ("Art", "Lifestyle", "Society")
WORDS = ("guitar budget pension arthritis acoustic quiet neighbours strings beginner lessons tuning nylon steel "
         "history tradition level tone detail format constraint travel cooking garden fitness").split()


def _text(rng, n: int) -> str:
    return " ".join(rng.choice(WORDS, size=n)) + "."


def _inputs(root: Path, n_pairs: int, rng) -> dict:
    """Questions, pairs, profiles, contexts and rubrics of n_pairs synthetic users, as the stages write them."""
    ids = [(f"{i % 3}_{i // 3}_0", DOMAINS[i % 3]) for i in range(n_pairs)]
    q, pairs, prof, ctx, inf = [], [], [], [], []
    for i, (qid, dom) in enumerate(ids):
        q.append({"id": qid, "domain": dom, "split": "test", "category": f"site{i % 47}", "question": _text(rng, 12),
                  "narrative": "", "rubric_aspects": [{"aspect": _text(rng, 5), "evidence": "", "reason": ""}
                                                      for _ in range(5)]})
        chosen, rejected = _text(rng, int(rng.integers(80, 120))), _text(rng, int(rng.integers(80, 120)))
        pairs.append({"question_id": qid, "domain": dom, "split": "test", "chosen": chosen, "rejected": rejected,
                      "generator": "x", "chosen_words": 0, "rejected_words": 0, "length_ratio": 1.0, "source": "x",
                      "judge_chosen": 0.8, "judge_rejected": 0.3, "valid": True})
        prof += [{"question_id": qid, "item_id": f"{qid}_{k}", "position": k, "category": "x", "text": "t"}
                 for k in range(int(rng.integers(20, 200)))]
        ctx.append({"question_id": qid, "retriever": "dense", "k": 10, "item_ids": [],
                    "profile_text": "\n".join(f"[{k}] {_text(rng, int(rng.integers(30, 400)))}" for k in range(10))})
        inf.append({"question_id": qid, "domain": dom, "split": "test", "aspects": [_text(rng, 4) for _ in range(5)],
                    "valid": True, "attempts": 1, "error": "", "raw_text": "", "generator": "x"})
    files = {"questions": (layout.INGEST["questions"], q, "questions"),
             "selected_pairs": (layout.PAIRS["selected_pairs"], pairs, "judged_pairs"),
             "profiles": (layout.INGEST["profiles"], prof, "profiles"),
             "profile_context": (layout.PROFILES["profile_context"], ctx, "profile_context"),
             "inferred_rubrics": (layout.RUBRICS["inferred_rubrics"], inf, "inferred_rubrics")}
    return {k: str(write_table(rows, root / p, schema)) for k, (p, rows, schema) in files.items()}, ids


def build(root: Path, setting: str) -> Path:
    from tasks.ops.report import build as report
    from tasks.stages.explain import stage

    n_pairs, n_rms, scored = SETTINGS[setting]
    rng = np.random.default_rng(62)
    inputs, ids = _inputs(root, n_pairs, rng)
    rms = {f"rm-{j:03d}": {"kind": "random" if j >= 6 else "similarity"} for j in range(n_rms)}
    scores = {}
    for j, rm in enumerate(rms):
        mine = ids if setting != "paper" and 6 <= j < 18 else ids[:scored]   # a ladder of 12 scores every pair
        rows = [{"rm": rm, "benchmark": "personalised", "rm_kind": "x", "rm_identity": rm, "strategy": s,
                 "question_id": qid, "domain": dom, "split": "test", "score_chosen": float(rng.normal()),
                 "score_rejected": float(rng.normal()), "correct": None, "tie": False, "invalid": False,
                 "truncated": False, "order_consistent": None, "input_hash_chosen": "", "input_hash_rejected": ""}
                for s in STRATEGIES for qid, dom in mine]
        for r in rows:
            r["correct"] = r["score_chosen"] > r["score_rejected"]
        scores[rm] = str(write_table(rows, root / layout.scores(rm)["scores"], "scores"))
    params = {"common": {"seed": 1, "fidelity": "corrected"}, "scoring": {"rms": rms},
              "leaderboard": {"split": "test", "benchmark": "personalised", "tie_policy": "strict", "bootstrap": 1000,
                              "ci": 0.95, "heatmap_strategy": "raw_profile"}, "explain": {"min_n": 10, "profile_bins": 3}}
    out = {k: str(root / v) for k, v in layout.EXPLAIN.items()}
    here = os.getcwd()
    os.chdir(root)
    try:
        stage.run(params, {**inputs, "scores": scores}, out)
        page = root / "pairs.html"
        report.write_explorer(params, {"explain_cells": out["cells"], "explain_pairs": out["pairs"],
                                       "explain_metrics": out["metrics"]}, page)
    finally:
        os.chdir(here)
    return page


def measure(page: Path) -> dict:
    from tests.browser import browser_page

    with browser_page() as (tab, errors):
        tab.goto(page.as_uri())
        tab.wait_for_load_state("load")
        load_ms = tab.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")
        # in the page: a click's handler draws synchronously (the driver's own round trip, ~0.5 s here, left out)
        open_ms = tab.evaluate("""() => { const t = performance.now();
            document.querySelector('#pairs-table tr.pair').click(); return performance.now() - t; }""")
        filter_ms = tab.evaluate("""() => { const t = performance.now(), s = document.getElementById('pairs-rm');
            s.value = '*'; s.dispatchEvent(new Event('change')); return performance.now() - t; }""")
        assert tab.locator("#pairs-table tr.detail").count() == 1 and not errors, errors
    return {"load_ms": round(load_ms), "open_ms": round(open_ms, 1), "filter_ms": round(filter_ms, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", default="default,100rms,paper")
    ap.add_argument("--keep", type=Path, default=None, help="write the pages under this folder")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="explorer-"))
    print(f"load average {os.getloadavg()[0]:.1f} (wall times on a shared box)")
    print(f"{'setting':8} {'pairs':>6} {'RMs':>4} {'bytes':>11} {'B/pair':>7} {'load ms':>8} {'open ms':>8} "
          f"{'filter ms':>9} {'load ms/MB':>10}")
    for setting in args.settings.split(","):
        start = time.perf_counter()
        page = build(base / setting, setting)
        built = time.perf_counter() - start
        size = page.stat().st_size
        m = measure(page)
        n_pairs, n_rms, _ = SETTINGS[setting]
        print(f"{setting:8} {n_pairs:6d} {n_rms:4d} {size:11,d} {size // n_pairs:7,d} {m['load_ms']:8d} "
              f"{m['open_ms']:8.1f} {m['filter_ms']:9.1f} {m['load_ms'] / (size / 1e6):10.0f}   (built in {built:.0f} s)")
    print(json.dumps({"pages": str(base)}))


if __name__ == "__main__":
    main()
