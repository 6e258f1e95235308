"""Batch-invariant scoring (the RM option `batch_invariant`): every forward pass an answer goes through has a
shape chosen by the answer's own length and the device, never by `batch_size`, its neighbours or the order
answers arrive in. A kernel's bits depend on the shape it runs (a GEMM picks its blocking, tail kernels and
reduction order by the matrix size; a masked softmax sums as many padded zeros as the width holds), so an
answer scored in a fixed shape gets the same bits in any run (docs/determinism.md#batch-invariant-scoring).

The shape: the answer is padded to a width bucket of its length, and the micro-batch has a row count fixed
by that width; rows the bucket does not fill are fillers (copies of its first answer, their scores dropped).
Measured on CPU: a row's bits do not depend on its place among the rows, but do depend on the row count
(MiniLM fp32: 1, 3 and 7 rows vs 16 differ), hence the fillers. On CPU one answer per forward at its exact
length is the cheapest fixed shape (no padding, no fillers; batching buys a CPU little): rows 1, no grid."""
from __future__ import annotations

import math

GRID = {"cpu": 0, "cuda": 4}          # bucket widths per octave above FLOOR (0: the exact length)
FLOOR = 64                            # widths up to it step by STEP
STEP = 16
TOKENS = {"cpu": 0, "cuda": 8192}     # tokens per micro-batch (rows = TOKENS // width; 0: one answer)
MAX_ROWS = 64


def device_kind(device: str) -> str:
    return "cuda" if str(device).startswith("cuda") else "cpu"


def width(length: int, device: str = "cpu") -> int:
    """The bucket an answer of `length` tokens is padded to: its length itself (CPU), else rounded up to a
    multiple of STEP to FLOOR, then to one of GRID steps per octave (padding at most 1/GRID of the answer)."""
    grid = GRID[device_kind(device)]
    if not grid:
        return length
    if length <= FLOOR:
        return max(STEP, math.ceil(length / STEP) * STEP)
    step = max(STEP, 2 ** (math.ceil(math.log2(length)) - 1) // grid)
    return math.ceil(length / step) * step


def rows(w: int, device: str = "cpu") -> int:
    """Rows of every micro-batch of width `w` on this device kind."""
    tokens = TOKENS[device_kind(device)]
    return max(1, min(MAX_ROWS, tokens // w)) if tokens else 1


def plan(lengths: list[int], device: str = "cpu") -> list[tuple[list[int], int, int]]:
    """(indices, rows, width) micro-batches covering every index once: indices grouped by bucket, in input
    order within it (which answers share a micro-batch changes no bits, only how many fillers there are)."""
    buckets: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        buckets.setdefault(width(n, device), []).append(i)
    out = []
    for w in sorted(buckets):
        r = rows(w, device)
        out += [(buckets[w][k:k + r], r, w) for k in range(0, len(buckets[w]), r)]
    return out


def one_each(lengths: list[int], device: str = "cpu") -> list[tuple[list[int], int, int]]:
    """The plan for a kind whose forward pads by itself (InternLM2's get_scores): one answer per call."""
    return [([i], 1, n) for i, n in enumerate(lengths)]
