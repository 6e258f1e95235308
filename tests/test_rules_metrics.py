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
