"""The correlation's uncertainty and the paired "X predicts better than Y" test, against the method written
plainly (docs/statistics.md, tasks/downstream/correlation/resample.py's docstring): a loop over resamples that
draws the questions (multinomial counts, shared by every side) and the RMs (with replacement, a copy a tied
entry), recomputes each drawn RM's value on the drawn questions, and takes the percentile interval; the p is the
share of resamples where X is not better, the observed counted. The code computes all resamples at once
(batch.py); this loop is the reference it must equal, for both predictors, fixed and per-question sides."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tasks.core.determinism import settled, stable_rng
from tasks.downstream.correlation import metrics as M
from tasks.downstream.correlation import paired
from tasks.downstream.correlation import resample as R
from tasks.downstream.correlation.sides import Side

RMS = ["a", "b", "c", "d", "e"]
QS = [f"q{i}" for i in range(8)]
DOMAIN = {q: "Art" if i % 2 else "Society" for i, q in enumerate(QS)}
P = {"bootstrap": 60, "ci": 0.9, "rbo_p": 0.9, "permutations": 99}


def _side(name, seed, fixed=False):
    rng = np.random.default_rng(seed)
    if fixed:
        return Side(name, "table", fixed={rm: float(rng.random()) for rm in RMS})
    return Side(name, "scores", per_question={rm: {q: float(rng.integers(0, 2)) for q in QS} for rm in RMS},
                domains=dict(DOMAIN))


def _value(side, rm, predictor, w):
    """One RM's value on one resample of the questions (w: how often each was drawn), written plainly."""
    if rm in side.fixed:
        return side.fixed[rm]

    def mean(qs):
        tot = sum(w[QS.index(q)] for q in qs)
        return settled(sum(w[QS.index(q)] * side.per_question[rm][q] for q in qs) / tot) if tot else math.nan

    if predictor != "worst_domain":
        return mean(list(side.per_question[rm]))
    per = [mean([q for q in side.per_question[rm] if DOMAIN[q] == d]) for d in sorted(set(DOMAIN.values()))]
    return min(v for v in per if not math.isnan(v))


def _reference_compare(x, y, down, predictor, metric, seed):
    questions = sorted({q for s in (x, y, down) for rm in RMS for q in s.per_question.get(rm, {})})
    rng = stable_rng(seed, "correlation", "compare", x.name, y.name, down.name)
    b, n = P["bootstrap"], len(questions)
    weights = rng.multinomial(n, np.full(n, 1 / n), size=b).astype(float) if n else None
    picks = rng.integers(0, len(RMS), size=(b, len(RMS)))
    diffs = []
    for r in range(b):
        w = weights[r] if weights is not None else np.ones(len(QS))
        drawn = [RMS[i] for i in picks[r]]
        names = [f"{rm}\x00{j:04d}" for j, rm in enumerate(drawn)]
        d = [_value(down, rm, "accuracy", w) for rm in drawn]
        vx = M.compute([_value(x, rm, predictor, w) for rm in drawn], d, names, P["rbo_p"], (metric,))[metric]
        vy = M.compute([_value(y, rm, predictor, w) for rm in drawn], d, names, P["rbo_p"], (metric,))[metric]
        diffs.append(settled(vx - vy))
    diffs = np.array(diffs)
    ok = diffs[np.isfinite(diffs)]
    lo, hi = np.quantile(ok, [(1 - P["ci"]) / 2, (1 + P["ci"]) / 2])
    obs = [[s.value(rm, pr) for rm in RMS] for s, pr in ((x, predictor), (y, predictor), (down, "accuracy"))]
    diff = (M.compute(obs[0], obs[2], RMS, P["rbo_p"], (metric,))[metric]
            - M.compute(obs[1], obs[2], RMS, P["rbo_p"], (metric,))[metric])
    return {"difference": settled(diff), "ci_low": lo, "ci_high": hi,
            "p_value": (1 + np.sum(ok <= 0)) / (1 + len(ok)), "undefined_resamples": len(diffs) - len(ok)}


@pytest.mark.parametrize("predictor, kinds", [(p, k) for p in ("accuracy", "worst_domain")
                                               for k in ("per-question", "y fixed", "all fixed")
                                               if (p, k) != ("worst_domain", "all fixed")])   # fixed: no domains
