"""bon_report: best-of-k judge scores per RM for k = 1, 2, 4, … ≤ N, with an `(oracle)` line (the
judge picks for itself: the ceiling) and a `(random)` line (a uniform pick: the floor), percentile
bootstrap CIs over questions, metrics/bon.json and plots/bon_curve.png.

The curve and plot report `expected` (every size-k subset: lower variance); `first_k` (the
release's rule) is kept beside it in both tables for comparison."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from tasks.downstream.bon.select import FAILED_RULE, METHODS, best_of_k, pool_size, rank_key, uniform_pick, usable
from tasks.core.determinism import stable_rng
from tasks.core.errors import ConfigError
from tasks.downstream.judging import bootstrap_means, percentile_ci

ORACLE, RANDOM, ALL = "(oracle)", "(random)", "all"
REPORTED = "expected"
# the method the curve, plot and metrics report: ties split evenly over subsets (prbench) | the first k samples,
# ties to the earliest (BoN/score.py:173-190: Python's max keeps the first of equal scores)
REPORTED_METHOD = {"corrected": REPORTED, "release": "first_k"}   # common.fidelity


def ks_for(n: int, max_k: int) -> tuple[list[int], list[int]]:
    """(powers of two up to max_k that are <= N, those skipped because k > N)."""
    powers = [2 ** e for e in range(max(int(max_k), 1).bit_length()) if 2 ** e <= max_k]
    return [k for k in powers if k <= n], [k for k in powers if k > n]


def per_question_rows(samples, judged, scores: dict[str, dict], ks) -> tuple[list[dict], dict]:
    """Rows for every RM and both reference lines; plus per-line counts. Invalid samples and unjudged answers
    are no candidate for any line; an RM's failed score keeps its candidate, ranked last (select.rank_key)."""
    questions = defaultdict(list)
    for r in samples:
        questions[(r["question_id"], r["domain"])].append(r)
    rows, excluded = [], {}
    for line in [*sorted(scores), ORACLE, RANDOM]:
        counts = {"invalid_samples": 0, "no_rm_score": 0, "no_judge_score": 0, "questions_without_candidates": 0,
                  "questions_without_rm_score": 0}
        for (qid, domain), rs in sorted(questions.items()):
            judge, cands = {}, []
            for r in rs:
                j = judged.get((qid, r["answer_hash"])) if r["valid"] else None
                if not r["valid"]:
                    counts["invalid_samples"] += 1
                elif not usable(j):
                    counts["no_judge_score"] += 1
                else:
                    s = j if line in (ORACLE, RANDOM) else scores[line].get((qid, r["sample_index"]))
                    counts["no_rm_score"] += not usable(s)
                    judge[r["sample_index"]] = j
                    cands.append((r["sample_index"], rank_key(s, j)))
            counts["questions_without_candidates"] += not cands
            counts["questions_without_rm_score"] += bool(cands) and all(key[0] == 0 for _, key in cands)
            for k in ks:
                for m in METHODS:
                    v = uniform_pick(judge, k, m) if line == RANDOM else best_of_k(cands, judge, k, m)
                    rows.append({"rm": line, "question_id": qid, "domain": domain, "k": k, "method": m,
                                 "judge_score": None if v is None else round(v, 6),
                                 "candidates": pool_size(cands, k, m)})
        excluded[line] = counts
    return rows, excluded


def _r6(x):
    return None if x is None or np.isnan(x) else round(float(x), 6)


