"""The agreement metrics against small cases computed by hand: identical, fully reversed and tied
rankings; undefined cases; exact permutation p-values; the bootstrap's weighted means."""
import math

import numpy as np
import pytest

from tasks.downstream.correlation import metrics as M

NAMES = ["a", "b", "c", "d"]
P = 0.9


def log2(x):
    return math.log2(x)


def test_identical_order_scores_one_everywhere():
    got = M.compute([0.9, 0.8, 0.7, 0.6], [0.5, 0.4, 0.3, 0.2], NAMES, P)
    assert got == pytest.approx({m: 1.0 for m in M.METRICS})


@pytest.mark.parametrize("p", [0.5, 0.9, 0.98])
def test_rbo_of_identical_lists_is_one_for_the_extrapolated_version(p):
    # ranked-overlap implements extrapolated RBO: X_k/k p^k + (1-p)/p Σ_d (X_d/d) p^d = p^k + (1 - p^k) = 1
    assert M.rbo(np.array([4.0, 3, 2, 1]), np.array([8.0, 6, 4, 2]), NAMES, p) == pytest.approx(1.0)


def test_fully_reversed_ranking():
    bench, down = [0.6, 0.7, 0.8, 0.9], [4.0, 3.0, 2.0, 1.0]   # the benchmark's best is downstream's worst
    got = M.compute(bench, down, NAMES, P)
    assert got["spearman"] == pytest.approx(-1) and got["kendall_tau_b"] == pytest.approx(-1)
    assert got["weighted_tau"] == pytest.approx(-1)
    # benchmark order d, c, b, a carries gains 1, 2, 3, 4; the ideal order carries 4, 3, 2, 1
    dcg = 1 / log2(2) + 2 / log2(3) + 3 / log2(4) + 4 / log2(5)
    idcg = 4 / log2(2) + 3 / log2(3) + 2 / log2(4) + 1 / log2(5)
    assert got["ndcg"] == pytest.approx(dcg / idcg) and got["ndcg"] == pytest.approx(0.748903, abs=1e-6)
    # [d,c,b,a] vs [a,b,c,d]: overlaps 0, 0, 2, 4 at depths 1..4 -> agreements 0, 0, 2/3, 1.
    # Extrapolated RBO is not 0 for a reversed list of the same items: at full depth they overlap fully.
    rbo = P ** 4 + (1 - P) / P * (2 / 3 * P ** 3 + P ** 4)
    assert got["rbo"] == pytest.approx(rbo) and got["rbo"] == pytest.approx(0.783)


def test_ties_broken_by_name_for_ndcg_and_rbo_and_left_to_the_statistic_otherwise():
    bench = [0.7, 0.7, 0.5, 0.3]   # a and b tie on the benchmark
    down = [0.2, 0.4, 0.3, 0.1]
    assert M.strict_order(bench, NAMES) == [0, 1, 2, 3] and list(M.ranks(bench, NAMES)) == [1, 2, 3, 4]
    got = M.compute(bench, down, NAMES, P)
    # NDCG: a before b (name order): gains 0.2, 0.4, 0.3, 0.1; ideal 0.4, 0.3, 0.2, 0.1
    dcg = 0.2 / log2(2) + 0.4 / log2(3) + 0.3 / log2(4) + 0.1 / log2(5)
    idcg = 0.4 / log2(2) + 0.3 / log2(3) + 0.2 / log2(4) + 0.1 / log2(5)
    assert got["ndcg"] == pytest.approx(dcg / idcg)
    swapped = (0.4 / log2(2) + 0.2 / log2(3) + 0.3 / log2(4) + 0.1 / log2(5)) / idcg
    assert got["ndcg"] != pytest.approx(swapped), "the tie is not broken in b's favour"
    # RBO: [a,b,c,d] vs [b,c,a,d]: overlaps 0, 1, 3, 4 -> agreements 0, 1/2, 1, 1
    assert got["rbo"] == pytest.approx(P ** 4 + (1 - P) / P * (P ** 2 / 2 + P ** 3 + P ** 4))
    # Spearman on average ranks: x = (3.5, 3.5, 2, 1), y = (2, 4, 3, 1): 3 / sqrt(4.5 * 5)
    assert got["spearman"] == pytest.approx(3 / math.sqrt(22.5))
    # Kendall tau-b: 4 concordant, 1 discordant, 1 pair tied on x only: (4 - 1) / sqrt((6 - 1) * 6)
    assert got["kendall_tau_b"] == pytest.approx(3 / math.sqrt(30))


