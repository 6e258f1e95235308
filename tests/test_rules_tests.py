"""The rules behind every "significant" the report and metrics/*.json print, each checked against a case
computed by hand or by a direct (slow, obvious) reference, and as properties over many generated inputs
(Hypothesis): Holm's step-down, the pre-registered label-flip test, the paired "X predicts better than Y"
bootstrap p, the adjacent-RM sign tests, and which p and which alpha decide a verdict."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from tasks.downstream.correlation import metrics as M
from tasks.downstream.correlation import primary as P
from tasks.downstream.correlation import resample as R
from tasks.stages import adjacent as A
from tasks.stages.human_eval.analysis import holm
from tasks.stages.leaderboard import credits

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- Holm-Bonferroni ------------------------------------------------------------------------------------

def test_holm_step_down_on_four_p_values_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.04 -> 4*0.01, max(., 3*0.02), max(., 2*0.03), max(., 1*0.04)
    got = holm({"a": 0.03, "b": 0.01, "c": 0.04, "d": 0.02})
    assert got == pytest.approx({"a": 0.06, "b": 0.04, "c": 0.06, "d": 0.06})
    # the running maximum: a later, smaller product never lowers an adjusted p
    got = holm({"a": 0.001, "b": 0.04, "c": 0.045, "d": 0.3})
    assert got == pytest.approx({"a": 0.004, "b": 0.12, "c": 0.12, "d": 0.3})
    # capped at 1, and tests that did not run stay None and do not count in the family size
    got = holm({"a": 0.5, "b": 0.6, "c": None})
    assert got == {"a": 1.0, "b": 1.0, "c": None}
    assert holm({"a": 0.02, "b": None}) == {"a": 0.02, "b": None}


@FAST
@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_is_monotone_at_least_the_raw_p_and_at_most_one(ps):
    got = holm({i: p for i, p in enumerate(ps)})
    for i, p in enumerate(ps):
        assert p - 1e-15 <= got[i] <= 1.0
        assert got[i] <= min(1.0, len(ps) * p) + 1e-12            # never above Bonferroni
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted = [got[i] for i in order]
    assert adjusted == sorted(adjusted), "the adjusted p follow the raw p's order"
    smallest = order[0]
    assert got[smallest] == pytest.approx(min(1.0, len(ps) * ps[smallest]))


def test_the_correlation_family_is_holm_adjusted_with_nan_left_out():
    got = M.holm({"a": 0.01, "b": float("nan"), "c": 0.02, "d": None})
    assert got == {"a": pytest.approx(0.02), "b": None, "c": pytest.approx(0.02), "d": None}


# --- verdicts: which p and which alpha decide ----------------------------------------------------------

def test_a_verdict_reads_the_holm_p_strictly_below_alpha():
    assert M.verdict("ok", 0.049, 0.001, 0.05) == M.SIGNIFICANT
    assert M.verdict("ok", 0.05, 0.001, 0.05) == M.NOT_SIGNIFICANT, "p = alpha is not below alpha"
    assert M.verdict("ok", 0.2, 0.001, 0.05) == M.NOT_SIGNIFICANT, "the Holm p decides, not the raw one"
    assert M.verdict("ok", None, 0.01, 0.05) == M.SIGNIFICANT, "no family adjusted: the raw p"
    assert M.verdict("ok", None, 0.06, 0.05) == M.NOT_SIGNIFICANT
    assert M.verdict("too few RMs (n=3 < 5)", 0.001, 0.001, 0.05) == "too few RMs (n=3 < 5)"
    assert M.verdict("ok", None, None, 0.05) == "no p-value"
    assert M.verdict(None, None, float("nan"), 0.05) == "no p-value"


def test_the_level_is_the_primary_alpha_else_one_minus_ci():
    assert M.alpha({"ci": 0.95, "primary": {"alpha": 0.01}}) == 0.01
    assert M.alpha({"ci": 0.9}) == pytest.approx(0.1)
    assert M.alpha({"ci": 0.95, "primary": {}}) == pytest.approx(0.05)


# --- the pre-registered label-flip test -----------------------------------------------------------------

def _reference_p(credit, flipped, down, metric, alternative):
    """Every one of the 2^pairs label flips, the observed labels counted, by a direct loop."""
    n = credit.shape[1]
    obs = float(P.statistic(credit.mean(axis=1), down, metric)[0])
    hits = 0
    for f in itertools.product([0, 1], repeat=n):
        acc = np.where(np.array(f, bool)[None, :], flipped, credit).mean(axis=1)
        s = float(P.statistic(acc, down, metric)[0])
        if not math.isfinite(s):
            continue
        if alternative == "greater":
            hits += s >= obs - 1e-12
        elif alternative == "less":
            hits += s <= obs + 1e-12
        else:
            hits += abs(s) >= abs(obs) - 1e-12
    return obs, hits / 2 ** n


def test_the_flip_p_by_enumeration_on_a_hand_case():
    # 4 RMs x 3 pairs; the best downstream RM is right on every pair
    credit = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float)
    flipped = 1 - credit
    down = np.array([0.9, 0.6, 0.4, 0.1])
    obs, p = P.flip_test(credit, flipped, down, "pearson", "greater", 10_000, np.random.default_rng(0))
    # accuracies 1, 2/3, 1/3, 0 against 0.9, 0.6, 0.4, 0.1: r = 0.9948; only flipping nothing, or the
    # flips that keep every RM's accuracy order, reach it. By hand: the 8 flips give accuracies
    # (1, 2/3, 1/3, 0) at no flip and r <= that elsewhere, with equality at no flip only.
    assert obs == pytest.approx(np.corrcoef([1, 2 / 3, 1 / 3, 0], down)[0, 1])
    assert p == pytest.approx(1 / 8)
    obs_less, p_less = P.flip_test(credit, flipped, down, "pearson", "less", 10_000, np.random.default_rng(0))
    assert obs_less == obs and p_less == pytest.approx(1.0), "every flip is at most the observed"


@pytest.mark.parametrize("alternative", P.ALTERNATIVES)
@pytest.mark.parametrize("metric", P.STATISTICS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_the_flip_p_equals_the_enumeration(metric, alternative, data):
    n_rms = data.draw(st.integers(5, 6))
    n_pairs = data.draw(st.integers(1, 5))
    credit = np.array(data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n_pairs,
                                                  max_size=n_pairs), min_size=n_rms, max_size=n_rms)))
    flipped = np.where(credit == 0.5, 0.5, 1 - credit)   # a tie keeps its half credit
    down = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n_rms, max_size=n_rms, unique=True)))
    obs, p = P.flip_test(credit, flipped, down, metric, alternative, 2 ** n_pairs, np.random.default_rng(1))
    ref_obs, ref_p = _reference_p(credit, flipped, down, metric, alternative)
    if not math.isfinite(ref_obs):
        assert obs is None and p is None
        return
    assert obs == pytest.approx(ref_obs) and p == pytest.approx(ref_p)
    assert 1 / 2 ** n_pairs - 1e-12 <= p <= 1, "the observed labels are one of the flips"


@FAST
@given(st.integers(0, 2 ** 16), st.integers(8, 30), st.integers(9, 200))
def test_a_random_flip_p_lies_in_1_over_b_plus_1_to_1(seed, n_pairs, b):
    rng = np.random.default_rng(seed)
    credit = rng.integers(0, 2, size=(6, n_pairs)).astype(float)
    down = rng.random(6)
    if 2 ** n_pairs <= b:
        return
    obs, p = P.flip_test(credit, 1 - credit, down, "pearson", "greater", b, np.random.default_rng(seed))
    if obs is None:
        return
    assert 1 / (b + 1) - 1e-12 <= p <= 1
    # the count behind it is an integer: (1 + hits) / (1 + b)
    assert abs(p * (b + 1) - round(p * (b + 1))) < 1e-9


@pytest.mark.parametrize("alternative", P.ALTERNATIVES)
def test_a_random_flip_p_counts_the_observed_labels_once(alternative):
    """Above 2^pairs > B: p = (1 + #flips at least as extreme) / (1 + B), the flips drawn from the seeded rng."""
    rng = np.random.default_rng(5)
    credit = rng.integers(0, 2, size=(6, 24)).astype(float)
    down = credit.mean(axis=1) + 0.05 * rng.standard_normal(6)
    obs, p = P.flip_test(credit, 1 - credit, down, "pearson", alternative, 199, np.random.default_rng(9))
    masks = np.random.default_rng(9).integers(0, 2, size=(199, 24)).astype(bool)
    null = [np.corrcoef(np.where(m, 1 - credit, credit).mean(axis=1), down)[0, 1] for m in masks]
    extreme = {"greater": lambda x: x >= obs - 1e-12, "less": lambda x: x <= obs + 1e-12,
               "two-sided": lambda x: abs(x) >= abs(obs) - 1e-12}[alternative]
    assert obs == pytest.approx(np.corrcoef(credit.mean(axis=1), down)[0, 1])
    assert p == pytest.approx((1 + sum(map(extreme, null))) / 200)
    assert p >= 1 / 200


@FAST
@given(st.integers(0, 2 ** 16))
def test_relabelling_every_pair_flips_the_statistic(seed):
    rng = np.random.default_rng(seed)
    credit = rng.integers(0, 2, size=(6, 7)).astype(float)
    down = rng.random(6)
    obs, _ = P.flip_test(credit, 1 - credit, down, "pearson", "two-sided", 128, np.random.default_rng(0))
    swapped, _ = P.flip_test(1 - credit, credit, down, "pearson", "two-sided", 128, np.random.default_rng(0))
    if obs is None:
        assert swapped is None
        return
    assert swapped == pytest.approx(-obs)
    for metric in ("spearman", "kendall_tau_b"):
        a = float(P.statistic(credit.mean(axis=1), down, metric)[0])
        b = float(P.statistic((1 - credit).mean(axis=1), down, metric)[0])
        assert b == pytest.approx(-a) or not math.isfinite(a)


def test_a_label_flip_turns_right_into_wrong_and_keeps_ties_and_invalid(tmp_path):
    from tasks.core import schemas
    from tasks.core.artifacts import write_table

    base = dict.fromkeys(schemas.SCORES.names)
    kinds = [dict(correct=True, tie=False, invalid=False, score_chosen=1.0, score_rejected=0.0),
             dict(correct=False, tie=False, invalid=False, score_chosen=0.0, score_rejected=1.0),
             dict(correct=False, tie=True, invalid=False, score_chosen=0.5, score_rejected=0.5),
             dict(correct=False, tie=False, invalid=True, score_chosen=None, score_rejected=1.0)]
    rows = [{**base, "rm": "rm", "benchmark": "personalised", "strategy": "none", "split": "test", "domain": "d",
             "question_id": f"q{i + 1}", "truncated": False, **k} for i, k in enumerate(kinds)]
    path = tmp_path / "s.parquet"
    write_table(rows, path, "scores")
    pr = {"benchmark": "personalised", "strategy": "none"}
    for policy, tie in (("half", 0.5), ("strict", 0.0)):
        credit, flipped, pairs = P.credit_matrices({"rm": str(path)}, ["rm"], pr, {"split": None, "tie_policy": policy})
        assert pairs == ["q1", "q2", "q3", "q4"]
        assert credit.tolist() == [[1.0, 0.0, tie, 0.0]]
        assert flipped.tolist() == [[0.0, 1.0, tie, 0.0]], "right <-> wrong; a tie and an invalid row keep theirs"
    other = {"benchmark": "generic", "strategy": "none"}
    assert P.credit_matrices({"rm": str(path)}, ["rm"], other, {"split": None, "tie_policy": "half"})[2] == []
    assert P.credit_matrices({"rm": str(path)}, ["rm"], pr, {"split": "validation", "tie_policy": "half"})[2] == []


def test_significance_is_p_strictly_below_the_primary_alpha(monkeypatch):
    """run_primary's `significant` is p < correlation.primary.alpha (not <=, not 1 - ci)."""
    for p, alpha, want in ((0.04, 0.05, True), (0.05, 0.05, False), (0.06, 0.1, True), (0.06, 0.05, False)):
        got = _primary_with_p(monkeypatch, p, alpha)
        assert got["significant"] is want, (p, alpha)
        assert got["p"] == p and got["alpha"] == alpha


def _primary_with_p(monkeypatch, p_value, alpha):
    class Down:
        per_question = {f"ladder-{i:02d}": {"q": 0.1 * i} for i in range(6)}

        def rms(self):
            return set(self.per_question)

        def value(self, rm):
            return self.per_question[rm]["q"]

    credit = np.tile([1.0, 0.0], (6, 1))
    monkeypatch.setattr(P, "credit_matrices", lambda *a: (credit, 1 - credit, ["q1", "q2"]))
    monkeypatch.setattr(P, "flip_test", lambda *a: (0.5, p_value))
    monkeypatch.setattr(P, "power_of", lambda params, d: {"power": 0.9, "min_detectable_effect": 0.8})
    rms = {f"ladder-{i:02d}": {"kind": "mixture", "weight": i / 5} for i in range(6)}
    params = {"common": {"seed": 1}, "scoring": {"rms": rms}, "bon": {"n": 4, "max_k": 2},
              "correlation": {"split": None, "tie_policy": "half", "permutations": 100, "ci": 0.9, "bon_k": 2,
                              "exclude_rms": [], "power": {"effect": 0.9, "pairs": 2, "questions": 1},
                              "primary": {"benchmark": "personalised", "strategy": "none", "method": "bon",
                                          "statistic": "pearson", "alternative": "greater", "alpha": alpha,
                                          "rms": ["ladder-*"]}}}
    return P.run_primary(params, {rm: "x" for rm in rms}, {"bon": Down()})


def test_the_power_simulation_tests_at_the_primary_alpha():
    params = {"scoring": {"rms": {f"l{i}": {"kind": "mixture", "weight": i / 5} for i in range(6)}},
              "bon": {"n": 4, "max_k": 4},
              "correlation": {"bon_k": None, "exclude_rms": [], "power": {"pairs": 15, "questions": 15},
                              "primary": {"rms": ["l*"], "statistic": "pearson", "alternative": "greater",
                                          "alpha": 0.01, "method": "bon"}}}
    d = P.design(params)
    assert d.alpha == 0.01 and d.k == 4 and d.n == 4 and d.weights == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    from tasks.downstream.correlation import power as PW

    p = PW.simulate(d, [0.9], sims=100, flips=99, seed=3)[0.9]
    assert PW.power_at(d, 0.9, sims=100, flips=99, seed=3) == pytest.approx(np.mean(p < 0.01))
    from dataclasses import replace

    assert PW.power_at(replace(d, alpha=0.2), 0.9, sims=100, flips=99, seed=3) >= np.mean(p < 0.01)


def test_the_fisher_interval_by_hand():
    from scipy.stats import norm

    z, half = math.atanh(0.5), norm.ppf(0.975) / math.sqrt(12 - 3)
    ci, why = P.interval(0.5, 12, "pearson", 0.95)
    assert why == "" and ci == pytest.approx([math.tanh(z - half), math.tanh(z + half)])
    half = norm.ppf(0.95) * math.sqrt((1 + 0.25 / 2) / (10 - 3))
    assert P.interval(0.5, 10, "spearman", 0.9)[0] == pytest.approx([math.tanh(z - half), math.tanh(z + half)])
    half = norm.ppf(0.975) * math.sqrt(0.437 / (8 - 4))
    assert P.interval(0.5, 8, "kendall_tau_b", 0.95)[0] == pytest.approx([math.tanh(z - half), math.tanh(z + half)])
    assert P.interval(0.5, 4, "pearson", 0.95)[0] is not None and P.interval(0.5, 3, "pearson", 0.95)[0] is None
    assert P.interval(0.5, 5, "kendall_tau_b", 0.95)[0] is not None
    assert P.interval(0.5, 4, "kendall_tau_b", 0.95)[0] is None
    assert P.interval(-1.0, 12, "pearson", 0.95)[0] is None and P.interval(None, 12, "pearson", 0.95)[0] is None


def test_the_primary_rms_are_the_patterns_less_the_excluded():
    params = {"scoring": {"rms": {"ladder-00": {}, "ladder-01": {}, "other": {}, "ladder-x": {}}},
              "correlation": {"primary": {"rms": ["ladder-0*"]}, "exclude_rms": ["ladder-01"]}}
    assert P.primary_rms(params, None) == ["ladder-00"]
    assert P.primary_rms(params, {"ladder-01"}) == []
    params["correlation"]["primary"]["rms"] = ["ladder-*", "other"]
    assert P.primary_rms(params, {"ladder-00", "other", "ladder-x"}) == ["ladder-00", "ladder-x", "other"]


def test_bon_k_is_the_largest_power_of_two_within_max_k_and_n():
    assert P.bon_k({"bon": {"n": 16, "max_k": 8}, "correlation": {}}) == 8
    assert P.bon_k({"bon": {"n": 6, "max_k": 128}, "correlation": {}}) == 4
    assert P.bon_k({"bon": {"n": 4, "max_k": 4}, "correlation": {}}) == 4
    assert P.bon_k({"bon": {"n": 1, "max_k": 1}, "correlation": {}}) == 1
    assert P.bon_k({"bon": {"n": 16, "max_k": 8}, "correlation": {"bon_k": 2}}) == 2


# --- the paired comparison "X predicts better than Y" ---------------------------------------------------

def test_the_paired_p_counts_resamples_where_x_is_not_better_plus_one():
    """p = (1 + #(difference <= 0)) / (1 + #defined): a difference of exactly 0 counts against X."""
    names = ["a", "b", "c", "d", "e"]
    down = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])       # the downstream order: pearson 1
    y = np.array([5.0, 4.0, 3.0, 2.0, 1.0])       # the reverse: pearson -1
    # three resamples: the RMs as they are (X better by 2), all five the same RM (undefined), and X = Y
    idx = np.array([[0, 1, 2, 3, 4], [0, 0, 0, 0, 0], [0, 1, 2, 3, 4]])
    xs = np.stack([x, x, x])
    ys = np.stack([y, y, x])
    res = R.Resamples(None, idx)
    out = R.paired_difference(xs, ys, np.stack([down] * 3), names, "pearson", 0.9, res, 0.95, (x, y, down))
    assert out["difference"] == pytest.approx(2.0)
    assert out["undefined_resamples"] == 1
    assert out["p_value"] == pytest.approx((1 + 1) / (1 + 2)), "the tie (X = Y) counts as X not better"


