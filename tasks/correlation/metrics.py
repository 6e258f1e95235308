"""How well one ranking of RMs (by benchmark accuracy) agrees with another (by downstream score).
Every metric comes from a maintained library; this module only fixes the conventions:

- Higher is better on both sides.
- Ties: NDCG and RBO need one strict order, so equal values are ordered by RM name (the name that
  sorts first ranks higher). Spearman ρ (average ranks), Kendall τ-b and weighted τ handle ties
  themselves, which is fairer than any arbitrary order.
- NDCG (sklearn.metrics.ndcg_score): gain = the RM's downstream score as is (linear gain; judge
  scores lie in [0, 1]), RMs placed in the order of their benchmark accuracy, DCG = Σ gain / log2(rank + 1)
  over all n RMs, divided by the DCG of the downstream order. 1 = the benchmark's order is the
  downstream order. Close downstream scores keep NDCG near 1 whatever the order: read it next to ρ.
- RBO (ranked_overlap.rbo): extrapolated RBO of the two orders, persistence p (top-weighted).
- Weighted τ (scipy.stats.weightedtau): hyperbolic weights, top ranks count more.
- Significance: one-sided permutation test (H1: positive agreement) permuting the benchmark
  accuracies across RMs (scipy.stats.permutation_test; exact when n! ≤ the number of resamples).
- CIs: percentile bootstrap over questions; each resample recomputes every RM's accuracy and
  downstream score, re-ranks the RMs and recomputes the metric.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from ranked_overlap import rbo as _rbo
from scipy import stats
from sklearn.metrics import ndcg_score

MIN_RMS = 4
METRICS = ("ndcg", "rbo", "weighted_tau", "spearman", "kendall_tau_b")
CONVENTIONS = {   # written into metrics/correlation.json
    "ndcg_gain": "gain = the RM's downstream score as is (linear); RMs ordered by benchmark accuracy; "
                 "sklearn ndcg_score over all RMs",
    "rbo": "extrapolated RBO (ranked-overlap) of the two orders, persistence rbo_p",
    "ties": "NDCG and RBO: equal values ordered by RM name; Spearman, Kendall tau-b, weighted tau: the statistic's own tie handling",
    "p_value": "one-sided permutation test (benchmark accuracies permuted across RMs), H1: positive agreement",
    "ci": "percentile bootstrap over questions, RMs re-ranked in every resample",
}


def too_few(n: int) -> str | None:
    return f"too few RMs (n={n} < {MIN_RMS})" if n < MIN_RMS else None


def strict_order(values, names) -> list[int]:
    """Indices best first; equal values by RM name."""
    return sorted(range(len(names)), key=lambda i: (-values[i], names[i]))


def ranks(values, names) -> np.ndarray:
    """1 = best, under strict_order."""
    out = np.empty(len(names), dtype=np.int64)
    out[strict_order(values, names)] = np.arange(1, len(names) + 1)
    return out


def ndcg(bench, down, names, p) -> float:
    if np.any(down < 0) or not np.any(down > 0):   # NDCG is undefined without non-negative, non-zero gains
        return math.nan
    order_score = (len(names) - ranks(bench, names)).astype(float)   # a strict order, ties already broken
    return float(ndcg_score(np.asarray([down], dtype=float), [order_score]))


def rbo(bench, down, names, p) -> float:
    return float(_rbo([names[i] for i in strict_order(bench, names)],
                      [names[i] for i in strict_order(down, names)], p=p))


def weighted_tau(bench, down, names, p) -> float:
    return float(stats.weightedtau(bench, down).statistic)


def spearman(bench, down, names, p) -> float:
    return float(stats.spearmanr(bench, down).statistic)


def kendall_tau_b(bench, down, names, p) -> float:
    return float(stats.kendalltau(bench, down, variant="b").statistic)


FUNCTIONS = {"ndcg": ndcg, "rbo": rbo, "weighted_tau": weighted_tau, "spearman": spearman,
             "kendall_tau_b": kendall_tau_b}


def compute(bench, down, names, rbo_p: float) -> dict[str, float]:
    """Every metric; NaN where undefined (constant input, missing values, no positive gain)."""
    bench, down = np.asarray(bench, dtype=float), np.asarray(down, dtype=float)
    if not (np.isfinite(bench).all() and np.isfinite(down).all()):
        return {m: math.nan for m in METRICS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # scipy warns on constant input and returns NaN: NaN is the answer
        return {m: FUNCTIONS[m](bench, down, names, rbo_p) for m in METRICS}


def p_values(bench, down, names, rbo_p: float, n_resamples: int, rng_for) -> dict[str, float]:
    """One-sided permutation p-value per metric; rng_for(metric) gives its seeded generator."""
    bench, down = np.asarray(bench, dtype=float), np.asarray(down, dtype=float)
    observed = compute(bench, down, names, rbo_p)
    out = {}
    for m in METRICS:
        if not math.isfinite(observed[m]):
            out[m] = math.nan
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.permutation_test((bench,), lambda b, f=FUNCTIONS[m]: f(b, down, names, rbo_p),
                                         permutation_type="pairings", n_resamples=n_resamples,
                                         alternative="greater", rng=rng_for(m))
        out[m] = float(res.pvalue)
    return out


def resampled_means(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """x: RMs × questions (NaN = no value for that question); weights: resamples × questions
    (how often each question was drawn) -> resamples × RMs weighted means."""
    have = ~np.isnan(x)
    num = weights @ np.where(have, x, 0.0).T
    den = weights @ have.T.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def bootstrap_ci(bench_draws: np.ndarray, down_draws: np.ndarray, names, rbo_p: float,
                 ci: float) -> dict[str, tuple[float, float]]:
    """Percentile CI per metric from resamples × RMs draws of both sides; NaN resamples are left out."""
    values = {m: [] for m in METRICS}
    for b, d in zip(bench_draws, down_draws):
        for m, v in compute(b, d, names, rbo_p).items():
            values[m].append(v)
    out = {}
    for m, vs in values.items():
        vs = np.asarray(vs, dtype=float)
        vs = vs[np.isfinite(vs)]
        out[m] = tuple(float(q) for q in np.quantile(vs, [(1 - ci) / 2, (1 + ci) / 2])) if len(vs) else (math.nan,) * 2
    return out


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def evaluate(bench, down, names, rbo_p: float, permutations: int, ci: float, draws, rng_for) -> dict[str, dict]:
    """Per metric: value, CI (None without per-question draws), p-value and a status.
    draws: (bench, down) resamples × RMs arrays, or None."""
    values = compute(bench, down, names, rbo_p)
    pvals = p_values(bench, down, names, rbo_p, permutations, rng_for)
    cis = bootstrap_ci(*draws, names, rbo_p, ci) if draws is not None else {}
    out = {}
    for m in METRICS:
        lo, hi = cis.get(m, (None, None))
        ok = math.isfinite(values[m])
        out[m] = {"value": _num(values[m]), "ci_low": _num(lo) if ok else None, "ci_high": _num(hi) if ok else None,
                  "p_value": _num(pvals[m]),
                  "status": "ok" if ok else "undefined (constant scores, or no positive NDCG gain)"}
    return out


def empty(status: str) -> dict[str, dict]:
    return {m: {"value": None, "ci_low": None, "ci_high": None, "p_value": None, "status": status} for m in METRICS}
