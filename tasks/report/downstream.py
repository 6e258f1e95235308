"""Pair validity and the human evaluation, Best-of-N, RL and the correlation sections: picked from
the stages' metrics and Parquet, formatted, never recomputed."""
from __future__ import annotations

from tasks.report import charts, fmt

DIMENSIONS = ["factuality", "relevance", "helpfulness", "personal_fit"]
REFERENCE_LINES = ("(oracle)", "(random)")   # the BoN report's reference lines


def _validity_row(label: str, block: dict) -> dict:
    lr = block.get("length_ratio") or {}
    return {"label": label, "pairs": fmt.num(block.get("pairs")), "unusable": fmt.num(block.get("unusable")),
            "validity": fmt.pct(block.get("validity_rate")), "chosen": fmt.num(block.get("judge_chosen_mean")),
            "rejected": fmt.num(block.get("judge_rejected_mean")), "length_ratio": fmt.num(lr.get("mean")),
            "within_15pct": fmt.pct(lr.get("within_15pct_share"))}


def validity(pairs: dict | None, generic: dict | None, params: dict) -> dict | None:
    """Per pair source (reference, generate, the generic baseline): overall and per domain."""
    sources = [(name, block) for name, block in sorted((pairs or {}).items())
               if isinstance(block, dict) and "overall" in block]
    sources += [(f"generic ({name})", block) for name, block in sorted((generic or {}).items())
                if isinstance(block, dict) and "overall" in block]
    if not sources:
        return None
    return {"judge": (pairs or {}).get("judge"), "scored_source": params.get("pairs", {}).get("source"),
            "keep_invalid": (pairs or {}).get("keep_invalid"),
            "sources": [{"name": name, "rows": [_validity_row("all", block["overall"])]
                         + [_validity_row(d, b) for d, b in sorted((block.get("per_domain") or {}).items())]}
                        for name, block in sources]}


def _rater(summary: dict) -> dict:
    par = summary.get("parity") or {}
    wil = summary.get("wilcoxon") or {}
    agr = summary.get("agreement") or {}
    desc = summary.get("per_dimension") or {}

    def mean(dim, side):
        return ((desc.get(dim) or {}).get("all") or {}).get(side, {}).get("mean")

    dims = [{"dimension": d.replace("_", " "), "chosen": fmt.num(mean(d, "chosen"), 2),
             "rejected": fmt.num(mean(d, "rejected"), 2), "n": fmt.num((wil.get(d) or {}).get("n")),
             "statistic": fmt.num((wil.get(d) or {}).get("statistic"), 1),
             "p": fmt.p_value((wil.get(d) or {}).get("p_value")),
             "p_holm": fmt.p_value((wil.get(d) or {}).get("p_holm")),
             "rank_biserial": fmt.num((wil.get(d) or {}).get("rank_biserial"), 2),
             "alpha": fmt.num((agr.get(d) or {}).get("alpha_ordinal"), 2),
             "annotators": fmt.num((agr.get(d) or {}).get("annotators"))} for d in DIMENSIONS]
    return {"annotators": summary.get("annotators"), "items": summary.get("items"), "ratings": summary.get("ratings"),
            "invalid_ratings": summary.get("invalid_ratings"), "verdict": par.get("verdict") or "insufficient data",
            "holds": par.get("holds"), "general_gap": fmt.num(par.get("general_gap"), 2),
            "personal_gap": fmt.num(par.get("personal_gap"), 2),
            "thresholds": par.get("thresholds") or {}, "dimensions": dims}


def human_eval(m: dict | None) -> dict | None:
    """Humans and the LLM proxy side by side, never pooled; 'no human ratings yet' until humans rated."""
    if m is None:
        return None
    ann = m.get("annotations") or {}
    return {"source": m.get("source"), "human": _rater(m["human"]) if m.get("human") else None,
            "proxy": _rater(m["llm-proxy"]) if m.get("llm-proxy") else None,
            "proxy_llm": (m.get("llm-proxy") or {}).get("llm"), "human_ratings": ann.get("human_ratings", 0),
            "files": len(ann.get("files") or []), "quarantined": ann.get("quarantined_rows", 0),
            "paper": m.get("paper") or {}}


