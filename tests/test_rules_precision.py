"""docs/statistics.md#leaderboard, "decided within the dtype's resolution": a decided pair whose margin is at most
8 ulps of the LARGER score's magnitude in its dtype, 8 · 2^(e − p) for a score in [2^e, 2^(e+1)), p the mantissa
bits (bfloat16 7, float16 10, float32 23). The cases sit where the neighbouring rules part: a pair straddling a
power of two (the smaller score's ulp is half the larger's), a score exactly on a power of two, negative scores,
a margin exactly on the bound, and the figures the page states for a score of 1.5."""
import math

import numpy as np
import pytest

from tasks.core import precision


def reference(dtype: str, chosen: float, rejected: float) -> bool:
    """The rule as the docs write it, plainly."""
    bits = {"bfloat16": 7, "float16": 10, "float32": 23}[dtype]
    if chosen == rejected:
        return False
    big = max(abs(chosen), abs(rejected))
    e = math.floor(math.log2(big))
    return abs(chosen - rejected) <= 8 * 2.0 ** (e - bits)


def test_the_page_states_these_resolutions_at_a_score_of_1_5():
    assert precision.resolution("bfloat16", 1.5) == 0.0625
    assert round(precision.resolution("float16", 1.5), 4) == 0.0078
    assert f"{precision.resolution('float32', 1.5):.1e}" == "9.5e-07"


def test_a_pair_straddling_a_power_of_two_is_held_to_the_larger_scores_ulp():
    # bfloat16: 8 ulps are 0.0625 in [1, 2) and 0.03125 in [0.5, 1); a margin of 0.04 lies between the two
    assert precision.within("bfloat16", 0.98, 1.02) and precision.within("bfloat16", 1.02, 0.98)
    assert precision.within("bfloat16", -0.98, -1.02), "magnitudes: a negative score by its absolute value"
    assert not precision.within("bfloat16", 0.98, 1.05), "0.07 is more than 8 ulps of 1.05"
    assert precision.within("float32", 1.0 - 2 ** -22, 1.0 + 2 ** -21), "3 · 2^-22 <= 8 · 2^-23"
    assert not precision.within("float32", 1.0 - 2 ** -21, 1.0 + 2 ** -20)


def test_a_score_exactly_on_a_power_of_two_is_in_the_binade_it_starts():
    assert precision.resolution("bfloat16", 2.0) == 8 * 2 ** -6
    assert precision.resolution("bfloat16", float(np.nextafter(2.0, 0))) == 8 * 2 ** -7
    assert precision.resolution("float16", -4.0) == 8 * 2 ** -8
    assert precision.within("bfloat16", 2.0, 2.0 + 0.125) and not precision.within("bfloat16", 2.0, 2.0 + 0.126)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_within_is_the_documented_rule_on_scores_around_powers_of_two(dtype):
    rng = np.random.default_rng(len(dtype))
    bits = {"bfloat16": 7, "float16": 10, "float32": 23}[dtype]
    for _ in range(400):
        e = int(rng.integers(-3, 4))
        a = float(2.0 ** e * (1 + rng.choice([-1, 1]) * rng.random() * 0.1))   # near the power of two
        b = float(a + rng.choice([-1, 1]) * rng.integers(0, 24) * 2.0 ** (e - bits - 1))
        assert precision.within(dtype, a, b) == reference(dtype, a, b), (a, b)
        assert precision.within(dtype, -a, -b) == reference(dtype, -a, -b), (-a, -b)


def test_no_dtype_counts_nothing_and_rows_without_a_dtype_give_no_count():
    assert not precision.within("int8", 1.0, 1.0 + 1e-9), "a dtype it does not know: never counted"
    assert not precision.within("bfloat16", None, 1.0)
    rows = [{"score_dtype": None, "score_chosen": 1.0, "score_rejected": 1.0 + 1e-9, "invalid": False, "tie": False}]
    assert precision.count_within(rows) is None, "no model ran here: no count, not a count of 0"
    tie = {"score_dtype": "bfloat16", "score_chosen": 1.0, "score_rejected": 1.0 + 2 ** -9, "invalid": False, "tie": True}
    assert precision.count_within([tie]) == 0, "a tie is not a decided pair"


def test_a_row_of_several_dtypes_names_them_all_and_counts_each_in_its_own():
    rows = [{"score_dtype": "float32", "score_chosen": 1.0, "score_rejected": 1.0 + 2 ** -21, "invalid": False, "tie": False},
            {"score_dtype": "bfloat16", "score_chosen": 1.0, "score_rejected": 1.0 + 2 ** -5, "invalid": False, "tie": False},
            {"score_dtype": "float32", "score_chosen": 1.0, "score_rejected": 1.0 + 2 ** -5, "invalid": False, "tie": False}]
    assert precision.fields(rows) == {"score_dtype": "bfloat16, float32", "within_resolution": 2}


@pytest.mark.parametrize("dtype, bits", [("float64", 52), ("float32", 23), ("float16", 10), ("bfloat16", 7)])
def test_every_dtype_has_its_mantissa_and_zero_is_held_to_the_smallest_normal(dtype, bits):
    assert precision.resolution(dtype, 1.0) == 8 * 2.0 ** -bits
    assert precision.resolution(dtype, 0.75) == 8 * 2.0 ** (-1 - bits)
    assert precision.resolution(dtype, 0.0) == 8 * 2.0 ** (-126 - bits)
    assert not precision.within(None, 1.0, 1.0 + 2.0 ** -60), "no dtype: no model ran here"


def _row(chosen, rejected, dtype="float32", **flags):
    return {"score_chosen": chosen, "score_rejected": rejected, "score_dtype": dtype, **flags}


def test_the_count_leaves_out_invalid_rows_and_is_0_where_a_model_decided_nothing_that_close():
    close, far = (1.0, 1.0 + 4 * 2.0 ** -23), (1.0, 1.5)
    rows = [_row(*close), _row(*close), _row(*far), _row(*close, tie=True), _row(*close, invalid=True),
            _row(*close, tie=False, invalid=False)]
    assert precision.count_within(rows) == 3
    assert precision.count_within([_row(*far)]) == 0
    assert precision.count_within([]) is None
    assert precision.fields([_row(*close, dtype=None)]) == {"score_dtype": None, "within_resolution": None}
