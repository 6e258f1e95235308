"""Exact or randomised, at the boundary the docs state. The correlation's permutation p is exact (hits / n!) when
n! is AT MOST the resamples (docs/statistics.md#correlation: "exact when n! is at most that"), and the primary
test enumerates every flip when 2^pairs is AT MOST B (#the-primary-test-and-its-power). At equality both are
exact: the cases here sit exactly on the bound, against a direct enumeration written in the test."""
import itertools
import math

import numpy as np
import pytest

from tasks.downstream.correlation import metrics as M, primary as P


def test_the_permutation_p_is_exact_when_n_factorial_equals_the_resamples():
    bench, down = np.array([0.9, 0.4, 0.7, 0.1]), np.array([0.8, 0.5, 0.3, 0.2])
    names = ["a", "b", "c", "d"]
    obs = np.corrcoef(bench, down)[0, 1]
    null = [np.corrcoef(np.array(b), down)[0, 1] for b in itertools.permutations(bench)]
    hits = sum(round(r - obs, 12) >= 0 for r in null)
    got = M.permutation(bench, down, names, 0.9, math.factorial(4), lambda m: np.random.default_rng(0))
    assert got["pearson"][0] == pytest.approx(hits / 24, abs=1e-15), "n! = 24 resamples: the exact share"
    assert hits / 24 != (hits + 1) / 25


def test_the_flip_test_enumerates_when_two_to_the_pairs_equals_b():
    credit = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=float)
    flipped = 1 - credit
    down = np.array([0.6, 0.5, 0.2, 0.3, 0.9])
    obs, p = P.flip_test(credit, flipped, down, "pearson", "greater", 8, np.random.default_rng(0))
    acc = lambda mask: np.where(mask, flipped, credit).mean(axis=1)  # noqa: E731
    stats = [np.corrcoef(acc(np.array(m, dtype=bool)), down)[0, 1] for m in itertools.product([0, 1], repeat=3)]
    hits = sum(round(s - obs, 12) >= 0 for s in stats if math.isfinite(s))
    assert p == pytest.approx(hits / 8, abs=1e-15), "2^3 = B = 8: every flip enumerated, p = hits / 8"
    masks, exact = P.flip_masks(3, 8, np.random.default_rng(0))
    assert exact and len(masks) == 8
    assert not P.flip_masks(3, 7, np.random.default_rng(0))[1], "B below 2^pairs: random flips"
