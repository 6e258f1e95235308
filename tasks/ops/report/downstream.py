"""Pair validity and the human evaluation, Best-of-N, RL and the correlation sections: picked from
the stages' metrics and Parquet, formatted, never recomputed."""
from __future__ import annotations

from tasks.ops.report import charts, fmt

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


def bon(curve: list[dict] | None, metrics: dict | None, nulls=frozenset()) -> dict | None:
    """The reported best-of-k curve (all domains; `expected`, or `first_k` under fidelity release) per RM with
    CIs, the reference lines dashed. Above MAX_RMS_SHOWN RMs the null baselines (`nulls`) are one dashed line
    (their median, the band their range) and one table row, and the chart draws the best RMs at the largest k."""
    if not curve:
        return None
    method = (metrics or {}).get("reported_method") or "expected"
    rows = [r for r in curve if r["domain"] == "all" and r["method"] == method]
    ks = sorted({r["k"] for r in rows})
    rms = sorted({r["rm"] for r in rows}, key=lambda rm: (rm in REFERENCE_LINES, rm))
    at = {(r["rm"], r["k"]): r for r in rows}
    listed, drawn, summarised = _bon_shown(rms, at, ks, nulls)
    series = [{"name": rm, "reference": rm in REFERENCE_LINES,
               "points": [{"x": k, "y": at[(rm, k)]["judge_score"], "lo": at[(rm, k)]["ci_low"],
                           "hi": at[(rm, k)]["ci_high"],
                           "title": f"{rm}, k = {k}: {fmt.num(at[(rm, k)]['judge_score'])} "
                                    f"{fmt.ci(at[(rm, k)]['ci_low'], at[(rm, k)]['ci_high'])}"}
                          for k in ks if (rm, k) in at]} for rm in drawn]
    table = [{"rm": rm, "reference": rm in REFERENCE_LINES,
              "cells": [{"score": fmt.num(at[(rm, k)]["judge_score"]),
                         "ci": fmt.ci(at[(rm, k)]["ci_low"], at[(rm, k)]["ci_high"], n=at[(rm, k)]["n_questions"]),
                         "gain": fmt.signed(at[(rm, k)]["gain_over_k1"]), "n": at[(rm, k)]["n_questions"]}
                        if (rm, k) in at else None for k in ks]} for rm in listed]
    if summarised:
        line, row = _null_range(summarised, at, ks)
        series.append(line)
        table.append(row)
    m = metrics or {}
    return {"ks": ks, "table": table, "chart": charts.line_chart(series, ks, "k (best of k samples)", "judge score"),
            "judge": m.get("judge"), "skipped": m.get("skipped_k") or m.get("skipped_ks"),
            "nulls": len(summarised), "left_out": len(listed) - len(drawn),
            "drawn": sum(rm not in REFERENCE_LINES for rm in drawn)}


def _bon_shown(rms: list[str], at: dict, ks: list, nulls) -> tuple[list[str], list[str], list[str]]:
    """(RMs in the table, RMs drawn, null baselines summarised): all of them up to MAX_RMS_SHOWN RMs; above,
    the null baselines summarised, the table every other RM, the chart the MAX_RMS_SHOWN best at the largest k."""
    from tasks.ops.report.board import MAX_RMS_SHOWN

    real = [rm for rm in rms if rm not in REFERENCE_LINES]
    if len(real) <= MAX_RMS_SHOWN or not ks:
        return rms, rms, []
    refs = [rm for rm in rms if rm in REFERENCE_LINES]
    others = [rm for rm in real if rm not in nulls]
    score = lambda rm: (at.get((rm, ks[-1])) or {}).get("judge_score")  # noqa: E731
    best = sorted(others, key=lambda rm: (score(rm) is None, -(score(rm) or 0), rm))[:MAX_RMS_SHOWN]
    return others + refs, sorted(best) + refs, [rm for rm in real if rm in nulls]


