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


def test_the_permutation_p_and_random_null_come_from_the_seeded_stream_of_each_metric():
    bench, down = _side("ours", 6), _side("bon", 7)   # 5 RMs: 5! = 120 > 99 permutations, so drawn, not enumerated
    got = paired.correlate(bench, down, RMS, "accuracy", P, seed=2)
    b = [bench.value(rm) for rm in RMS]
    d = [down.value(rm) for rm in RMS]
    perm = M.permutation(b, d, RMS, P["rbo_p"], P["permutations"],
                         lambda m: stable_rng(2, "correlation", "permutation", "ours", "bon", "accuracy", m))
    for m in M.METRICS:
        assert got[m]["p_value"] == M.num(perm[m][0])
        assert got[m]["null_random"] == M.num(round(perm[m][1], 12))
    assert paired.correlate(bench, down, RMS, "accuracy", P, seed=2) == got, "the same seed, the same p"


def test_the_random_null_is_rounded_to_12_decimals_and_never_minus_zero(monkeypatch):
    for mean, shown in ((-1e-14, 0.0), (0.1234567890123456, 0.123456789012), (-0.25, -0.25)):
        monkeypatch.setattr(paired.M, "permutation", lambda *a, mean=mean: {m: (0.5, mean) for m in M.METRICS})
        got = paired.correlate(_side("ours", 6), _side("bon", 7), RMS, "accuracy", P, seed=2)
        for m in M.METRICS:
            assert got[m]["null_random"] == shown and math.copysign(1.0, got[m]["null_random"]) == math.copysign(
                1.0, shown), (mean, got[m]["null_random"])


def test_an_undefined_correlation_has_no_interval_even_where_resamples_have_one():
    """Every RM's mean is 0.5 (a constant predictor: no correlation), but a resample of the questions
    separates them; the value is undefined, so are its intervals, whatever the resamples say."""
    bench = Side("tie", "scores", per_question={rm: {q: float((i + j) % 2) for j, q in enumerate(QS)}
                                                for i, rm in enumerate(RMS)}, domains=dict(DOMAIN))
    got = paired.correlate(bench, _side("bon", 7), RMS, "accuracy", P, seed=2)["pearson"]
    both = R.draw(stable_rng(2, "correlation", "bootstrap", "tie", "bon"), len(QS), len(RMS), P["bootstrap"])
    assert np.isfinite(paired._draws(bench, RMS, QS, both, "accuracy", P["bootstrap"])).all()
    assert got["value"] is None and got["status"].startswith("undefined")
    assert (got["ci_low"], got["ci_high"], got["ci_low_questions"], got["ci_high_questions"]) == (None,) * 4


def test_the_paired_difference_is_taken_at_the_runs_rbo_persistence(monkeypatch):
    seen = []
    monkeypatch.setattr(paired.R, "paired_difference", lambda *a: seen.append(a[5]) or {})
    paired.compare(_side("x", 1), _side("y", 2), _side("bon", 3), RMS, "accuracy", {**P, "rbo_p": 0.7}, seed=2)
    assert seen == [0.7] * len(M.METRICS)


@pytest.mark.parametrize("predictor", ["accuracy", "worst_domain"])
def test_correlates_intervals_resample_the_predictor_asked_for_the_benchmark_and_the_mean_for_the_downstream(
        predictor):
    bench, down = _side("ours", 6), _side("bon", 7)
    got = paired.correlate(bench, down, RMS, predictor, P, seed=2)
    res = R.draw(stable_rng(2, "correlation", "bootstrap", "ours", "bon"), len(QS), len(RMS), P["bootstrap"])
    bd, dd = bench.draws(RMS, QS, res.weights, predictor), down.draws(RMS, QS, res.weights)
    both, q_only = R.metric_draws(bd, dd, RMS, P["rbo_p"], res.rm_index), R.metric_draws(bd, dd, RMS, P["rbo_p"], None)
    for m in M.METRICS:
        lo, hi, undefined = R.interval(both[m], P["ci"])
        qlo, qhi, _ = R.interval(q_only[m], P["ci"])
        assert (got[m]["ci_low"], got[m]["ci_high"], got[m]["undefined_resamples"]) == (lo, hi, undefined)
        assert (got[m]["ci_low_questions"], got[m]["ci_high_questions"]) == (qlo, qhi)


def test_the_paired_difference_under_rbo_is_taken_at_the_asked_persistence_throughout():
    x, y, down = _side("x", 1), _side("y", 2), _side("bon", 3)
    res = R.draw(stable_rng(4, "t"), len(QS), len(RMS), P["bootstrap"])
    draws = [s.draws(RMS, QS, res.weights) for s in (x, y, down)]
    observed = tuple(np.array([s.value(rm) for rm in RMS]) for s in (x, y, down))
    got = R.paired_difference(*draws, RMS, "rbo", 0.7, res, P["ci"], observed)
    obs = [M.compute(o, observed[2], RMS, 0.7)["rbo"] for o in observed[:2]]
    d = settled(R.metric_draws(draws[0], draws[2], RMS, 0.7, res.rm_index)["rbo"]
                - R.metric_draws(draws[1], draws[2], RMS, 0.7, res.rm_index)["rbo"])
    lo, hi, undefined = R.interval(d, P["ci"])
    ok = d[np.isfinite(d)]
    assert got == {"difference": M.num(settled(obs[0] - obs[1])), "ci_low": lo, "ci_high": hi,
                   "p_value": (1 + np.sum(ok <= 0)) / (1 + len(ok)), "undefined_resamples": undefined}
    assert got != R.paired_difference(*draws, RMS, "rbo", 0.9, res, P["ci"], observed), "the persistence matters"


def test_a_paired_difference_undefined_in_every_resample_has_no_p():
    flat = Side("flat", "table", fixed={rm: 0.5 for rm in RMS})
    other = Side("flat2", "table", fixed={rm: 0.25 for rm in RMS})
    got = paired.compare(flat, other, _side("bon", 3), RMS, "accuracy", P, seed=2)["pearson"]
    assert got["p_value"] is None and got["undefined_resamples"] == P["bootstrap"]
    assert (got["ci_low"], got["ci_high"]) == (None, None)


def test_a_resample_where_x_and_y_differ_by_4e_14_is_a_tie_though_they_round_apart(monkeypatch):
    from types import SimpleNamespace

    draws = {"x": np.array([0.25 + 5.2e-13, 0.6, 0.7]), "y": np.array([0.25 + 4.8e-13, 0.5, 0.5])}
    monkeypatch.setattr(R, "metric_draws", lambda v, *a: {"pearson": draws[v]})
    seen = np.array([1.0, 2.0, 3.0])
    got = R.paired_difference("x", "y", seen, ["a", "b", "c"], "pearson", 0.9, SimpleNamespace(rm_index=None), 0.95,
                              (seen, seen, seen))
    # d = 0 (not the 1e-12 of the rounded sides), 0.1, 0.2: one resample not better, p = (1 + 1) / (1 + 3)
    assert got["p_value"] == 0.5
