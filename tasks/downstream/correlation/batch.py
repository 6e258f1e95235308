"""The metrics of metrics.py over a whole batch of resamples at once (resamples × RMs arrays), for the
bootstrap: one library call per resample costs far more than the arithmetic on ~5 RMs. Same conventions
as metrics.py; tests/test_correlation_metrics.py checks every metric here against the library version
(metrics.compute) to 1e-12, NaN where it gives NaN, on seeded random inputs with ties, constant rows,
duplicated RMs and zero/negative gains.

- Pearson r: scipy.stats.pearsonr along axis 1 (the library's own batched form).
- Spearman ρ: average ranks (scipy.stats.rankdata along axis 1), then the correlation as np.corrcoef
  computes it (what spearmanr does per pair).
- Kendall τ-b: concordant minus discordant pairs over √(pairs untied in x) √(pairs untied in y) from
  pairwise sign products, scipy.stats.kendalltau's formula (NaN when one side is constant).
- NDCG: sklearn ndcg_score's arithmetic (tie-averaged DCG, which without ties in the benchmark's strict
  order is Σ gain × the differences of the cumulative log2 discount), over the ideal DCG.
- RBO: ranked_overlap.rbo's extrapolated sum, from the overlap of the two orders at each depth.
- Weighted τ: scipy.stats.weightedtau per resample (no exact batched form), without its axis/NaN
  wrapper: the rows here are 1-D and finite, which is all the wrapper checks.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from tasks.core.determinism import settled

_weightedtau = getattr(stats.weightedtau, "__wrapped__", stats.weightedtau)


def tie_keys(names: list[str], rm_index: np.ndarray) -> np.ndarray:
    """resamples × n integers ordering equal values as metrics.strict_order does on resample._names:
    by RM name, copies of one RM (and equal names) by position."""
    n = rm_index.shape[1]
    name_rank = np.unique(np.asarray(names, dtype=object), return_inverse=True)[1].reshape(-1)
    return name_rank[rm_index] * n + np.arange(n)


def strict_ranks(values: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """Per row, 0 = best: higher value first, equal values (to DECISION_DECIMALS) by the lower tie key."""
    order = np.lexsort((ties, -settled(values)), axis=-1)
    out = np.empty_like(order)
    np.put_along_axis(out, order, np.arange(values.shape[1]), axis=1)
    return out


def pearson(x, y):
    return stats.pearsonr(x, y, axis=1).statistic


def spearman(x, y):
    rx, ry = (stats.rankdata(v, axis=1) for v in (x, y))
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    inv = 1 / (x.shape[1] - 1)
    sxx, syy, sxy = ((a * b).sum(axis=1) * inv for a, b in ((rx, rx), (ry, ry), (rx, ry)))
    r = np.clip(sxy / np.sqrt(syy) / np.sqrt(sxx), -1, 1)
    constant = (x == x[:, :1]).all(axis=1) | (y == y[:, :1]).all(axis=1)
    return np.where(constant, np.nan, r)


def kendall_tau_b(x, y):
    i, j = np.triu_indices(x.shape[1], 1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    untied_x, untied_y = (sx != 0).sum(axis=1), (sy != 0).sum(axis=1)   # tot - xtie, tot - ytie in scipy
    tau = np.minimum(1.0, np.maximum(-1.0, (sx * sy).sum(axis=1) / np.sqrt(untied_x) / np.sqrt(untied_y)))
    return np.where((untied_x == 0) | (untied_y == 0), np.nan, tau)


def ndcg(x, y, bench_rank):
    n = x.shape[1]
    discount = 1 / (np.log(np.arange(n) + 2) / np.log(2))
    cumulative = np.cumsum(discount)
    steps = np.concatenate([cumulative[:1], np.diff(cumulative)])
    gains = np.empty_like(y)
    np.put_along_axis(gains, bench_rank, y, axis=1)   # gains in the benchmark's order
    dcg = (gains * steps).sum(axis=1)
    ideal = np.vecdot(-np.sort(-y, axis=1), discount)   # the dot product sklearn takes, bit for bit
    undefined = (y < 0).any(axis=1) | ~(y > 0).any(axis=1)
    return np.where(undefined, np.nan, dcg / np.where(undefined, 1.0, ideal))


def rbo(bench_rank, down_rank, p: float):
    depth = bench_rank.shape[1]
    deepest = np.maximum(bench_rank, down_rank) + 1   # the depth from which an RM is in both prefixes
    weighted = np.zeros(len(bench_rank))
    for d in range(1, depth + 1):
        overlap = (deepest <= d).sum(axis=1)
        weighted += p ** d * (overlap / d)
    score = (depth / depth) * p ** depth + ((1.0 - p) / p) * weighted
    return np.minimum(1.0, np.maximum(0.0, score))


def weighted_tau(x, y):
    return np.array([float(_weightedtau(a, b).statistic) for a, b in zip(x, y)])


def compute(bench: np.ndarray, down: np.ndarray, ties: np.ndarray, rbo_p: float, metrics) -> dict:
    """Per metric, its value in every row (NaN where undefined, and in every metric of a row with a
    non-finite value). bench, down: resamples × RMs; ties: tie_keys."""
    bench, down = np.asarray(bench, dtype=float), np.asarray(down, dtype=float)
    finite = np.isfinite(bench).all(axis=1) & np.isfinite(down).all(axis=1)
    x, y = np.where(finite[:, None], bench, 0.0), np.where(finite[:, None], down, 0.0)
    if "ndcg" in metrics or "rbo" in metrics:
        bench_rank = strict_ranks(x, ties)
    functions = {"pearson": lambda: pearson(x, y), "spearman": lambda: spearman(x, y),
                 "kendall_tau_b": lambda: kendall_tau_b(x, y), "weighted_tau": lambda: weighted_tau(x, y),
                 "ndcg": lambda: ndcg(x, y, bench_rank),
                 "rbo": lambda: rbo(bench_rank, strict_ranks(y, ties), float(rbo_p))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # constant rows: NaN is the answer, as in metrics.compute
        with np.errstate(invalid="ignore", divide="ignore"):
            return {m: np.where(finite, functions[m](), np.nan) for m in metrics}