def _null_range(rms: list[str], at: dict, ks: list) -> tuple[dict, dict]:
    """The null baselines as one dashed line (median at each k, the band their lowest to highest) and one row."""
    import statistics

    name = f"null baselines ({len(rms)})"
    points, cells = [], []
    for k in ks:
        ys = sorted(at[(rm, k)]["judge_score"] for rm in rms if (rm, k) in at and at[(rm, k)]["judge_score"] is not None)
        if not ys:
            cells.append(None)
            continue
        mid = statistics.median(ys)
        points.append({"x": k, "y": mid, "lo": ys[0], "hi": ys[-1],
                       "title": f"{name}, k = {k}: median {fmt.num(mid)}, range {fmt.num(ys[0])}–{fmt.num(ys[-1])}"})
        gains = [at[(rm, k)]["gain_over_k1"] for rm in rms if (rm, k) in at and at[(rm, k)]["gain_over_k1"] is not None]
        cells.append({"score": f"{fmt.num(ys[0])}–{fmt.num(ys[-1])}", "ci": f"range of {len(ys)} RMs, median {fmt.num(mid)}",
                      "gain": f"median {fmt.signed(statistics.median(gains))}" if gains else fmt.DASH, "n": None})
    return {"name": name, "reference": True, "points": points}, {"rm": name, "reference": True, "cells": cells}


def rl(rows: list[dict] | None, metrics: dict | None) -> dict | None:
    """One row per RM (plus the untrained baseline): the judge's mean score over every held-out question
    (an empty or unjudgeable answer scores 0), how many were scored and invalid, and the gain over the
    baseline with its paired CI."""
    if rows is None:
        return None

    def key(r):
        return (not r.get("baseline"), -(r.get("mean_score") or 0), r.get("rm") or "")
    bars = charts.bars([{"label": f"{r.get('rm')}" + (" (baseline)" if r.get("baseline") else ""),
                         "value": r.get("mean_score"), "lo": r.get("ci_low"), "hi": r.get("ci_high"),
                         "reference": bool(r.get("baseline"))} for r in sorted(rows, key=key)], "judge score")
    m = metrics or {}
    return {"rows": [{"rm": r.get("rm"), "algorithm": r.get("algorithm"), "baseline": bool(r.get("baseline")),
                      "score": fmt.num(r.get("mean_score")),
                      "ci": fmt.ci(r.get("ci_low"), r.get("ci_high"), n=r.get("questions")),
                      "questions": fmt.num((r.get("questions") or 0) * (r.get("seeds") or 1)),
                      "scored": fmt.num(r.get("scored")), "seeds": _seeds(r),
                      "invalid": fmt.num(r.get("invalid_answers")),
                      "unparseable": fmt.num(r.get("unparseable_verdicts")),
                      "gain": fmt.DASH if r.get("baseline") else fmt.signed(r.get("gain_over_baseline")),
                      "gain_ci": "" if r.get("baseline") else fmt.ci(r.get("gain_ci_low"), r.get("gain_ci_high"),
                                                                      n=r.get("questions")),
                      "reward_failures": fmt.num(r.get("reward_failures"))}
                     for r in sorted(rows, key=key)],
            "chart": bars, "status": m.get("status"), "decoding": m.get("decoding"), "judge": m.get("judge"),
            "invalid_score": m.get("invalid_score"), "seed_spread": m.get("seed_spread")}


def _seeds(r: dict) -> str:
    """How many training seeds an RM's policy score averages, and their spread ("one seed": none measured)."""
    if r.get("baseline"):
        return fmt.DASH
    n = r.get("seeds") or 1
    return "one seed" if n == 1 else f"{n} (sd {fmt.num(r.get('seed_sd'))}, range {fmt.num(r.get('seed_range'))})"


def _rm_label(rm: str, point: dict) -> str:
    """The RM's name with what makes it not independent of the downstream judge, or in-distribution."""
    marks = (["in-distribution"] if point.get("in_distribution") else []) + [
        f"shares {what} with {point[key]}" for what, key in (("LLM", "shares_llm_with"), ("encoder", "shares_encoder_with"))
        if point.get(key)]
    return rm + (f" ({'; '.join(marks)})" if marks else "")


def primary_line(pr: dict | None) -> str | None:
    """The pre-registered test in one sentence: what was tested, estimate [CI], p against alpha, power."""
    if not pr or "estimate" not in pr:
        return None
    what = (f"{pr['statistic']} of {pr['benchmark']} accuracy ({pr['strategy']}) with {pr['method']} over "
            f"{pr['n_rms']} RMs, {pr.get('n_pairs', 0)} benchmark pairs, {pr['n_questions']} downstream questions, "
            f"H1 {pr['alternative']}")
    if pr.get("status") != "ok":
        return f"{what}: {pr.get('status')}"
    ci = fmt.ci(*pr["ci"]) if pr.get("ci") else f"(no interval: {pr.get('ci_note')})"
    verdict = "significant" if pr["significant"] else "not significant"
    power = (f"power {fmt.num(pr['power'], 2)} at the assumed effect {pr.get('effect')}, smallest effect detectable "
             f"at 80%: {pr.get('min_detectable_effect') or 'none up to 0.99'}" if pr.get("power") is not None
             else "power not simulated")
    observed = (f"; the good signal alone picked the chosen answer on {fmt.pct(pr['observed_signal_accuracy'])} of "
                "the pairs" if pr.get("observed_signal_accuracy") is not None else "")
    return (f"{what}: {fmt.num(pr['estimate'])} {ci}, p {fmt.p_value(pr['p'])}: {verdict} at alpha {pr['alpha']} "
            f"({power}{observed})")


