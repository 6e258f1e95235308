"""The run page's "Why RMs fail" section, from metrics/explain.json: per strategy, each RM's length bias (the
share of pairs where it picked the longer answer, beside the length baselines and what a perfect RM would show),
its accuracy when the chosen answer is the longer and the shorter one, the gain from the profile over `none`,
and by position for pairwise judges; a dot-and-whisker chart of the length bias. The contestants and the two
length rules have a row each; the positive controls and the other null baselines one summary row (their range). The breakdowns by category and profile size are in the pair
explorer (report/pairs.html), beside the pairs themselves."""
from __future__ import annotations

from tasks.core.rm_labels import CONTESTANT, NULL_BASELINE, POSITIVE_CONTROL
from tasks.ops.report import fmt
from tasks.ops.report.board import strategy_label
from tasks.stages.explain.text import LENGTH_KINDS
ROLE_ORDER = {CONTESTANT: 0, POSITIVE_CONTROL: 1, NULL_BASELINE: 2}
DASH = fmt.DASH
CHART_W, CHART_LEFT, CHART_RIGHT, ROW_H, CHART_TOP = 560, 150, 20, 16, 22


def figure(e: dict | None, signed: bool = False) -> dict:
    """A figure as the page shows it: its value, its CI or why there is none, n; data-v for sorting."""
    e = e or {}
    value = e.get("value")
    text = fmt.signed(value, 1, percent=True) if signed else fmt.pct(value)
    if e.get("ci"):
        lo, hi = e["ci"]
        ci = f"[{100 * lo:+.1f}, {100 * hi:+.1f}]" if signed else fmt.ci_pct(lo, hi, n=e.get("n"), value=value)
    else:   # the note above the table says what "too few" means
        ci = (f"n = {min(e['n']) if isinstance(e['n'], list) else e['n']}: too few" if e.get("status", "").startswith("too few")
              else e.get("status", "")) if value is not None else ""
    n = e.get("n")
    return {"text": text, "ci": ci, "v": fmt.sort_key(value), "n": " vs ".join(map(str, n)) if isinstance(n, list) else n}


def _row(rm: str, role: str, f: dict) -> dict:
    gain = f.get("profile_gain")
    by_pos = f.get("accuracy_by_position") or {}
    return {"rm": rm, "role": role, "accuracy": figure(f["accuracy"]), "picked_longer": figure(f["picked_longer"]),
            "longer": figure(f["accuracy_by_length"].get("chosen longer")),
            "shorter": figure(f["accuracy_by_length"].get("chosen shorter")),
            "gap": figure(f["length_gap"], signed=True),
            "gain": {**figure(gain["net"], signed=True), "with": gain["right_only_with"],
                     "without": gain["right_only_without"], "pairs": gain["n"]} if gain else None,
            "position": {k: figure(v) for k, v in sorted(by_pos.items())},
            "raw": f["picked_longer"]}


def _summary(folded: list[tuple[str, dict]], what: str) -> dict | None:
    """Folded RMs as one row: how many, their range of picked-longer shares and of accuracy."""
    if not folded:
        return None

    def span(key):
        vals = sorted(f[key]["value"] for _, f in folded if f[key]["value"] is not None)
        return DASH if not vals else fmt.pct(vals[0]) if len(vals) == 1 else f"{fmt.pct(vals[0])[:-1]}–{fmt.pct(vals[-1])}"
    return {"what": what, "count": len(folded), "picked_longer": span("picked_longer"), "accuracy": span("accuracy"),
            "names": ", ".join(rm for rm, _ in folded[:3]) + (", ..." if len(folded) > 3 else "")}



def chart(rows: list[dict], perfect: float | None) -> dict:
    """Dot-and-whisker geometry: one line per RM, the share of pairs where it picked the longer answer (x, 0-100%)
    with its CI; 50% (no preference) dashed and a perfect RM's share dotted."""
    x = lambda v: round(CHART_LEFT + v * (CHART_W - CHART_LEFT - CHART_RIGHT), 1)  # noqa: E731
    lines = []
    for i, r in enumerate(rows):
        e = r["raw"]
        if e.get("value") is None:
            continue
        y = CHART_TOP + i * ROW_H + ROW_H / 2
        lo, hi = e["ci"] or (None, None)
        lines.append({"label": r["rm"], "y": y, "cx": x(e["value"]), "x1": x(lo) if lo is not None else None,
                      "x2": x(hi) if hi is not None else None, "title": f"{r['rm']}: {r['picked_longer']['text']} "
                      f"{r['picked_longer']['ci']} (n = {r['picked_longer']['n']})"})
    height = CHART_TOP + max(1, len(rows)) * ROW_H + 26
    ticks = [{"x": x(t / 4), "label": f"{25 * t}%"} for t in range(5)]
    return {"width": CHART_W, "height": height, "lines": lines, "ticks": ticks, "top": CHART_TOP,
            "bottom": height - 26, "half": x(0.5), "perfect": x(perfect) if perfect is not None else None,
            "left": CHART_LEFT}


def section(metrics: dict | None, rms: dict, first: str | None = None) -> dict | None:
    """The section's context: one block per strategy (`first` shown first), rows and chart; None without
    metrics. `rms`: scoring.rms (an RM's kind says whether it is a length rule)."""
    if not metrics:
        return None
    length = metrics["pairs"]["length"]
    unequal = length.get("chosen longer", 0) + length.get("chosen shorter", 0)
    perfect = length.get("chosen longer", 0) / unequal if unequal else None
    blocks = []
    for s in sorted(metrics["strategies"], key=lambda s: s != first):
        rows, controls, nulls = [], [], []
        for rm, entry in sorted(metrics["rms"].items()):
            f = entry["strategies"].get(s)
            if not f:
                continue
            if entry["role"] == POSITIVE_CONTROL:
                controls.append((rm, f))
            elif entry["role"] == NULL_BASELINE and (entry.get("kind") or (rms.get(rm) or {}).get("kind")) not in LENGTH_KINDS:
                nulls.append((rm, f))
            else:
                rows.append(_row(rm, entry["role"], f))
        rows.sort(key=lambda r: (ROLE_ORDER.get(r["role"], 3), r["rm"]))
        folded = [x for x in (_summary(controls, "positive control"), _summary(nulls, "other null baseline")) if x]
        blocks.append({"strategy": s, "label": strategy_label(s, False), "rows": rows, "folded": folded,
                       "chart": chart(rows, perfect),
                       "positions": any(r["position"] for r in rows), "outcomes": metrics["outcomes"].get(s)})
    return {"blocks": blocks, "pairs": metrics["pairs"], "perfect": fmt.pct(perfect), "min_n": metrics["min_n"],
            "ci": metrics["ci"], "tie_policy": metrics["tie_policy"]}
