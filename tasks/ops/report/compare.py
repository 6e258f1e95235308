"""The compare page: two versions side by side, built on what `prbench diff` reads (`dvc metrics diff
REV_A REV_B --all`), with the changes highlighted: accuracies, ranks, correlations, BoN, data."""
from __future__ import annotations

import re
from collections import defaultdict

from tasks.core import layout
from tasks.downstream.correlation import diff
from tasks.ops.report import fmt
from tasks.ops.report.board import strategy_label, strategy_order

LB_FIELD = re.compile(r"^rms\.(?P<rm>.+)\.(?P<strategy>[^.]+)\.(?P<field>micro\.accuracy|macro\.accuracy|ties|invalid|"
                      r"truncated|position_bias|pairs|evaluation_only)$")
CORR_FIELD = re.compile(r"^correlations\.(?P<b>.+)\.(?P<d>[^.]+)\.(?P<m>[^.]+)\.(?P<f>value|ci_low|ci_high|p_value)$")
CORR_STATUS = re.compile(r"^correlations\.(?P<b>.+)\.(?P<d>[^.]+)\.(?P<f>status|n_rms)$")
BON_FIELD = re.compile(r"^lines\.(?P<rm>.+)\.expected\.(?P<k>\d+)\.(?P<f>score|n_questions)$")
DATA_FIELD = re.compile(r"^per_domain_split\.(?P<ds>.+)\.(?P<f>questions|pairs)$")
HUMAN_KEYS = ["source", "annotations.human_ratings", "human.parity.verdict", "human.parity.general_gap",
              "human.parity.personal_gap", "llm-proxy.parity.verdict"]


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def delta(old, new, higher_is_better: bool = True, percent: bool = False, digits: int = 3) -> dict:
    d = new - old if _num(old) and _num(new) else None
    better = None if not d else (d > 0) == higher_is_better
    if d is None:
        text = "added" if old is None and new is not None else "removed" if new is None and old is not None else ""
    else:   # no change reads as nothing, so the changes stand out
        text = fmt.signed(d, 1 if percent else digits, percent) if d else ""
    return {"v": fmt.sort_key(d), "text": text, "cls": "" if better is None else "up" if better else "down"}


def ranks(acc: dict) -> dict:
    """Competition ranks (1 = best; equal accuracies share a rank) of the RMs of one strategy."""
    known = {rm: a for rm, a in acc.items() if _num(a)}
    return {rm: 1 + sum(b > a for b in known.values()) for rm, a in known.items()}


def _plain(v, text: str) -> dict:
    return {"v": fmt.sort_key(v), "text": text, "cls": ""}


def rank_change(ra, rb) -> dict:
    """Places moved from version A to B: ▲ up (a smaller rank number), ▼ down."""
    if ra is None or rb is None:
        return {"v": "", "text": "added" if rb is not None else "removed" if ra is not None else "", "cls": ""}
    moved = ra - rb
    return {"v": moved, "text": f"▲{moved}" if moved > 0 else f"▼{-moved}" if moved < 0 else "",
            "cls": "up" if moved > 0 else "down" if moved < 0 else ""}


def noise(old, new, ci, percent: bool = False) -> list[dict]:
    """Two cells: version B's CI and whether A's value lies outside it ("beyond noise": a screen, not a
    test; tasks/downstream/correlation/headline.py says why)."""
    from tasks.downstream.correlation.headline import beyond_noise

    flag = beyond_noise(old, ci) if old != new else None
    text = (f"[{fmt.pct(ci[0])}, {fmt.pct(ci[1])}]" if percent else fmt.ci(*ci)) if ci else fmt.DASH
    return [{"v": fmt.sort_key(ci[0] if ci else None), "text": text, "cls": ""},
            {"v": {True: 1, False: 0}.get(flag, -1), "text": {True: "yes", False: "no"}.get(flag, fmt.DASH),
             "cls": "changed" if flag else ""}]


def _pairs(raw: dict, file: str) -> dict:
    return {k: (v.get("old"), v.get("new")) for k, v in (raw.get(file) or {}).items()}


def leaderboard(raw: dict, cis: dict | None = None) -> dict:
    fields = defaultdict(dict)
    for key, ov in _pairs(raw, layout.LEADERBOARD["metrics"]).items():
        m = LB_FIELD.match(key)
        if m:
            fields[(m["rm"], m["strategy"])][m["field"]] = ov
    def micro(side: int, strategy: str) -> dict:   # side 0 = version A, 1 = version B
        return {rm: f.get("micro.accuracy", (None, None))[side] for (rm, st), f in fields.items() if st == strategy}

    rank = {(rm, s, side): r for s in {s for _, s in fields} for side in (0, 1) for rm, r in ranks(micro(side, s)).items()}
    rows = []
    for (rm, s), f in sorted(fields.items(), key=lambda kv: (strategy_order(kv[0][1]), kv[0][0])):
        get = lambda name: f.get(name, (None, None))  # noqa: E731
        ra, rb = rank.get((rm, s, 0)), rank.get((rm, s, 1))
        cells = [_plain(rm, rm), _plain(s, strategy_label(s, bool(get("evaluation_only")[1])))]
        for name in ("micro.accuracy", "macro.accuracy"):
            o, n = get(name)
            cells += [_plain(o, fmt.pct(o)), _plain(n, fmt.pct(n)), delta(o, n, percent=True)]
            if name == "micro.accuracy":   # B's interval, and whether A's value is outside it
                cells += noise(o, n, (cis or {}).get(f"rms.{rm}.{s}.micro.accuracy"), percent=True)
        moved = rank_change(ra, rb)
        cells += [_plain(ra, fmt.num(ra)), _plain(rb, fmt.num(rb)), moved]
        for name in ("ties", "invalid", "truncated"):
            o, n = get(name)
            cells.append({"v": fmt.sort_key(n), "text": f"{fmt.num(o)} → {fmt.num(n)}" if o != n else fmt.num(n),
                          "cls": "changed" if o != n else ""})
        o, n = get("position_bias")
        cells.append({"v": fmt.sort_key(n), "text": f"{fmt.pct(o)} → {fmt.pct(n)}" if o != n else fmt.pct(n),
                      "cls": "changed" if o != n else ""})
        rows.append({"rm": rm, "strategy": s, "cells": cells, "changed": any(c.get("cls") for c in cells),
                     "moved": bool(moved["cls"])})
    return {"rows": rows, "changed": sum(r["changed"] for r in rows), "rank_changes": sum(r["moved"] for r in rows)}