@FAST
@given(st.integers(0, 2 ** 16))
def test_the_paired_p_is_one_sided_and_within_its_bounds(seed):
    from tasks.downstream.correlation.sides import Side

    rng = np.random.default_rng(seed)
    rms = [f"rm{i}" for i in range(6)]
    qs = [f"q{j}" for j in range(8)]
    truth = rng.random(6)
    down = {rm: {q: truth[i] + 0.1 * rng.standard_normal() for q in qs} for i, rm in enumerate(rms)}
    good = {rm: {q: float(truth[i] + 0.05 * rng.standard_normal() > 0.5) for q in qs} for i, rm in enumerate(rms)}
    noise = {rm: {q: float(rng.random() > 0.5) for q in qs} for rm in rms}
    from tasks.downstream.correlation import paired

    sides = {n: Side(n, "scores", v) for n, v in (("good", good), ("noise", noise), ("down", down))}
    p = {"bootstrap": 50, "ci": 0.9, "rbo_p": 0.9}
    there = paired.compare(sides["good"], sides["noise"], sides["down"], rms, "accuracy", p, seed, ("pearson",))
    back = paired.compare(sides["noise"], sides["good"], sides["down"], rms, "accuracy", p, seed, ("pearson",))
    for got in (there, back):
        pv = got["pearson"]["p_value"]
        if pv is not None:
            assert 1 / 51 - 1e-12 <= pv <= 1
    a, b = there["pearson"], back["pearson"]
    if a["difference"] is not None and b["difference"] is not None:
        assert a["difference"] == pytest.approx(-b["difference"])


