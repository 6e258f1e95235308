"""The report's other-benchmarks section: a benchmark x downstream matrix (which benchmark's RM
ranking predicts each downstream best, with the CI; the paired test against ours beside it) and one
leaderboard per `benchmarks:` entry with its chance level marked."""
from __future__ import annotations

MATRIX_METRIC = "spearman"


def _f(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def matrix(correlation_metrics: dict | None, metric: str = MATRIX_METRIC) -> dict | None:
    """Rows: every benchmark (accuracy predictor); columns: every downstream; the best per column marked."""
    if not correlation_metrics or not correlation_metrics.get("correlations"):
        return None
    corr = {b: v for b, v in correlation_metrics["correlations"].items() if ":" not in b}   # accuracy predictor only
    downs = sorted({d for cells in corr.values() for d in cells})
    best = {}
    for d in downs:
        scored = [(cells[d][metric]["value"], b) for b, cells in corr.items()
                  if d in cells and cells[d]["status"] == "ok" and cells[d][metric]["value"] is not None]
        best[d] = max(scored)[1] if scored else None
    vs = correlation_metrics.get("comparisons") or {}
    rows = []
    for b in sorted(corr, key=lambda b: (b != "personalised", b)):
        cells = []
        for d in downs:
            c = corr[b].get(d)
            if c is None:
                cells.append({"text": "-", "ci": "", "best": False, "vs": ""})
                continue
            v = c[metric]
            ok = c["status"] == "ok"
            pair = (vs.get(f"personalised vs {b}") or {}).get(d)
            diff = "" if not pair or pair["status"] != "ok" else \
                f"ours - this: {_f(pair[metric]['difference'])} [{_f(pair[metric]['ci_low'])}, {_f(pair[metric]['ci_high'])}]"
            cells.append({"text": _f(v["value"]) if ok else c["status"],
                          "ci": f"[{_f(v['ci_low'])}, {_f(v['ci_high'])}]" if ok else "",
                          "best": best[d] == b, "vs": diff, "n_rms": c["n_rms"]})
        rows.append({"benchmark": b, "source": correlation_metrics["benchmarks"].get(b, {}).get("source", ""),
                     "cells": cells})
    return {"metric": metric, "downstreams": downs, "rows": rows}


def leaderboards(bench_metrics: dict[str, dict]) -> list[dict]:
    """One board per benchmark: RM x strategy, accuracy [CI] against chance, n, ties, the published rule."""
    boards = []
    for name, m in sorted(bench_metrics.items()):
        rows = []
        for rm, r in sorted(m["rms"].items()):
            for strategy, e in r["strategies"].items():
                pub = e.get("published") or {}
                rows.append({"rm": rm, "strategy": strategy, "accuracy": _f(e["accuracy"]),
                             "ci": f"[{_f(e['ci'][0])}, {_f(e['ci'][1])}]" if e["accuracy"] is not None else "",
                             "chance": _f(e["chance"]), "n": e["n"], "ties": e["ties"], "invalid": e["invalid"],
                             "below_chance": e["accuracy"] is not None and e["accuracy"] <= e["chance"],
                             "method": ", ".join(e["method"]),
                             "published": ", ".join(f"{k} {v}" for k, v in pub.items()
                                                    if not isinstance(v, dict) and k != "rule")})
        rows.sort(key=lambda x: (x["strategy"], x["accuracy"] == "-", -float(x["accuracy"]) if x["accuracy"] != "-" else 0))
        boards.append({"name": name, "source": m["source"], "items": m["items"], "rows": rows})
    return boards