def _bootstrap_ci(values, b: int, ci: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Percentile CI of the mean at every k (a column), over resamples of the questions shared by every k."""
    if not b:
        return np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    return percentile_ci(bootstrap_means(values, b, rng), ci)


def curve_rows(per_question: list[dict], ks, b: int, ci: float, seed: int) -> list[dict]:
    groups = defaultdict(dict)
    for r in per_question:
        for domain in (ALL, r["domain"]):
            groups[(r["rm"], domain, r["method"])].setdefault(r["question_id"], {})[r["k"]] = r["judge_score"]
    out = []
    for (line, domain, method), by_q in sorted(groups.items()):
        values = np.array([[np.nan if v.get(k) is None else v[k] for k in ks] for _, v in sorted(by_q.items())])
        mask = ~np.isnan(values)
        n = mask.sum(axis=0)
        mean = np.where(n > 0, np.nansum(values, axis=0) / np.maximum(n, 1), np.nan)
        lo, hi = _bootstrap_ci(values, b, ci, stable_rng(seed, "bon", domain))
        for j, k in enumerate(ks):
            out.append({"rm": line, "domain": domain, "k": k, "method": method, "judge_score": _r6(mean[j]),
                        "ci_low": _r6(lo[j]), "ci_high": _r6(hi[j]), "gain_over_k1": _r6(mean[j] - mean[0]),
                        "n_questions": int(n[j])})
    return out


def report_metrics(curve, excluded, not_capable, *, n, ks, skipped, judge, reported: str = REPORTED) -> dict:
    lines = {}
    for r in curve:
        if r["domain"] == ALL:
            full = {"score": r["judge_score"], "ci": [r["ci_low"], r["ci_high"]], "gain_over_k1": r["gain_over_k1"],
                    "n_questions": r["n_questions"]}
            lines.setdefault(r["rm"], {"excluded": excluded[r["rm"]]}).setdefault(r["method"], {})[str(r["k"])] = \
                full if r["method"] == reported else r["judge_score"]
    per_domain = defaultdict(dict)
    for r in curve:
        if r["domain"] != ALL and r["method"] == reported and ks and r["k"] == ks[-1]:
            per_domain[r["rm"]][r["domain"]] = r["judge_score"]
    return {"n": n, "ks": ks, "skipped_ks_above_n": skipped, "judge": judge, "reported_method": reported,
            "failed_rm_score": FAILED_RULE,
            "methods": {"expected": "mean over all size-k subsets of usable candidates (curve, plot)",
                        "first_k": "first k samples, ties to the earliest: the release's rule (kept for comparison)"},
            "lines": lines, f"per_domain_{reported}_at_max_k": dict(per_domain),
            "not_bon_capable": not_capable, "run": {}}   # no model calls in this stage


PLOT_LABEL = {REPORTED: f"{REPORTED} over subsets", "first_k": "first k samples, ties to the earliest"}


def plot_curve(curve: list[dict], ks, n: int, ci: float, path, reported: str = REPORTED) -> None:
    from tasks.core.plots import plt, save

    fig, ax = plt.subplots(figsize=(6.4, 4))
    rows = [r for r in curve if r["domain"] == ALL and r["method"] == reported]
    style = {ORACLE: dict(color="black", ls="--"), RANDOM: dict(color="grey", ls=":")}
    for line in sorted({r["rm"] for r in rows}, key=lambda x: (x in (ORACLE, RANDOM), x)):
        rs = sorted((r for r in rows if r["rm"] == line and r["judge_score"] is not None), key=lambda r: r["k"])
        x = [r["k"] for r in rs]
        ax.plot(x, [r["judge_score"] for r in rs], marker="o", ms=3, label=line, **style.get(line, {}))
        if line not in style and all(r["ci_low"] is not None for r in rs):
            ax.fill_between(x, [r["ci_low"] for r in rs], [r["ci_high"] for r in rs], alpha=0.12)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k (best of k candidates)")
    ax.set_ylabel("rubric judge score of the pick")
    ax.set_title(f"Best-of-k of N={n} ({PLOT_LABEL[reported]}, {ci:.0%} bootstrap CI)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    save(fig, path)


def run(params: dict, inputs: dict, out: dict) -> dict:
    from tasks.core.artifacts import read_table, write_table
    from tasks.core.runlog import write_metrics
    from tasks.core.fidelity import of, pick
    from tasks.downstream.bon import REPORT_PARAMS, bon_params

    p, reported = bon_params(params, REPORT_PARAMS), pick(REPORTED_METHOD, of(params))
    samples = read_table(inputs["samples"], "bon_samples").to_pylist()
    judged_rows = read_table(inputs["judged"], "bon_judged").to_pylist()
    judged = {(r["question_id"], r["answer_hash"]): r["judge_score"] for r in judged_rows}
    scores, strategies, not_capable = {}, {}, []
    for rm, path in sorted(inputs["scores"].items()):
        if rm in (ORACLE, RANDOM):
            raise ConfigError(f"scoring.rms: '{rm}' is reserved for a BoN reference line; rename the RM")
        rows = read_table(path, "bon_scores").to_pylist()
        if not rows and samples:   # bon_score writes an empty table for a pairwise-only RM
            not_capable.append(rm)
            continue
        scores[rm] = {(r["question_id"], r["sample_index"]): r["score"] for r in rows}
        strategies[rm] = rows[0]["strategy"] if rows else None
    n = max((r["sample_index"] for r in samples), default=-1) + 1
    ks, skipped = ks_for(n, p["max_k"])
    per_q, excluded = per_question_rows(samples, judged, scores, ks)
    curve = curve_rows(per_q, ks, int(p["bootstrap"]), float(p["ci"]), int(params["common"]["seed"]))
    write_table(per_q, out["per_question"], "bon_per_question")
    write_table(curve, out["curve"], "bon_curve")
    metrics = report_metrics(curve, excluded, not_capable, n=n, ks=ks, skipped=skipped,
                             judge=judged_rows[0]["judge"] if judged_rows else None, reported=reported)
    metrics.update(questions=len({r["question_id"] for r in samples}), strategies=strategies)
    write_metrics(metrics, out["metrics"])
    plot_curve(curve, ks, n, float(p["ci"]), out["plot"], reported)
    return metrics


# --- the stage as flows/stage.py runs it ------------------------------------------------------------

def stage_inputs(params: dict, key: None, declared: dict) -> dict:
    """Samples, verdicts, and the scores of the RMs in params that were scored."""
    from tasks.core.artifacts import existing
    from tasks.downstream import bon

    return {**declared, "scores": existing({rm: bon.scores(rm)["scores"] for rm in sorted(params["scoring"]["rms"])})}


def stage_rows(out: dict) -> list[dict]:
    from tasks.core.artifacts import read_table

    return read_table(out["curve"], "bon_curve").to_pylist()