# --- adjacent RMs: the exact sign test ------------------------------------------------------------------

def _rows(rm, credit, strategy="none"):
    return [{"rm": rm, "strategy": strategy, "domain": "d", "split": "test", "question_id": f"q{i}",
             "correct": c == 1, "tie": c == 0.5, "invalid": False, "score_chosen": 1.0, "score_rejected": 0.0,
             "truncated": False} for i, c in enumerate(credit)]


def test_the_sign_test_by_hand():
    a = {("d", "test", f"q{i}", 1): c for i, c in enumerate([1, 1, 1, 1, 1, 1, 0, 1])}
    b = {("d", "test", f"q{i}", 1): c for i, c in enumerate([0, 0, 0, 0, 0, 1, 0, 1])}
    n, up, down, p = A.sign_test(a, b)
    assert (n, up, down) == (8, 5, 0)
    assert p == pytest.approx(2 * 0.5 ** 5)   # exact two-sided binomial on the 5 discordant pairs
    n, up, down, p = A.sign_test(b, a)
    assert (up, down) == (0, 5) and p == pytest.approx(2 * 0.5 ** 5)
    assert A.sign_test(a, a)[3] == 1.0, "no discordant pair: no evidence"
    c = {("d", "test", "q0", 1): 1.0, ("d", "test", "zz", 1): 0.0}
    assert A.sign_test(a, c)[:3] == (1, 0, 0), "only pairs both counted"


