"""Uncertainty of a correlation between two RM rankings, from both sources that matter:

- which questions were asked: each resample draws the questions with replacement (multinomial
  counts, one draw shared by every side, so sides over the same questions move together) and
  recomputes every RM's benchmark value and downstream score;
- which RMs were chosen: each resample also draws n RMs with replacement from the n compared; an RM
  drawn twice is two tied entries, in the same order on both sides.
The interval is the percentile interval of the metric over the resamples; a resample where the
metric is undefined (e.g. every drawn RM the same one) is left out and counted. A CI over questions
alone is kept beside it: with few RMs it is far too narrow, which is the point of showing both.

`paired_difference` is the test "benchmark X predicts downstream better than benchmark Y": the
difference of their correlations with the same downstream, over the same resamples of RMs and
questions, with its percentile CI and a one-sided bootstrap p (share of resamples where X is not better: the
difference, rounded to tasks/core/determinism.DECISION_DECIMALS, at or below zero)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tasks.core.determinism import settled
from tasks.downstream.correlation import batch
from tasks.downstream.correlation import metrics as M

METHOD = ("two-level percentile bootstrap: each resample draws the RMs with replacement (an RM drawn twice "
          "counts as two tied entries) and the questions with replacement (one draw shared by both sides), "
          "recomputes every drawn RM's benchmark value and downstream score on the drawn questions, re-ranks "
          "and recomputes the metric; resamples where it is undefined are left out (counted). ci_questions: "
          "the same with the RMs fixed. Sides of fixed numbers (external tables): the RMs are resampled only")


@dataclass
class Resamples:
    weights: np.ndarray | None   # resamples × questions: how often each question was drawn (None: fixed numbers)
    rm_index: np.ndarray         # resamples × n: which RMs were drawn


def draw(rng: np.random.Generator, n_questions: int, n_rms: int, b: int) -> Resamples:
    weights = (rng.multinomial(n_questions, np.full(n_questions, 1 / n_questions), size=b).astype(float)
               if n_questions else None)
    return Resamples(weights, rng.integers(0, n_rms, size=(b, n_rms)))


def _names(names: list[str], idx) -> list[str]:
    # the names a resample's RMs carry: copies of one RM keep its name first, so distinct RMs still tie-break
    # by name; the suffix orders the copies. batch.tie_keys orders them the same way (the reference in the tests)
    return [f"{names[i]}\x00{j:04d}" for j, i in enumerate(idx)]


def metric_draws(bench: np.ndarray, down: np.ndarray, names: list[str], rbo_p: float,
                 rm_index: np.ndarray | None, metrics=M.METRICS) -> dict[str, np.ndarray]:
    """Per metric, its value in every resample (NaN where undefined). bench, down: resamples × RMs;
    rm_index None = the RMs as they are (question resampling only). All resamples in one batch
    (batch.py), equal to metrics.compute on each resample with the names of `_names`."""
    bench, down = np.asarray(bench, dtype=float), np.asarray(down, dtype=float)
    if rm_index is None:
        rm_index = np.broadcast_to(np.arange(len(names)), bench.shape)
    else:
        bench, down = np.take_along_axis(bench, rm_index, 1), np.take_along_axis(down, rm_index, 1)
    return batch.compute(bench, down, batch.tie_keys(names, rm_index), rbo_p, metrics)


def interval(values: np.ndarray, ci: float) -> tuple[float | None, float | None, int]:
    """(low, high, resamples left out as undefined)."""
    ok = values[np.isfinite(values)]
    if not len(ok):
        return None, None, int(len(values))
    lo, hi = np.quantile(ok, [(1 - ci) / 2, (1 + ci) / 2])
    return float(lo), float(hi), int(len(values) - len(ok))


def paired_difference(x: np.ndarray, y: np.ndarray, down: np.ndarray, names: list[str], metric: str,
                      rbo_p: float, resamples: Resamples, ci: float, observed: tuple) -> dict:
    """Does X predict downstream better than Y under `metric`? x, y, down: resamples × RMs draws over the
    same questions; observed: (x, y, down) values per RM. The difference, its CI and a one-sided p."""
    diff = (M.compute(observed[0], observed[2], names, rbo_p, (metric,))[metric]
            - M.compute(observed[1], observed[2], names, rbo_p, (metric,))[metric])
    dx = metric_draws(x, down, names, rbo_p, resamples.rm_index, (metric,))[metric]
    dy = metric_draws(y, down, names, rbo_p, resamples.rm_index, (metric,))[metric]
    d = settled(dx - dy)   # X and Y equally good on a resample: 0, not a few ulps either side (determinism.md)
    lo, hi, undefined = interval(d, ci)
    ok = d[np.isfinite(d)]
    p = float((1 + np.sum(ok <= 0)) / (1 + len(ok))) if len(ok) else None
    return {"difference": M.num(settled(diff)), "ci_low": lo, "ci_high": hi, "p_value": p, "undefined_resamples": undefined}