def correlation(raw: dict) -> list[dict]:
    values, status = defaultdict(dict), defaultdict(dict)
    for key, ov in _pairs(raw, layout.CORRELATION["metrics"]).items():
        if m := CORR_FIELD.match(key):
            values[(m["b"], m["d"], m["m"])][m["f"]] = ov
        elif m := CORR_STATUS.match(key):
            status[(m["b"], m["d"])][m["f"]] = ov
    rows = []
    for (b, d, metric), f in sorted(values.items()):
        get = lambda name: f.get(name, (None, None))  # noqa: E731
        (vo, vn), (lo_o, lo_n), (hi_o, hi_n), (po, pn) = get("value"), get("ci_low"), get("ci_high"), get("p_value")
        st = status[(b, d)]
        rows.append({"benchmark": b, "downstream": d, "metric": metric,
                     "old": fmt.num(vo), "old_ci": fmt.ci(lo_o, hi_o), "new": fmt.num(vn), "new_ci": fmt.ci(lo_n, hi_n),
                     "delta": delta(vo, vn), "beyond": noise(vo, vn, [lo_n, hi_n] if lo_n is not None else None)[1], "p_old": fmt.p_value(po), "p_new": fmt.p_value(pn),
                     "n_rms": " → ".join(dict.fromkeys(fmt.num(x) for x in st.get("n_rms", (None, None)))),
                     "status": " → ".join(dict.fromkeys(str(x) for x in st.get("status", (None, None)) if x is not None))})
    return rows


def bon(raw: dict) -> list[dict]:
    at = defaultdict(dict)
    for key, ov in _pairs(raw, layout.BON_REPORT["metrics"]).items():
        if (m := BON_FIELD.match(key)) and m["f"] == "score":
            at[(m["rm"], int(m["k"]))] = ov
    return [{"rm": rm, "k": k, "old": fmt.num(o), "new": fmt.num(n), "delta": delta(o, n)}
            for (rm, k), (o, n) in sorted(at.items())]


def _side_by_side(o, n, digits: int = 3) -> dict:
    return {"old": fmt.num(o, digits), "new": fmt.num(n, digits), "cls": "changed" if o != n else ""}


def data(raw: dict) -> list[dict]:
    at = defaultdict(dict)
    for key, ov in _pairs(raw, layout.INGEST["metrics"]).items():
        if m := DATA_FIELD.match(key):
            at[m["ds"]][m["f"]] = ov
    return [{"domain_split": ds, **{f: _side_by_side(*values.get(f, (None, None))) for f in ("questions", "pairs")}}
            for ds, values in sorted(at.items())]


def human(raw: dict) -> list[dict]:
    pairs = _pairs(raw, layout.HUMAN_EVAL["metrics"])
    return [{"key": k, **_side_by_side(*pairs[k], digits=2)} for k in HUMAN_KEYS if k in pairs]


def changed(raw: dict, cis: dict | None = None) -> list[dict]:
    """Every metric whose value differs, in `prbench diff`'s order and kinds, with B's interval where it has one."""
    return [{"kind": r["kind"], "file": r["file"], "metric": r["metric"], "old": fmt.value(r["old"]),
             "new": fmt.value(r["new"]), "change": delta(r["old"], r["new"]),
             "noise": noise(r["old"], r["new"], (cis or {}).get(r["file"], {}).get(r["metric"]))}
            for r in diff.diff_rows(raw, all_metrics=True) if r["old"] != r["new"]]


def compare_context(raw: dict, rev_a: str, rev_b: str | None, title: str, cis: dict | None = None) -> dict:
    """`cis`: {metrics file: {flattened key: [lo, hi]}} of version B (dvc's diff leaves lists out)."""
    cis = cis or {}
    board, corr, every = leaderboard(raw, cis.get(layout.LEADERBOARD["metrics"])), correlation(raw), changed(raw, cis)
    return {"title": title, "mode": "compare", "rev_a": rev_a, "rev_b": rev_b or "workspace", "board": board,
            "correlation": corr, "bon": bon(raw), "data": data(raw), "human": human(raw), "changed": every,
            "summary": {"accuracies": board["changed"], "ranks": board["rank_changes"],
                        "correlations": sum(1 for r in corr if r["delta"]["cls"]), "metrics": len(every)}}


def build(rev_a: str, rev_b: str | None = None, *, cwd=".", title: str = "prbench: two versions") -> str:
    from tasks.ops.report.build import render

    from tasks.downstream.correlation.headline import read_at

    raw = diff.metrics_diff(rev_a, rev_b, cwd=cwd, unchanged=True)
    cis = {f: diff.intervals(read_at(rev_b, f, cwd)) for f in raw if f.endswith(".json")}
    return render("compare.html.j2", compare_context(raw, rev_a, rev_b, title, cis))
