"""The correlation metrics' conventions (tasks/downstream/correlation/metrics.py, docs/statistics.md) on cases
worked out by hand: the permutation p is exact (the share of all n! orders) exactly when n! <= the resamples
asked, else (1 + hits) / (1 + resamples); RBO uses the persistence params give it."""
from __future__ import annotations

import math

import numpy as np
import pytest
from ranked_overlap import rbo as library_rbo

from tasks.downstream.correlation import metrics as M


@pytest.mark.parametrize("resamples, exact", [(6, True), (4, False)])
def test_the_permutation_p_is_exact_when_every_order_fits_in_the_resamples(resamples, exact):
    """3 RMs in the same order on both sides: Spearman 1; of the 3! = 6 orders only the identity reaches it."""
    names = ["a", "b", "c"]
    p = M.p_values([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], names, 0.9, resamples, lambda m: np.random.default_rng(0))
    if exact:
        assert p["spearman"] == pytest.approx(1 / 6), "exact: 1 of the 6 orders"
    else:
        assert p["spearman"] >= 1 / (resamples + 1) and p["spearman"] != pytest.approx(1 / 6)
        hits = round(p["spearman"] * (resamples + 1)) - 1
        assert p["spearman"] == pytest.approx((1 + hits) / (1 + resamples)), "randomised: the observed counted"


def test_rbo_uses_the_persistence_params_give():
    names = ["a", "b", "c", "d"]
    bench, down = np.array([4.0, 3.0, 1.0, 2.0]), np.array([4.0, 1.0, 3.0, 2.0])   # orders a b d c / a c d b
    for p in (0.5, 0.98):
        assert M.rbo(bench, down, names, p) == pytest.approx(library_rbo(list("abdc"), list("acdb"), p=p))
        assert M.compute(bench, down, names, p, ("rbo",))["rbo"] == pytest.approx(M.rbo(bench, down, names, p))
    assert not math.isclose(M.rbo(bench, down, names, 0.5), M.rbo(bench, down, names, 0.98))


def test_a_resample_with_a_non_finite_value_is_undefined_alone():
    """The batch form: a resample (row) holding a NaN on either side is NaN in every metric; the other rows
    keep the values the per-row library form gives."""
    from tasks.downstream.correlation import batch as B

    names = ["a", "b", "c", "d"]
    bench = np.array([[0.9, 0.8, 0.7, 0.6], [0.1, 0.4, 0.2, 0.3], [0.5, 0.6, 0.7, 0.9]])
    down = np.array([[0.5, 0.4, 0.3, 0.1], [0.2, np.nan, 0.3, 0.4], [0.3, 0.2, 0.5, 0.6]])
    ties = B.tie_keys(names, np.tile(np.arange(4), (3, 1)))
    metrics = ("pearson", "spearman", "kendall_tau_b", "ndcg", "rbo", "weighted_tau")
    got = B.compute(bench, down, ties, 0.9, metrics)
    for m in metrics:
        assert np.isnan(got[m][1]), m
        for row in (0, 2):
            want = M.compute(bench[row], down[row], names, 0.9)[m]
            assert got[m][row] == pytest.approx(want, abs=1e-12), (m, row)


def test_a_batched_correlation_never_leaves_its_range_and_a_perfect_order_is_exactly_one():
    """τ-b, r, ρ and weighted τ lie in [-1, 1], NDCG and RBO in [0, 1], in every row; an order the downstream
    repeats is 1 and the reversed one -1 (for 3 or 4 RMs floating point alone would give 1.0000000000000002:
    3/√3/√3); τ-b has the library's bits."""
    from tasks.downstream.correlation import batch as B

    rng = np.random.default_rng(7)
    from scipy import stats

    for n in (3, 4, 5, 8, 18):   # 8: ρ of a reversed order is -1.0000000000000002 before its clip
        names = [f"rm{i}" for i in range(n)]
        up = np.arange(1.0, n + 1)
        rows = np.vstack([up, up[::-1], rng.random((20, n)), rng.integers(0, 3, (20, n)).astype(float)])
        ties = B.tie_keys(names, np.tile(np.arange(n), (len(rows), 1)))
        got = B.compute(rows, np.broadcast_to(up, rows.shape), ties, 0.9,
                        ("pearson", "spearman", "kendall_tau_b", "weighted_tau", "ndcg", "rbo"))
        for m, lo in (("pearson", -1), ("spearman", -1), ("kendall_tau_b", -1), ("weighted_tau", -1), ("ndcg", 0),
                      ("rbo", 0)):
            v = got[m][~np.isnan(got[m])]
            assert (v >= lo).all() and (v <= 1).all(), (m, n, v.min(), v.max())
        if n in (3, 4):
            assert got["kendall_tau_b"][0] == 1.0 and got["kendall_tau_b"][1] == -1.0, n
        want = [stats.kendalltau(r, up, variant="b").statistic for r in rows]   # the library, the same bits
        np.testing.assert_array_equal(got["kendall_tau_b"], want)
        # every metric has the per-row library form's bits, ties and all, with each row its own downstream side
        # (a constant one, one that reverses its row, tied ones)
        down = np.vstack([np.full(n, 0.5), up, rng.random((20, n)), rng.integers(0, 3, (20, n)).astype(float)])
        got = B.compute(rows, down, ties, 0.9, M.METRICS)
        for m in M.METRICS:
            want = [M.compute(r, d, names, 0.9, (m,))[m] for r, d in zip(rows, down)]
            np.testing.assert_array_equal(got[m], want, m)
        assert np.isnan(got["spearman"][0]) and got["spearman"][1] < -0.99, "constant: undefined; reversed: -1"
    names = [f"rm{i}" for i in range(6)]   # RBO of two equal orders: 1, never above (p = 0.8: 1.0000000000000002)
    same = np.arange(6.0)[None, :]
    assert B.compute(same, same, B.tie_keys(names, np.arange(6)[None, :]), 0.8, ("rbo",))["rbo"][0] == 1.0
