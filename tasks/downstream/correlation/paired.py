"""Correlations of one benchmark predictor with one downstream (`correlate`), and the paired test of
whether benchmark X predicts a downstream better than benchmark Y (`compare`). Both take Sides, so
any benchmark (ours, the generic baseline, an external one) and any downstream fit the same calls."""
from __future__ import annotations

import numpy as np

from tasks.downstream.correlation import metrics as M
from tasks.downstream.correlation import resample as R
from tasks.downstream.correlation.sides import Side
from tasks.core.determinism import stable_rng


def _questions(sides, rms) -> list[str]:
    return sorted({q for s in sides for rm in rms for q in s.per_question.get(rm, {})})


def _draws(side: Side, rms, questions, res: R.Resamples, predictor: str, b: int) -> np.ndarray:
    if res.weights is None:
        return np.tile([side.value(rm, predictor) for rm in rms], (b, 1))
    return side.draws(rms, questions, res.weights, predictor)


def correlate(bench: Side, down: Side, rms: list[str], predictor: str, p: dict, seed: int) -> dict[str, dict]:
    """Per metric: value, CI over RMs and questions, CI over questions alone, permutation p, and the values a
    random and a reversed ranking get on the same data. `rms`: at least correlation.min_rms of them."""
    b = np.array([bench.value(rm, predictor) for rm in rms])
    d = np.array([down.value(rm) for rm in rms])
    names = (bench.name, down.name)
    values = M.compute(b, d, rms, p["rbo_p"])
    perm = M.permutation(b, d, rms, p["rbo_p"], p["permutations"],
                         lambda m: stable_rng(seed, "correlation", "permutation", *names, predictor, m))
    reverse = M.reversed_values(d, rms, p["rbo_p"])
    questions = _questions((bench, down), rms)
    res = R.draw(stable_rng(seed, "correlation", "bootstrap", *names), len(questions), len(rms), p["bootstrap"])
    bd, dd = (_draws(s, rms, questions, res, pr, p["bootstrap"]) for s, pr in ((bench, predictor), (down, "accuracy")))
    both = R.metric_draws(bd, dd, rms, p["rbo_p"], res.rm_index)
    q_only = R.metric_draws(bd, dd, rms, p["rbo_p"], None) if res.weights is not None else {}
    out = {}
    for m in M.METRICS:
        lo, hi, undefined = R.interval(both[m], p["ci"])
        qlo, qhi, _ = R.interval(q_only[m], p["ci"]) if m in q_only else (None, None, 0)
        ok = bool(np.isfinite(values[m]))
        out[m] = {"value": M.num(values[m]), "ci_low": lo if ok else None, "ci_high": hi if ok else None,
                  "ci_low_questions": qlo if ok else None, "ci_high_questions": qhi if ok else None,
                  "p_value": M.num(perm[m][0]), "null_random": M.num(round(perm[m][1], 12) + 0.0),   # no "-0.000"
                  "null_reversed": M.num(reverse[m]), "undefined_resamples": undefined,
                  "status": "ok" if ok else "undefined (constant scores, or no positive NDCG gain)"}
    return out


def compare(x: Side, y: Side, down: Side, rms: list[str], predictor: str, p: dict, seed: int,
            metrics=M.METRICS) -> dict[str, dict]:
    """Does benchmark X predict `down` better than benchmark Y, over the same RMs? Per metric: the
    difference of the two correlations, a CI from the same resamples of RMs and questions for both,
    and a one-sided bootstrap p (H1: X better)."""
    questions = _questions((x, y, down), rms)
    res = R.draw(stable_rng(seed, "correlation", "compare", x.name, y.name, down.name), len(questions), len(rms),
                 p["bootstrap"])
    xd, yd = (_draws(s, rms, questions, res, predictor, p["bootstrap"]) for s in (x, y))
    dd = _draws(down, rms, questions, res, "accuracy", p["bootstrap"])
    observed = tuple(np.array([s.value(rm, pr) for rm in rms]) for s, pr in ((x, predictor), (y, predictor),
                                                                           (down, "accuracy")))
    return {m: R.paired_difference(xd, yd, dd, rms, m, p["rbo_p"], res, p["ci"], observed) for m in metrics}
