"""How finely a dtype tells two scores apart: a pair decided by a margin of a few ulps of its scores could be
flipped by precision alone (a batch mate, another kernel). docs/statistics.md#leaderboard defines the count."""
from __future__ import annotations

import math

MANTISSA_BITS = {"float64": 52, "float32": 23, "float16": 10, "bfloat16": 7}
ULPS = 8   # batch mates moved fp32 scores by up to 8 ulps on CPU (benchmarks/gpu_scoring.py --smoke), bf16 ones by 0.0625 on a GPU (issue 48)


def resolution(dtype: str, magnitude: float) -> float:
    """ULPS units in the last place of `magnitude` in `dtype`."""
    exponent = math.frexp(abs(magnitude))[1] - 1 if magnitude else -126
    return ULPS * 2.0 ** (exponent - MANTISSA_BITS[dtype])


def within(dtype: str | None, chosen, rejected) -> bool:
    """A decided pair (distinct, finite scores) whose margin is within the dtype's resolution."""
    if dtype not in MANTISSA_BITS or chosen is None or rejected is None or chosen == rejected:
        return False
    return abs(chosen - rejected) <= resolution(dtype, max(abs(chosen), abs(rejected)))


def count_within(rows: list[dict]) -> int | None:
    """Score rows decided within their dtype's resolution; None when no row names a dtype (no model ran here)."""
    if not any(r.get("score_dtype") for r in rows):
        return None
    return sum(within(r.get("score_dtype"), r["score_chosen"], r["score_rejected"])
               for r in rows if not r.get("invalid") and not r.get("tie"))


def dtype_of(rows: list[dict]) -> str | None:
    """The dtype(s) the rows were scored in, e.g. 'bfloat16' (several: comma-joined); None for none."""
    return ", ".join(sorted({r["score_dtype"] for r in rows if r.get("score_dtype")})) or None


FIELDS = ("score_dtype", "within_resolution")


def fields(rows: list[dict]) -> dict:
    """A leaderboard row's precision columns for its score rows."""
    return {"score_dtype": dtype_of(rows), "within_resolution": count_within(rows)}
