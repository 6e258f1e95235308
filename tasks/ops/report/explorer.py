"""The pair explorer (report/pairs.html): one row per scored pair, filterable by domain, RM, strategy and
outcome, searchable by user and question; a row opens what every RM was shown and did. Its data is embedded
in the page as one JSON block (no fetch: the page's policy allows nothing to load), read by templates/pairs.js.

Per pair, each strategy's outcomes are one string with a letter per RM (r right, w wrong, t tie, i invalid,
- not scored) and its margins a list: at a hundred RMs that keeps the page about a tenth of its size in
per-cell objects, and the filters a string scan."""
from __future__ import annotations

import json
from collections import defaultdict

from tasks.ops.report.board import strategy_label, strategy_order
from tasks.stages.explain.cells import OUTCOMES
from tasks.stages.explain.diff import word_diff

CODE = {"right": "r", "wrong": "w", "tie": "t", "invalid": "i"}
# A context longer than this shows its start (the top-ranked posts first) and how much more there is: the paper
# setting's 10 posts of up to 400 words would make the page ~70 MB; the whole text is in data/explain/pairs.parquet
# and `prbench explain RM --pair ID` (benchmarks/explorer_size.py)
CONTEXT_CHARS = 2000
ROLE_ORDER = {"contestant": 0, "positive control": 1, "null baseline": 2}
PAGE_SIZE = 50   # pairs listed at a time


def code(c: dict) -> str:
    return CODE["invalid"] if c["invalid"] else CODE["tie"] if c["tie"] else CODE["right"] if c["right"] else CODE["wrong"]


def compact(x):
    """metrics/explain.json's figures with each estimate as [value, ci low, ci high, n] (pairs.js `fig` says
    "too few pairs" or "no pairs" from them as the stage does): at a hundred RMs the analysis is a third the size."""
    if isinstance(x, dict) and "status" in x:
        lo, hi = x["ci"] or (None, None)
        return [x["value"], lo, hi, x["n"]]
    return {k: compact(v) for k, v in x.items()} if isinstance(x, dict) else x


def shown_context(text: str) -> str | list:
    """A context as the page holds it: the text, or [its first CONTEXT_CHARS characters cut at a space, the count
    of characters left out]."""
    if len(text) <= CONTEXT_CHARS:
        return text
    cut = text.rfind(" ", 0, CONTEXT_CHARS + 1)
    cut = cut if cut > CONTEXT_CHARS // 2 else CONTEXT_CHARS
    return [text[:cut], len(text) - cut]


def _margin(m: float | None) -> float | None:
    """4 significant digits: the page shows 3."""
    return None if m is None else float(f"{m:.4g}")


def _figures(f: dict) -> dict:
    """What the analysis panel shows of one RM × strategy."""
    keep = ("accuracy", "picked_longer", "accuracy_by_length", "length_gap", "accuracy_by_category",
            "accuracy_by_profile_length", "accuracy_by_position", "profile_gain")
    return {k: compact(f[k]) for k in keep if k in f}


def data(cells: list[dict], pairs: list[dict], metrics: dict) -> dict:
    """The page's data: RMs (contestants first), strategies, and per pair its facts, texts with the word diff,
    contexts, the validity judge's and human ratings, and per strategy the RMs' outcome letters and margins."""
    roles = {c["rm"]: c["role"] for c in cells}
    rms = sorted(roles, key=lambda rm: (ROLE_ORDER.get(roles[rm], 3), rm))
    at = {rm: i for i, rm in enumerate(rms)}
    strategies = sorted({c["strategy"] for c in cells}, key=strategy_order)
    evaluation_only = {c["strategy"] for c in cells if c["evaluation_only"]}
    grid: dict = defaultdict(lambda: {s: (["-"] * len(rms), [None] * len(rms)) for s in strategies})
    for c in cells:
        letters, margins = grid[c["question_id"]][c["strategy"]]
        letters[at[c["rm"]]], margins[at[c["rm"]]] = code(c), _margin(c["margin"])
    out = []
    for p in pairs:
        if p["question_id"] not in grid:
            continue
        chosen, rejected = word_diff(p["chosen"] or "", p["rejected"] or "")
        g = grid[p["question_id"]]
        out.append({"id": p["question_id"], "domain": p["domain"], "category": p["category"], "question": p["question"],
                    "chosen": chosen, "rejected": rejected, "cw": p["chosen_words"], "rw": p["rejected_words"],
                    "rel": p["length_relation"], "posts": p["profile_posts"], "bin": p["profile_bin"],
                    "aspects": p["aspects"],
                    "ctx": {c["strategy"]: shown_context(c["text"]) for c in p["contexts"] if c["strategy"] in strategies},
                    "failed": sorted(c["strategy"] for c in p["contexts"] if c["failed"]),
                    "judge": None if p["judge_chosen"] is None else
                    [p["judge_chosen"], p["judge_rejected"], p["valid"]],
                    "human": [[h["kind"], h["dimension"], h["chosen"], h["rejected"], h["annotators"]] for h in p["human"]],
                    "o": ["".join(g[s][0]) for s in strategies], "m": [g[s][1] for s in strategies]})
    analysis = {rm: {s: _figures(f) for s, f in metrics["rms"][rm]["strategies"].items()} for rm in rms
                if rm in metrics["rms"]}
    return {"rms": [{"name": rm, "role": roles[rm]} for rm in rms],
            "strategies": [{"name": s, "label": strategy_label(s, s in evaluation_only)} for s in strategies],
            "outcomes": list(OUTCOMES), "pairs": out, "analysis": analysis, "min_n": metrics["min_n"],
            "profile_bins": metrics["pairs"]["profile_bins"], "page_size": PAGE_SIZE}


def embedded(obj) -> str:
    """JSON for a <script type="application/json"> block: compact, key order fixed, and no '<' at all, so no
    text in it can close the block or open a comment."""
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def context(cells: list[dict] | None, pairs: list[dict] | None, metrics: dict | None, title: str) -> dict:
    """The explorer page's context (render with pairs.html.j2); without the explain stage's outputs, a page
    that says so."""
    if not cells or not pairs or not metrics:
        return {"title": f"{title}: pairs", "data": None, "json": "null"}
    d = data(cells, pairs, metrics)
    roles = defaultdict(int)
    for r in d["rms"]:
        roles[r["role"]] += 1
    return {"title": f"{title}: pairs", "data": d, "json": embedded(d), "roles": dict(roles),
            "domains": sorted({p["domain"] for p in d["pairs"]}), "tie_policy": metrics["tie_policy"],
            "pairs_n": len(d["pairs"])}