def correlation(rows: list[dict] | None, points: list[dict] | None, metrics: dict | None) -> dict | None:
    """The benchmark × predictor × downstream × metric table: value with its CI over RMs and questions (and over
    questions alone), what a random and a reversed ranking get, raw and Holm p; the paired comparisons of
    benchmarks; one scatter per pairing, in-distribution RMs labelled."""
    from tasks.downstream.correlation.metrics import verdict
    from tasks.ops.report.benchmarks import level_of

    if rows is None:
        return None
    m = metrics or {}
    level = level_of(m)
    cells = list(dict.fromkeys((r["benchmark"], r.get("predictor") or "accuracy", r["downstream"])
                               for r in rows))   # the stage's order: correlation.benchmarks first to last
    table = [{"benchmark": b, "predictor": pr, "downstream": d, "metric": r["metric"], "value": fmt.num(r["value"]),
              "ci": fmt.ci(r["ci_low"], r["ci_high"], n=r["n_rms"]),
              "ci_questions": fmt.ci(r.get("ci_low_questions"), r.get("ci_high_questions"), n=r["n_rms"]),
              "random": fmt.num(r.get("null_random")), "reversed": fmt.num(r.get("null_reversed")),
              "p": fmt.p_value(r["p_value"]), "p_holm": fmt.p_value(r.get("p_holm")), "n_rms": r["n_rms"],
              "status": verdict(r["status"], r.get("p_holm"), r["p_value"], level)}
             for b, pr, d in cells for r in rows
             if (r["benchmark"], r.get("predictor") or "accuracy", r["downstream"]) == (b, pr, d)]
    scatters = []
    for b, pr, d in cells:
        if pr != "accuracy":
            continue
        mine = [p for p in points or [] if p["benchmark"] == b and p["downstream"] == d
                and (p.get("predictor") or "accuracy") == pr]
        chart = charts.scatter([{"label": _rm_label(p["rm"], p), "x": p["accuracy"], "y": p["downstream_score"],
                                 "title": f"{_rm_label(p['rm'], p)}: accuracy {fmt.pct(p['accuracy'])} "
                                          f"(rank {p['benchmark_rank']}), {d} {fmt.num(p['downstream_score'])} "
                                          f"(rank {p['downstream_rank']})"}
                                for p in mine], f"{b} benchmark accuracy", f"{d} downstream score")
        scatters.append({"benchmark": b, "downstream": d, "chart": chart, "points": len(mine),
                         "in_distribution": sorted(p["rm"] for p in mine if p.get("in_distribution"))})
    compared = [{"pair": pair, "downstream": d, "metric": metric, "n_rms": cell["n_rms"],
                 "status": verdict(cell["status"], v.get("p_holm"), v.get("p_value"), level),
                 "difference": fmt.signed(v.get("difference")), "ci": fmt.ci(v.get("ci_low"), v.get("ci_high")),
                 "p": fmt.p_value(v.get("p_value")), "p_holm": fmt.p_value(v.get("p_holm"))}
                for pair, per in sorted((m.get("comparisons") or {}).items()) for d, cell in sorted(per.items())
                for metric, v in cell.items() if isinstance(v, dict)]
    return {"table": table, "scatters": scatters, "strategy": m.get("strategy"), "status": m.get("status"),
            "excluded": m.get("excluded_rms") or [], "conventions": sorted((m.get("conventions") or {}).items()),
            "min_rms": m.get("min_rms"), "ci_method": m.get("ci_method"), "comparisons": compared,
            "in_distribution": m.get("in_distribution") or [], "alpha": level,
            "significant": sum(t["status"] == "significant" for t in table), "tested": sum(t["p"] != fmt.DASH for t in table),
            "shared": sorted({f"{rm} shares {what} with {', '.join(roles)}" for what, key in
                              (("LLM", "shares_llm_with"), ("encoder", "shares_encoder_with"))
                              for rm, roles in (m.get(key) or {}).items()}),
            "primary": primary_line(m.get("primary")),
            "positive_control": bool((m.get("primary") or {}).get("positive_control"))}


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