def test_names_decide_ties_whatever_the_input_order():
    names, bench, down = ["d", "b", "c", "a"], [0.5, 0.5, 0.5, 0.5], [0.1, 0.2, 0.3, 0.4]
    assert [names[i] for i in M.strict_order(bench, names)] == ["a", "b", "c", "d"]
    # order a, b, c, d carries gains 0.4, 0.2, 0.3, 0.1
    dcg = 0.4 / log2(2) + 0.2 / log2(3) + 0.3 / log2(4) + 0.1 / log2(5)
    idcg = 0.4 / log2(2) + 0.3 / log2(3) + 0.2 / log2(4) + 0.1 / log2(5)
    assert M.ndcg(np.array(bench), np.array(down), names, P) == pytest.approx(dcg / idcg)


def test_undefined_cases_are_nan_not_numbers():
    got = M.compute([0.5] * 4, [0.1, 0.2, 0.3, 0.4], NAMES, P)       # constant benchmark
    assert math.isnan(got["spearman"]) and math.isnan(got["kendall_tau_b"])
    assert math.isnan(M.compute([1, 2, 3, 4], [0, 0, 0, 0], NAMES, P)["ndcg"])      # no positive gain
    assert math.isnan(M.compute([1, 2, 3, 4], [-1, 0, 1, 2], NAMES, P)["ndcg"])     # negative gain
    assert all(math.isnan(v) for v in M.compute([1, 2, float("nan"), 4], [1, 2, 3, 4], NAMES, P).values())


def test_permutation_p_values_are_exact_for_small_n():
    names = list("abcde")
    rng = lambda m: np.random.default_rng(0)  # noqa: E731
    agree = M.p_values([1, 2, 3, 4, 5], [0.1, 0.2, 0.3, 0.4, 0.5], names, P, 9999, rng)
    assert agree["spearman"] == pytest.approx(1 / 120) and agree["ndcg"] == pytest.approx(1 / 120)
    reverse = M.p_values([5, 4, 3, 2, 1], [0.1, 0.2, 0.3, 0.4, 0.5], names, P, 9999, rng)
    assert reverse["spearman"] == pytest.approx(1.0) and reverse["kendall_tau_b"] == pytest.approx(1.0)


def test_resampled_means_by_hand():
    x = np.array([[1.0, 0.0, np.nan], [0.0, 1.0, 1.0]])   # RM 0 has no value for question 3
    w = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    got = M.resampled_means(x, w)
    assert got[0] == pytest.approx([2 / 3, 1 / 3])
    assert math.isnan(got[1, 0]) and got[1, 1] == pytest.approx(1.0)


def test_too_few_names_the_minimum():
    assert M.too_few(4, 5) == "too few RMs (n=4 < 5)" and M.too_few(5, 5) is None


def test_pearson_is_the_linear_correlation():
    bench, down = [0.9, 0.8, 0.7, 0.6], [0.5, 0.44, 0.3, 0.2]
    x, y = np.array(bench) - np.mean(bench), np.array(down) - np.mean(down)
    assert M.compute(bench, down, NAMES, P)["pearson"] == pytest.approx(float(x @ y / math.sqrt((x @ x) * (y @ y))))