@FAST
@given(st.integers(0, 40), st.integers(0, 40))
def test_the_sign_test_p_is_the_exact_binomial(up, down):
    a = {(i,): 1.0 for i in range(up)} | {(up + i,): 0.0 for i in range(down)}
    b = {(i,): 0.0 for i in range(up)} | {(up + i,): 1.0 for i in range(down)}
    _, u, d, p = A.sign_test(a, b)
    assert (u, d) == (up, down)
    if up + down == 0:
        assert p == 1.0
        return
    ref = min(1.0, 2 * binom.cdf(min(up, down), up + down, 0.5))
    assert p == pytest.approx(ref, rel=1e-9)


def test_adjacent_tests_rank_by_accuracy_and_read_the_holm_p_below_one_minus_ci():
    from tasks.stages.leaderboard import leaderboard_rows

    scores = (_rows("top", [1] * 12) + _rows("mid", [0] * 12) + _rows("low", [0] * 11 + [1]))
    p = {"tie_policy": "strict", "bootstrap": 50, "ci": 0.95, "split": None}
    rows = leaderboard_rows(scores, p, 1)
    got = A.adjacent_tests(scores, rows, p, credits)
    assert got["alpha"] == pytest.approx(0.05)
    tests = got["tests"]["none"]
    assert [(t["rank"], t["rm"], t["next"]) for t in tests] == [(1, "top", "low"), (2, "low", "mid")]
    first, second = tests
    assert first["discordant"] == [11, 0] and first["p"] == pytest.approx(2 * 0.5 ** 11, abs=1e-6)
    assert second["discordant"] == [1, 0] and second["p"] == 1.0
    assert first["p_holm"] == pytest.approx(min(1, 2 * first["p"]), abs=1e-6)   # Holm over the strategy's 2 tests
    assert first["significant"] and not second["significant"]
    assert first["difference"] == pytest.approx(1 - 1 / 12, abs=1e-4)
    # a stricter level: the same p, not significant
    strict = A.adjacent_tests(scores, rows, {**p, "ci": 0.99999}, credits)["tests"]["none"][0]
    assert strict["p_holm"] == first["p_holm"] and not strict["significant"]


