"""The rounding rule for decisions (docs/determinism.md): a count that decides a p-value, a tie or a rank
compares values rounded to 12 decimals, so two statistics equal in exact arithmetic, which come out a few
ulps apart in an order the kernels choose, decide the same way on every machine."""
import numpy as np

from tasks.core.determinism import DECISION_DECIMALS, settled
from tasks.downstream.correlation import batch, primary
from tasks.downstream.correlation import metrics as M
from tasks.downstream.correlation import resample as R

NAMES = [f"rm{i}" for i in range(6)]


def _one_rm_apart(b: int = 200):
    """Benchmarks X and Y that single out the same RM (0.3 vs 0.7, every other RM 0): their Pearson r with
    any downstream is the same number in exact arithmetic, and in floats a few ulps apart either way."""
    down = np.random.default_rng(3).random((b, len(NAMES)))
    x, y = np.zeros((b, len(NAMES))), np.zeros((b, len(NAMES)))
    x[:, 0], y[:, 0] = 0.3, 0.7
    return x, y, down, np.tile(np.arange(len(NAMES)), (b, 1))


def test_equally_good_benchmarks_tie_on_every_resample_and_a_tie_counts_against_x():
    x, y, down, idx = _one_rm_apart()
    raw = (R.metric_draws(x, down, NAMES, 0.9, idx, ("pearson",))["pearson"]
           - R.metric_draws(y, down, NAMES, 0.9, idx, ("pearson",))["pearson"])
    assert (raw > 0).sum() > 20 and (raw != 0).sum() < len(raw), "the floats do fall either side of the tie"
    got = R.paired_difference(x, y, down, NAMES, "pearson", 0.9, R.Resamples(None, idx), 0.95,
                              (x[0], y[0], down[0]))
    assert got["p_value"] == 1.0, "X is never better: every resample is a tie"
    assert got["ci_low"] == got["ci_high"] == 0.0 and got["difference"] == 0.0


def test_a_permutation_as_good_as_the_data_counts_whichever_way_its_last_bits_fall():
    r = 0.123456789
    null = np.array([r, np.nextafter(r, 0), np.nextafter(r, 1), r - 1e-9, np.nan])
    assert M.at_least(null, r, exact=True) == 3 / 5
    assert M.at_least(null, r, exact=False) == (3 + 1) / (5 + 1)
    zero = np.array([0.0, -2e-17, 3e-17, -0.25])   # scipy's tolerance is relative: none at an observed 0
    assert M.at_least(zero, 0.0, exact=True) == 3 / 4


def test_the_permutation_p_is_scipys_where_nothing_ties():
    from scipy import stats

    rng = np.random.default_rng(11)
    bench, down = rng.random(7), rng.random(7)
    ours = M.permutation(bench, down, NAMES + ["rm6"], 0.9, 999, lambda m: np.random.default_rng(5))["pearson"][0]
    theirs = stats.permutation_test((bench,), lambda b: stats.pearsonr(b, down).statistic, permutation_type="pairings",
                                    n_resamples=999, alternative="greater", rng=np.random.default_rng(5)).pvalue
    assert ours == theirs


def test_the_primary_flip_test_counts_a_flip_as_extreme_as_the_data():
    r = 0.42
    null = np.array([np.nextafter(r, 0), r, np.nextafter(r, 1), 0.3, np.nan])
    assert primary.extreme(null, r, "greater").tolist() == [True, True, True, False, False]
    assert primary.extreme(-null, -r, "less").tolist() == [True, True, True, False, False]
    assert primary.extreme(-null, r, "two-sided").tolist() == [True, True, True, False, False]


def test_equal_values_rank_by_the_tie_key_not_by_their_last_bits():
    a = 0.1 + 0.2                      # 0.30000000000000004
    values = np.array([[0.3, a, 0.1]])
    assert batch.strict_ranks(values, np.array([[0, 1, 2]])).tolist() == [[0, 1, 2]]
    assert batch.strict_ranks(values, np.array([[1, 0, 2]])).tolist() == [[1, 0, 2]]
    assert M.strict_order([0.3, a, 0.1], ["b", "a", "c"]) == [1, 0, 2], "equal: by name"
    assert M.strict_order([a, 0.3, 0.1], ["b", "a", "c"]) == [1, 0, 2], "by name, though b's last bits are larger"
    assert M.ranks([a, 0.3, 0.1], ["b", "a", "c"]).tolist() == [2, 1, 3]


def test_resampled_means_of_rms_with_the_same_answers_tie_exactly():
    rng = np.random.default_rng(2)
    x = rng.random((3, 50))
    x[2] = x[0]
    weights = rng.multinomial(50, np.full(50, 1 / 50), size=300).astype(float)
    means = M.resampled_means(x, weights)
    assert (means[:, 0] == means[:, 2]).all()
    assert np.array_equal(means, settled(means)) and DECISION_DECIMALS == 12


def test_a_permutation_4e_14_below_the_observed_counts_though_the_two_round_apart():
    observed = 0.25 + 5.2e-13                          # rounds to 0.250000000001
    null = np.array([0.25 + 4.8e-13, 0.15, 0.45])      # the first rounds to 0.25: its sides differ by 1e-12
    assert M.at_least(null, observed, exact=True) == 2 / 3, "the difference is rounded, not its two sides"
    assert M.at_least(null, observed, exact=False) == 3 / 4