def test_reversed_ranking_and_random_ranking_values():
    """Close downstream scores: a perfectly reversed benchmark still gets a high NDCG; the null values say so."""
    names = list("abcde")
    down = np.array([0.33, 0.32, 0.34, 0.31, 0.35])
    rev = M.reversed_values(down, names, P)
    assert rev["spearman"] == pytest.approx(-1) and rev["pearson"] == pytest.approx(-1)
    assert rev["ndcg"] > 0.9, "NDCG near 1 even for the reverse order: why its null is shown"
    perm = M.permutation(-down, down, names, P, 9999, lambda m: np.random.default_rng(0))
    assert perm["ndcg"][1] == pytest.approx(np.mean([M.ndcg(np.array(b, dtype=float), down, names, P)
                                                     for b in __import__("itertools").permutations(-down)]))
    assert rev["ndcg"] < perm["ndcg"][1] < 1 and rev["rbo"] < perm["rbo"][1] < 1
    assert perm["spearman"][1] == pytest.approx(0, abs=1e-12) and perm["spearman"][0] == pytest.approx(1.0)


def test_holm_skips_tests_that_did_not_run():
    got = M.holm({"a": 0.01, "b": 0.04, "c": None, "d": float("nan")})
    assert got == {"a": pytest.approx(0.02), "b": pytest.approx(0.04), "c": None, "d": None}


def _random_draws(rng, n: int, b: int, kind: int):
    """b resamples of n RMs: continuous values, or few distinct values (ties, constant rows, zero and negative
    gains), with some rows forced constant and one with a missing value."""
    if kind == 0:
        bench, down = rng.random((b, n)), rng.random((b, n))
    else:
        bench = rng.integers(0, 3, (b, n)) / 2
        down = rng.integers(-1 if kind == 2 else 0, 3, (b, n)) / 4
    bench[0], down[1], down[2] = 0.5, 0.25, 0.0          # constant benchmark; constant and all-zero gains
    bench[3, -1] = np.nan
    return bench, down


@pytest.mark.parametrize("n", range(2, 9))
@pytest.mark.parametrize("resampled", [False, True])
def test_batched_bootstrap_metrics_equal_the_library_on_every_resample(n, resampled):
    """resample.metric_draws (batch.py) against metrics.compute (the libraries) on each resample, with the
    names resample._names gives duplicated RMs: equal to 1e-12 and NaN exactly where the library gives NaN."""
    from tasks.downstream.correlation import resample as R

    rng = np.random.default_rng(n * 10 + resampled)
    names = [f"rm{k}" for k in rng.permutation(n)]   # the name order is not the input order
    for kind in range(3):
        bench, down = _random_draws(rng, n, 40, kind)
        idx = rng.integers(0, n, (40, n)) if resampled else None
        got = R.metric_draws(bench, down, names, P, idx)
        for r in range(40):
            pick = idx[r] if resampled else np.arange(n)
            want = M.compute(bench[r][pick], down[r][pick], R._names(names, pick) if resampled else names, P)
            for m in M.METRICS:
                assert math.isnan(got[m][r]) == math.isnan(want[m]), (m, r, kind)
                if not math.isnan(want[m]):
                    assert abs(got[m][r] - want[m]) <= 1e-12, (m, r, kind)


@pytest.mark.parametrize("n", [3, 4, 6])
def test_batched_permutation_test_equals_the_library_statistic_per_permutation(n):
    """metrics.permutation (one batched call per metric) gives the p-value and null mean that scipy's
    permutation_test gets calling the library metric once per permutation."""
    from scipy import stats

    rng = np.random.default_rng(n)
    names = [f"rm{k}" for k in rng.permutation(n)]
    bench, down = rng.integers(0, 3, n) / 2, rng.random(n)
    bench[0] = 1.0   # not constant
    got = M.permutation(bench, down, names, P, 9999, lambda m: np.random.default_rng(0))
    for m in M.METRICS:
        res = stats.permutation_test((bench,), lambda b, f=M.FUNCTIONS[m]: f(b, down, names, P),
                                     permutation_type="pairings", n_resamples=9999, alternative="greater")
        want = (float(res.pvalue), float(np.nanmean(res.null_distribution)))
        assert got[m] == pytest.approx(want, rel=0, abs=1e-12), m
