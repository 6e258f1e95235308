"""How well one ranking of RMs (by a benchmark predictor) agrees with another (by downstream score).
Every metric comes from a maintained library; this module only fixes the conventions. The bootstrap
and the permutation test evaluate thousands of rankings of a few RMs, so they use batch.py's batched
form of the same metrics; tests/test_correlation_metrics.py checks it against these library versions
(to 1e-12, NaN where they give NaN). The conventions:

- Higher is better on both sides.
- Ties: NDCG and RBO need one strict order, so equal values are ordered by RM name (the name that
  sorts first ranks higher). Pearson r, Spearman ρ (average ranks), Kendall τ-b and weighted τ handle
  ties themselves, which is fairer than any arbitrary order.
- NDCG (sklearn.metrics.ndcg_score): gain = the RM's downstream score as is (linear gain; judge
  scores lie in [0, 1]), RMs placed in the order of the benchmark, DCG = Σ gain / log2(rank + 1)
  over all n RMs, divided by the DCG of the downstream order. 1 = the benchmark's order is the
  downstream order. Close downstream scores keep NDCG near 1 whatever the order, so it is shown with
  the value a random ranking gets (the mean over permutations) and a reversed one on the same data.
- RBO (ranked_overlap.rbo): extrapolated RBO of the two orders, persistence p (top-weighted); not 0
  for a reversed list of the same RMs: read it next to its random and reversed values too.
- Weighted τ (scipy.stats.weightedtau): hyperbolic weights, top ranks count more.
- Significance: one-sided permutation test (H1: positive agreement) permuting the benchmark values
  across RMs (scipy.stats.permutation_test; exact when n! ≤ the number of resamples), a permutation
  counting when its statistic minus the observed, rounded to 12 decimals, is ≥ 0 (`at_least`);
  Holm-adjusted over each benchmark's family (metrics × predictors × downstreams).
- CIs: resample.py (RMs and questions resampled together).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from ranked_overlap import rbo as _rbo
from scipy import stats
from sklearn.metrics import ndcg_score

from tasks.core.determinism import settled
from tasks.downstream.correlation import batch

METRICS = ("pearson", "spearman", "kendall_tau_b", "weighted_tau", "ndcg", "rbo")
CONVENTIONS = {   # written into metrics/correlation.json
    "ndcg_gain": "gain = the RM's downstream score as is (linear); RMs ordered by the benchmark predictor; "
                 "sklearn ndcg_score over all RMs",
    "rbo": "extrapolated RBO (ranked-overlap) of the two orders, persistence rbo_p",
    "ties": "NDCG and RBO: equal values ordered by RM name; Pearson, Spearman, Kendall tau-b, weighted tau: "
            "the statistic's own tie handling",
    "p_value": "one-sided permutation test (benchmark values permuted across RMs), H1: positive agreement",
    "p_holm": "exploratory: Holm-adjusted p over one family, every p-value of the run (each benchmark x predictor "
              "x downstream x metric, each comparison); the pre-registered test is `primary`",
    "null_random": "the metric's mean over the permutations of the benchmark values: what a random ranking gets",
    "null_reversed": "the metric when the benchmark ranks the RMs in the reverse of the downstream order",
    "predictors": "accuracy: mean credit over the questions; worst_domain: the lowest per-domain mean credit",
}


def too_few(n: int, minimum: int) -> str | None:
    return f"too few RMs (n={n} < {minimum})" if n < minimum else None


SIGNIFICANT, NOT_SIGNIFICANT = "significant", "not significant"


def alpha(p: dict) -> float:
    """The level a correlation is read at: the primary hypothesis's alpha where params name one, else 1 - ci."""
    return float((p.get("primary") or {}).get("alpha") or round(1 - float(p["ci"]), 10))


def verdict(status: str | None, p_holm, p_value, level: float) -> str:
    """What a reader is told: the status when no p was computed (e.g. too few RMs), else whether the
    Holm-adjusted p (the raw one where no family was adjusted) is below `level`; never "ok" alone."""
    p = p_holm if p_holm is not None else p_value
    if status not in (None, "ok") or p is None or not math.isfinite(p):
        return status if status not in (None, "ok") else "no p-value"
    return SIGNIFICANT if p < level else NOT_SIGNIFICANT


def strict_order(values, names) -> list[int]:
    """Indices best first; equal values (to DECISION_DECIMALS) by RM name."""
    values = settled(np.asarray(values, dtype=float))
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


