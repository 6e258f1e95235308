"""The count of decisions within the dtype's resolution (docs/statistics.md#leaderboard, tasks/core/precision.py): a
decided pair (not a tie, not invalid) whose margin is at most 8 ulps of the larger score's magnitude, 8 · 2^(e − p)
for a score in [2^e, 2^(e+1)). Each case below gives another answer under a neighbouring rule: `<` for `<=`, the
smaller score's magnitude for the larger's, the margin against one ulp, a tie or an invalid row counted, 0 for
"no model ran here"."""
import pytest

from tasks.core import precision

ULP32 = 2.0 ** -23   # float32's ulp in [1, 2)


@pytest.mark.parametrize("dtype, bits", [("float64", 52), ("float32", 23), ("float16", 10), ("bfloat16", 7)])
def test_the_resolution_is_8_ulps_of_the_magnitudes_binade(dtype, bits):
    assert precision.resolution(dtype, 1.0) == 8 * 2.0 ** -bits
    assert precision.resolution(dtype, 1.999) == 8 * 2.0 ** -bits, "one binade: [1, 2)"
    assert precision.resolution(dtype, 2.0) == 8 * 2.0 ** (1 - bits), "2 starts the next"
    assert precision.resolution(dtype, 0.75) == 8 * 2.0 ** (-1 - bits)
    assert precision.resolution(dtype, -3.0) == 8 * 2.0 ** (1 - bits), "the magnitude: the sign does not count"
    assert precision.resolution(dtype, 0.0) == 8 * 2.0 ** (-126 - bits), "zero: the smallest normal's"


def test_a_margin_exactly_on_the_resolution_is_within_and_one_past_it_is_not():
    assert precision.within("float32", 1.0, 1.0 + 8 * ULP32)
    assert precision.within("float32", 1.0 + 8 * ULP32, 1.0), "either side may be the larger"
    assert not precision.within("float32", 1.0, 1.0 + 9 * ULP32)
    assert precision.within("float32", -1.0, -1.0 - 8 * ULP32) and not precision.within("float32", -1.0, -1.0 - 9 * ULP32)


def test_the_larger_scores_magnitude_sets_the_resolution():
    """Across 2: the larger score (2.0) has ulps twice as wide as the smaller (just under 2)."""
    assert precision.within("float32", 2.0, 2.0 - 12 * ULP32), "12 ulps of [1, 2) = 6 ulps of [2, 4)"
    assert precision.within("float32", -2.0, -2.0 + 12 * ULP32)
    assert not precision.within("float32", 2.0, 2.0 - 20 * ULP32)


def test_only_a_decided_pair_in_a_known_dtype_can_be_within():
    assert not precision.within("float32", 1.0, 1.0), "a tie is not decided"
    assert not precision.within(None, 1.0, 1.0 + ULP32), "no dtype: no model ran here"
    assert not precision.within("int8", 1.0, 1.0 + ULP32)
    assert not precision.within("float32", None, 1.0) and not precision.within("float32", 1.0, None)


def _row(chosen, rejected, dtype="float32", **flags):
    return {"score_chosen": chosen, "score_rejected": rejected, "score_dtype": dtype, **flags}


def test_the_count_leaves_out_ties_and_invalid_rows_and_is_none_without_a_dtype():
    close, far = (1.0, 1.0 + 4 * ULP32), (1.0, 1.5)
    rows = [_row(*close), _row(*close), _row(*far), _row(*close, tie=True), _row(*close, invalid=True),
            _row(*close, tie=False, invalid=False)]
    assert precision.count_within(rows) == 3
    assert precision.count_within([_row(*far)]) == 0, "a model ran and decided nothing that close: 0, not None"
    assert precision.count_within([_row(*close, dtype=None)]) is None, "no row names a dtype (a judge, a baseline)"
    assert precision.count_within([]) is None
    assert precision.fields(rows) == {"score_dtype": "float32", "within_resolution": 3}
    assert precision.fields([_row(*close, dtype=None)]) == {"score_dtype": None, "within_resolution": None}


def test_the_dtype_names_every_dtype_the_rows_were_scored_in():
    rows = [_row(1.0, 2.0, "float32"), _row(1.0, 2.0, "bfloat16"), _row(1.0, 2.0, "float32"), _row(1.0, 2.0, None)]
    assert precision.dtype_of(rows) == "bfloat16, float32"
    assert precision.dtype_of([_row(1.0, 2.0, None)]) is None