def test_adjacent_significance_is_strict_at_alpha(monkeypatch):
    import scipy.stats

    scores = _rows("a", [1, 1]) + _rows("b", [0, 0])
    p = {"tie_policy": "strict", "bootstrap": 20, "ci": 0.95, "split": None}
    from tasks.stages.leaderboard import leaderboard_rows

    rows = leaderboard_rows(scores, p, 1)

    class Exactly:
        pvalue = 0.05

    monkeypatch.setattr(scipy.stats, "binomtest", lambda *a, **k: Exactly())
    t = A.adjacent_tests(scores, rows, p, credits)["tests"]["none"][0]
    assert t["p_holm"] == pytest.approx(0.05) and t["significant"] is False
    Exactly.pvalue = 0.0499
    t = A.adjacent_tests(scores, rows, p, credits)["tests"]["none"][0]
    assert t["significant"] is True


def test_adjacent_pairs_keep_the_tie_policy():
    rows = _rows("a", [1, 0.5, 0])
    assert A.pair_credits(rows, "half", credits) == {("d", "test", "q0", 1): 1.0, ("d", "test", "q1", 1): 0.5,
                                                     ("d", "test", "q2", 1): 0.0}
    assert A.pair_credits(rows, "drop", credits) == {("d", "test", "q0", 1): 1.0, ("d", "test", "q2", 1): 0.0}
    twice = rows + rows[:1]
    assert A.pair_credits(twice, "strict", credits)[("d", "test", "q0", 2)] == 1.0, "a repeated question is a new pair"