def bon(curve: list[dict] | None, metrics: dict | None) -> dict | None:
    """The expected best-of-k curve (all domains) per RM with CIs, the reference lines dashed."""
    if not curve:
        return None
    rows = [r for r in curve if r["domain"] == "all" and r["method"] == "expected"]
    ks = sorted({r["k"] for r in rows})
    rms = sorted({r["rm"] for r in rows}, key=lambda rm: (rm in REFERENCE_LINES, rm))
    at = {(r["rm"], r["k"]): r for r in rows}
    series = [{"name": rm, "reference": rm in REFERENCE_LINES,
               "points": [{"x": k, "y": at[(rm, k)]["judge_score"], "lo": at[(rm, k)]["ci_low"],
                           "hi": at[(rm, k)]["ci_high"],
                           "title": f"{rm}, k = {k}: {fmt.num(at[(rm, k)]['judge_score'])} "
                                    f"{fmt.ci(at[(rm, k)]['ci_low'], at[(rm, k)]['ci_high'])}"}
                          for k in ks if (rm, k) in at]} for rm in rms]
    table = [{"rm": rm, "reference": rm in REFERENCE_LINES,
              "cells": [{"score": fmt.num(at[(rm, k)]["judge_score"]), "ci": fmt.ci(at[(rm, k)]["ci_low"],
                                                                                     at[(rm, k)]["ci_high"]),
                         "gain": fmt.signed(at[(rm, k)]["gain_over_k1"]), "n": at[(rm, k)]["n_questions"]}
                        if (rm, k) in at else None for k in ks]} for rm in rms]
    m = metrics or {}
    return {"ks": ks, "table": table, "chart": charts.line_chart(series, ks, "k (best of k samples)", "judge score"),
            "judge": m.get("judge"), "skipped": m.get("skipped_k") or m.get("skipped_ks")}


def rl(rows: list[dict] | None, metrics: dict | None) -> dict | None:
    """One row per RM (plus the untrained baseline): the judge's mean score on held-out questions."""
    if rows is None:
        return None
    def key(r):
        return (not r.get("baseline"), -(r.get("mean_score") or 0), r.get("rm") or "")
    bars = charts.bars([{"label": f"{r.get('rm')}" + (" (baseline)" if r.get("baseline") else ""),
                         "value": r.get("mean_score"), "lo": r.get("ci_low"), "hi": r.get("ci_high"),
                         "reference": bool(r.get("baseline"))} for r in sorted(rows, key=key)], "judge score")
    return {"rows": [{"rm": r.get("rm"), "algorithm": r.get("algorithm"), "baseline": bool(r.get("baseline")),
                      "score": fmt.num(r.get("mean_score")), "ci": fmt.ci(r.get("ci_low"), r.get("ci_high")),
                      "questions": fmt.num(r.get("questions")), "reward_failures": fmt.num(r.get("reward_failures"))}
                     for r in sorted(rows, key=key)],
            "chart": bars, "status": (metrics or {}).get("status")}


def correlation(rows: list[dict] | None, points: list[dict] | None, metrics: dict | None) -> dict | None:
    """The benchmark × downstream × metric table with CIs and p-values, and one scatter per pairing."""
    if rows is None:
        return None
    m = metrics or {}
    pairings = sorted({(r["benchmark"], r["downstream"]) for r in rows})
    table = [{"benchmark": b, "downstream": d, "metric": r["metric"], "value": fmt.num(r["value"]),
              "ci": fmt.ci(r["ci_low"], r["ci_high"]), "p": fmt.p_value(r["p_value"]), "n_rms": r["n_rms"],
              "status": r["status"]} for b, d in pairings for r in rows if (r["benchmark"], r["downstream"]) == (b, d)]
    scatters = []
    for b, d in pairings:
        mine = [p for p in points or [] if p["benchmark"] == b and p["downstream"] == d]
        chart = charts.scatter([{"label": p["rm"], "x": p["accuracy"], "y": p["downstream_score"],
                                 "title": f"{p['rm']}: accuracy {fmt.pct(p['accuracy'])} (rank {p['benchmark_rank']}), "
                                          f"{d} {fmt.num(p['downstream_score'])} (rank {p['downstream_rank']})"}
                                for p in mine], f"{b} benchmark accuracy", f"{d} downstream score")
        scatters.append({"benchmark": b, "downstream": d, "chart": chart, "points": len(mine)})
    return {"table": table, "scatters": scatters, "strategy": m.get("strategy"), "status": m.get("status"),
            "excluded": m.get("excluded_rms") or [], "conventions": sorted((m.get("conventions") or {}).items()),
            "min_rms": m.get("min_rms")}


def data_card(ingest: dict | None, params: dict) -> dict | None:
    """Questions, users and pairs per domain and split, the files they came from."""
    if ingest is None:
        return None
    p = params.get("ingest", {})
    rows = []
    for key, v in sorted((ingest.get("per_domain_split") or {}).items()):
        domain, _, split = key.partition("/")
        rows.append({"domain": domain, "split": split, "questions": fmt.num(v.get("questions")),
                     "users": fmt.num(v.get("questions")), "pairs": fmt.num(v.get("pairs")),
                     "aspects": fmt.num(v.get("mean_aspects"), 2), "posts": fmt.num(v.get("mean_profile_items"), 1)})
    where = p.get("hub_id") if p.get("source") == "hub" else p.get("path")
    return {"rows": rows, "source": p.get("source"), "where": where, "layout": p.get("layout"),
            "files": ingest.get("files") or [], "questions": ingest.get("questions"), "pairs": ingest.get("pairs"),
            "profile_items": ingest.get("profile_items"), "quarantined": ingest.get("quarantined_rows", 0),
            "pair_source": params.get("pairs", {}).get("source"),
            "per_domain_limit": params.get("scoring", {}).get("per_domain_limit"),
            "splits": params.get("scoring", {}).get("splits")}
