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
  wrapper and its input checks: the rows here are 1-D, finite float64, which is all they look at.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from tasks.core.determinism import settled

_weightedtau = getattr(stats.weightedtau, "__wrapped__", stats.weightedtau)
try:   # what weightedtau computes for two finite float64 rows (rank=True): without its checks, 1/3 of 7 s at 106 RMs
    from scipy.stats._stats import _weightedrankedtau
except ImportError:   # another scipy layout: the public function, row by row
    _weightedrankedtau = None


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
    # one RM against those after it at a time: the pairs × resamples arrays of the all-pairs form took 0.75 s a
    # call at 106 RMs; the counts are whole numbers, so the sums (and tau) are the same bits in any order
    n = x.shape[1]
    untied_x, untied_y, agree = (np.zeros(len(x), dtype=np.int64) for _ in range(3))
    for k in range(n - 1):
        sx, sy = np.sign(x[:, k + 1:] - x[:, k:k + 1]), np.sign(y[:, k + 1:] - y[:, k:k + 1])
        untied_x += (sx != 0).sum(axis=1)   # tot - xtie, tot - ytie in scipy
        untied_y += (sy != 0).sum(axis=1)
        agree += (sx * sy).sum(axis=1).astype(np.int64)
    tau = np.minimum(1.0, np.maximum(-1.0, agree / np.sqrt(untied_x) / np.sqrt(untied_y)))
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
    if _weightedrankedtau is None or x.dtype != np.float64 or y.dtype != np.float64:
        return np.array([float(_weightedtau(a, b).statistic) for a, b in zip(x, y)])
    # scipy's own arithmetic for rank=True: the two directions' sum, halved (the same bits)
    return np.array([float((_weightedrankedtau(a, b, None, None, True) + _weightedrankedtau(b, a, None, None, True)) / 2)
                     for a, b in zip(x, y)])


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