def test_adjacent_tests_count_ties_as_the_tie_policy_does_and_record_rounded_values():
    """Under `half` a tie is half a credit, so a tie against a right answer is a discordant pair; under
    `drop` the tie leaves the pair out of the test."""
    from tasks.stages.leaderboard import leaderboard_rows

    scores = _rows("a", [1] * 6 + [1] * 5) + _rows("b", [0.5] * 6 + [0] * 5)
    for policy, discordant, pairs in (("half", [11, 0], 11), ("strict", [11, 0], 11), ("drop", [5, 0], 5)):
        p = {"tie_policy": policy, "bootstrap": 50, "ci": 0.95, "split": None}
        t = A.adjacent_tests(scores, leaderboard_rows(scores, p, 1), p, credits)["tests"]["none"][0]
        assert (t["discordant"], t["pairs"]) == (discordant, pairs), policy
        assert t["p"] == round(2 * 0.5 ** discordant[0], 6)
    p = {"tie_policy": "half", "bootstrap": 50, "ci": 0.95, "split": None}
    scores = _rows("top", [1] * 12) + _rows("low", [0] * 11 + [1])
    got = A.adjacent_tests(scores, leaderboard_rows(scores, p, 1), p, credits)
    t = got["tests"]["none"][0]
    assert t["difference"] == round(1 - 1 / 12, 4) and t["p"] == round(2 * 0.5 ** 11, 6)
    assert t["p_holm"] == t["p"], "one test in the family: Holm leaves it"
    assert got["method"] == A.METHOD and "Holm" in got["method"]