def pearson(bench, down, names, p) -> float:
    return float(stats.pearsonr(bench, down).statistic)


FUNCTIONS = {"pearson": pearson, "spearman": spearman, "kendall_tau_b": kendall_tau_b, "weighted_tau": weighted_tau,
             "ndcg": ndcg, "rbo": rbo}


def compute(bench, down, names, rbo_p: float, metrics=METRICS) -> dict[str, float]:
    """Every metric; NaN where undefined (constant input, missing values, no positive gain)."""
    bench, down = np.asarray(bench, dtype=float), np.asarray(down, dtype=float)
    if not (np.isfinite(bench).all() and np.isfinite(down).all()):
        return {m: math.nan for m in metrics}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # scipy warns on constant input and returns NaN: NaN is the answer
        return {m: FUNCTIONS[m](bench, down, names, rbo_p) for m in metrics}


def _batched(metric: str, down, names, rbo_p: float):
    """The metric of permuted benchmark values (rows of `b`, or one 1-D vector) against `down`, batched."""
    ties = batch.tie_keys(names, np.arange(len(names))[None, :])

    def statistic(b, axis=-1):
        rows = np.atleast_2d(b)
        shape = rows.shape
        got = batch.compute(rows, np.broadcast_to(down, shape), np.broadcast_to(ties, shape), rbo_p, (metric,))
        return got[metric] if np.ndim(b) > 1 else got[metric][0]
    return statistic


def permutation(bench, down, names, rbo_p: float, n_resamples: int, rng_for) -> dict[str, tuple[float, float]]:
    """Per metric (one-sided permutation p-value, the mean of the permutation distribution = what a
    random ranking gets); rng_for(metric) gives its seeded generator."""
    bench, down = np.asarray(bench, dtype=float), np.asarray(down, dtype=float)
    observed = compute(bench, down, names, rbo_p)
    out = {}
    for m in METRICS:
        if not math.isfinite(observed[m]):
            out[m] = (math.nan, math.nan)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.permutation_test((bench,), _batched(m, down, names, rbo_p), vectorized=True,
                                         permutation_type="pairings", n_resamples=n_resamples,
                                         alternative="greater", rng=rng_for(m))
        null = np.asarray(res.null_distribution, dtype=float)
        out[m] = (at_least(null, observed[m], exact=math.factorial(len(bench)) <= n_resamples),
                  float(np.nanmean(null)) if np.isfinite(null).any() else math.nan)
    return out


def at_least(null: np.ndarray, observed: float, exact: bool) -> float:
    """The one-sided permutation p (H1: greater) as scipy.stats.permutation_test counts it (exact: the share
    of all permutations; randomised: (1 + hits) / (1 + resamples)), a hit being a null value whose difference
    from the observed, rounded to DECISION_DECIMALS, is >= 0: a permutation as good as the data counts
    whichever way its last bits fall (scipy's own tolerance is relative, so none at an observed 0)."""
    with np.errstate(invalid="ignore"):
        hits = int(np.sum(settled(null - observed) >= 0))
    return hits / len(null) if exact else (hits + 1) / (len(null) + 1)


def p_values(bench, down, names, rbo_p: float, n_resamples: int, rng_for) -> dict[str, float]:
    return {m: p for m, (p, _) in permutation(bench, down, names, rbo_p, n_resamples, rng_for).items()}


def reversed_values(down, names, rbo_p: float) -> dict[str, float]:
    """Each metric for a benchmark that ranks the RMs in exactly the reverse of the downstream order."""
    down = np.asarray(down, dtype=float)
    return compute(-down, down, names, rbo_p)


def resampled_means(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """x: RMs × questions (NaN = no value for that question); weights: resamples × questions
    (how often each question was drawn) -> resamples × RMs weighted means."""
    have = ~np.isnan(x)
    num = weights @ np.where(have, x, 0.0).T
    den = weights @ have.T.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return settled(num / den)   # equal means tie exactly, whatever order the BLAS kernel summed in


def holm(p_values: dict) -> dict:
    """Holm-Bonferroni adjusted p-values over the tests that ran (None/NaN ones stay None)."""
    from tasks.stages.human_eval.analysis import holm as _holm

    return _holm({k: (p if p is not None and math.isfinite(p) else None) for k, p in p_values.items()})


def num(x) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None