def test_the_paired_test_is_the_two_level_bootstrap_written_plainly(predictor, kinds):
    x = _side("ours", 1, fixed=kinds == "all fixed")
    y = _side("generic", 2, fixed=kinds != "per-question")
    down = _side("bon", 3, fixed=kinds == "all fixed")
    got = paired.compare(x, y, down, RMS, predictor, P, seed=11, metrics=("spearman", "ndcg"))
    for metric in ("spearman", "ndcg"):
        want = _reference_compare(x, y, down, predictor, metric, seed=11)
        assert got[metric] == pytest.approx(want, abs=1e-9), metric


def test_resampling_the_questions_widens_what_resampling_the_rms_alone_cannot_see():
    """Two benchmarks with the same accuracy per RM but different right answers: the RMs alone see no difference
    (every resample 0); the questions drawn do. A paired test that dropped the questions would say [0, 0]."""
    x = _side("x", 4)
    y = Side("y", "scores", per_question={rm: dict(zip(QS, np.roll(list(x.per_question[rm].values()), 3)))
                                          for rm in RMS}, domains=dict(DOMAIN))
    assert all(x.value(rm) == y.value(rm) for rm in RMS)
    got = paired.compare(x, y, _side("down", 5), RMS, "accuracy", P, seed=3, metrics=("pearson",))["pearson"]
    assert got["difference"] == 0.0 and got["ci_low"] < 0 < got["ci_high"]


def test_the_percentile_interval_by_hand_and_undefined_resamples_left_out():
    values = np.array([*range(101), math.nan, math.inf], dtype=float)
    assert R.interval(values, 0.9) == pytest.approx((5.0, 95.0, 2))
    assert R.interval(values, 0.5) == pytest.approx((25.0, 75.0, 2))
    assert R.interval(np.array([math.nan, math.nan]), 0.9) == (None, None, 2)


def test_draw_resamples_questions_and_rms_with_replacement_from_the_whole_set():
    res = R.draw(np.random.default_rng(0), 4, 3, 2000)
    assert res.weights.shape == (2000, 4) and (res.weights.sum(axis=1) == 4).all()
    assert res.weights.dtype == float and set(np.unique(res.weights)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    assert res.rm_index.shape == (2000, 3) and set(np.unique(res.rm_index)) == {0, 1, 2}, "every RM, none past n"
    assert R.draw(np.random.default_rng(0), 0, 3, 5).weights is None, "fixed numbers: the RMs only"


def test_correlate_reports_each_source_of_uncertainty_and_the_nulls():
    bench, down = _side("ours", 6), _side("bon", 7)
    got = paired.correlate(bench, down, RMS, "worst_domain", P, seed=2)
    b = [bench.value(rm, "worst_domain") for rm in RMS]
    d = [down.value(rm) for rm in RMS]
    values = M.compute(b, d, RMS, P["rbo_p"])
    reverse = M.compute([-v for v in d], d, RMS, P["rbo_p"])
    for m in M.METRICS:
        g = got[m]
        assert set(g) == {"value", "ci_low", "ci_high", "ci_low_questions", "ci_high_questions", "p_value",
                          "null_random", "null_reversed", "undefined_resamples", "status"}
        assert g["value"] == pytest.approx(values[m]) and g["null_reversed"] == pytest.approx(reverse[m])
        assert g["status"] == "ok" and g["undefined_resamples"] >= 0
        assert g["ci_low"] <= g["ci_high"] and g["ci_low_questions"] <= g["ci_high_questions"]
        assert 1 / (P["permutations"] + 1) <= g["p_value"] <= 1
        assert math.copysign(1.0, g["null_random"]) == 1.0 or g["null_random"] != 0, "no -0.0"
        assert g["null_random"] != round(g["null_random"]) or m in ("ndcg", "rbo"), "a mean, not rounded whole"
    fixed = paired.correlate(_side("t", 8, fixed=True), _side("u", 9, fixed=True), RMS, "accuracy", P, seed=2)
    assert all(f["ci_low_questions"] is None and f["ci_high_questions"] is None for f in fixed.values()), \
        "fixed numbers: no questions to resample, no CI over questions"
    assert all(f["ci_low"] is not None for f in fixed.values())
    flat = Side("flat", "table", fixed={rm: 0.5 for rm in RMS})
    undefined = paired.correlate(flat, _side("u", 9, fixed=True), RMS, "accuracy", P, seed=2)["pearson"]
    assert undefined["status"] == "undefined (constant scores, or no positive NDCG gain)"
    assert (undefined["value"], undefined["ci_low"], undefined["ci_high"]) == (None, None, None)
