"""The report's other-benchmarks section: a benchmark x downstream matrix (which benchmark's RM
ranking predicts each downstream, with the CI and verdict; the paired test against ours beside it; a star
only where the top benchmark's lead holds) and one
leaderboard per `benchmarks:` entry with its chance level marked."""
from __future__ import annotations

MATRIX_METRIC = "spearman"


def _f(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def _top_two(corr: dict, d: str, metric: str) -> list[str]:
    scored = sorted(((cells[d][metric]["value"], b) for b, cells in corr.items()
                     if d in cells and cells[d]["status"] == "ok" and cells[d][metric]["value"] is not None),
                    key=lambda x: (-x[0], x[1]))
    return [b for _, b in scored[:2]]


def level_of(correlation_metrics: dict) -> float:
    """The alpha the correlation stage read its p-values at (older metrics: the primary's, else 0.05)."""
    return correlation_metrics.get("alpha") or (correlation_metrics.get("primary") or {}).get("alpha") or 0.05


def leaders(correlation_metrics: dict, corr: dict, downs: list[str], metric: str) -> dict[str, dict]:
    """Per downstream, the top benchmark and whether it may be called best: its own correlation significant
    and its paired test against the runner-up ("top vs runner-up" in correlation.comparisons) holding after
    Holm over the tests of the columns shown."""
    from tasks.downstream.correlation.metrics import SIGNIFICANT, holm, verdict

    level, vs = level_of(correlation_metrics), correlation_metrics.get("comparisons") or {}
    out, raw = {}, {}
    for d in downs:
        two = _top_two(corr, d, metric)
        if not two:
            continue
        cell = corr[two[0]][d][metric]
        pair = (vs.get(f"{two[0]} vs {two[1]}") or {}).get(d, {}).get(metric) if len(two) > 1 else None
        out[d] = {"top": two[0], "runner_up": two[1] if len(two) > 1 else None,
                  "own": verdict("ok", cell.get("p_holm"), cell.get("p_value"), level)}
        raw[d] = pair.get("p_value") if pair else None
    for d, p in holm(raw).items():
        own = out[d]["own"] == SIGNIFICANT
        out[d]["holds"] = bool(own and p is not None and p < level)
        out[d]["why"] = ("" if out[d]["holds"] else f"highest here, not marked: correlation {out[d]['own']}" if not own
                         else f"no paired test against {out[d]['runner_up']}" if p is None
                         else f"not shown to beat {out[d]['runner_up']}: paired p (Holm) {p:.3f}")
    return out


def matrix(correlation_metrics: dict | None, metric: str = MATRIX_METRIC) -> dict | None:
    """Rows: every benchmark (accuracy predictor); columns: every downstream; a column's top benchmark starred
    only where `leaders` says it holds."""
    if not correlation_metrics or not correlation_metrics.get("correlations"):
        return None
    corr = {b: v for b, v in correlation_metrics["correlations"].items() if ":" not in b}   # accuracy predictor only
    downs = sorted({d for cells in corr.values() for d in cells})
    from tasks.downstream.correlation.metrics import verdict

    lead, level = leaders(correlation_metrics, corr, downs, metric), level_of(correlation_metrics)
    vs = correlation_metrics.get("comparisons") or {}
    rows = []
    for b in sorted(corr, key=lambda b: (b != "personalised", b)):
        cells = []
        for d in downs:
            c = corr[b].get(d)
            if c is None:
                cells.append({"text": "-", "ci": "", "best": False, "vs": "", "verdict": "", "why": ""})
                continue
            v = c[metric]
            ok = c["status"] == "ok"
            pair = (vs.get(f"personalised vs {b}") or {}).get(d)
            diff = "" if not pair or pair["status"] != "ok" else \
                f"ours - this: {_f(pair[metric]['difference'])} [{_f(pair[metric]['ci_low'])}, {_f(pair[metric]['ci_high'])}]"
            top = (lead.get(d) or {}).get("top") == b
            cells.append({"text": _f(v["value"]) if ok else c["status"],
                          "ci": f"[{_f(v['ci_low'])}, {_f(v['ci_high'])}]" if ok else "",
                          "best": top and lead[d]["holds"], "why": lead[d]["why"] if top else "", "vs": diff,
                          "verdict": verdict(c["status"], v.get("p_holm"), v.get("p_value"), level) if ok else "",
                          "n_rms": c["n_rms"]})
        rows.append({"benchmark": b, "source": correlation_metrics["benchmarks"].get(b, {}).get("source", ""),
                     "cells": cells})
    return {"metric": metric, "downstreams": downs, "rows": rows,
            "starred": any(c["best"] for r in rows for c in r["cells"])}


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