def test_the_primary_record_by_hand(monkeypatch):
    """Every field of metrics/correlation.json `primary` on a case worked out by hand, and each early stop."""
    from scipy.stats import norm

    got = _primary_with_p(monkeypatch, 0.04, 0.05)
    z, half = math.atanh(0.5), norm.ppf(0.95) / math.sqrt(6 - 3)
    ci = got.pop("ci")
    assert ci == pytest.approx([math.tanh(z - half), math.tanh(z + half)])
    rms = [f"ladder-{i:02d}" for i in range(6)]
    assert got == {"benchmark": "personalised", "strategy": "none", "method": "bon", "statistic": "pearson",
                   "alternative": "greater", "alpha": 0.05, "rms": rms, "n_rms": 6, "estimate": 0.5, "p": 0.04,
                   "significant": True, "n_questions": 1, "n_pairs": 2, "power": 0.9, "effect": 0.9,
                   "min_detectable_effect": 0.8, "observed_signal_accuracy": 0.5, "ci_note": None, "status": "ok",
                   "test": "label-flip randomization (H0: the benchmark's labels carry nothing); one-sided unless "
                           "two-sided",
                   "ci_method": "Fisher z, Bonett-Wright standard error, over the RMs", "positive_control": True}


def test_the_primary_says_why_it_did_not_run(monkeypatch):
    captured = {}
    real = P.run_primary

    def grab(params, paths, downs):
        captured.update(params=params, paths=paths, downs=downs)
        return real(params, paths, downs)

    monkeypatch.setattr(P, "run_primary", grab)
    _primary_with_p(monkeypatch, 0.5, 0.05)
    params, paths, downs = captured["params"], captured["paths"], captured["downs"]
    monkeypatch.setattr(P, "run_primary", real)
    assert real({**params, "correlation": {**params["correlation"], "primary": None}}, paths, downs) == \
        {"status": "none pre-registered (correlation.primary)"}
    assert real(params, paths, {})["status"] == "downstream method 'bon' not in this run"
    few = real(params, dict(list(paths.items())[:3]), downs)
    assert few["status"] == "too few RMs (n=3 < 4)" and few["n_rms"] == 3 and few["p"] is None
    assert few["significant"] is False and few["positive_control"] is True
    monkeypatch.setattr(P, "credit_matrices", lambda *a: (np.zeros((6, 0)), np.zeros((6, 0)), []))
    assert real(params, paths, downs)["status"] == "no personalised pair scored by every RM of the test under none"
    mixed = {**params, "scoring": {"rms": {**params["scoring"]["rms"], "ladder-00": {"kind": "seq-cls", "weight": 0}}}}
    assert real(mixed, paths, downs)["positive_control"] is False, "one contestant: not a positive control"


def test_adjacent_tests_apply_the_tie_policy_to_both_rms_and_alpha_as_written():
    """The higher-ranked RM's ties follow the policy too: under `drop` they leave its pairs out of the test."""
    from tasks.stages.leaderboard import leaderboard_rows

    scores = _rows("a", [0.5] * 3 + [1] * 8) + _rows("b", [0] * 11)
    for policy, discordant, pairs in (("drop", [8, 0], 8), ("half", [11, 0], 11), ("strict", [8, 0], 11)):
        p = {"tie_policy": policy, "bootstrap": 50, "ci": 0.95, "split": None}
        t = A.adjacent_tests(scores, leaderboard_rows(scores, p, 1), p, credits)["tests"]["none"][0]
        assert (t["rm"], t["discordant"], t["pairs"]) == ("a", discordant, pairs), policy
    # the level is 1 - ci as a person wrote it: to 10 decimals, without float noise
    assert A.adjacent_tests([], [], {"ci": 0.95000000001, "tie_policy": "strict"}, credits)["alpha"] == 0.05
