"""docs/determinism.md#batch-invariant-scoring: on a GPU an answer is padded to a width bucket (steps of 16 up to
64 tokens, then 4 per octave: at most 1/4 over its length) in a micro-batch whose row count the width fixes
(8192 tokens, at most 64 rows), rows the bucket does not fill taken by copies whose scores are dropped; on CPU
one answer per forward pass at its exact length. The widths and rows are checked against the rule written
plainly (lengths straddling every power of two), and the forward against the shapes it must run."""
import types

import pytest

from tasks.models.rms import invariant
from tasks.models.rms.encode import Encoded
from tasks.models.rms.seq_cls import SeqClsRM, score_in_windows


def reference_width(n: int) -> int:
    """Steps of 16 up to 64; above, the octave (2^(k-1), 2^k] holding n cut in 4 equal steps."""
    if n <= 64:
        return max(16, -(-n // 16) * 16)
    lo = 2 ** ((n - 1).bit_length() - 1)
    return next(lo + j * lo // 4 for j in range(1, 5) if lo + j * lo // 4 >= n)


def reference_rows(width: int) -> int:
    return max(1, min(64, 8192 // width))


def test_gpu_widths_are_the_documented_buckets_around_every_power_of_two():
    lengths = sorted({n + d for k in range(1, 14) for n in (2 ** k,) for d in (-1, 0, 1)} | set(range(1, 300)))
    for n in lengths:
        w = invariant.width(n, "cuda:0")
        assert w == reference_width(n), n
        assert w >= n and (w - n < 16 if n <= 64 else (w - n) * 4 <= n), f"{n}: padded at most 1/4 over its length"
    assert [invariant.width(n, "cuda") for n in (64, 65, 80, 81, 128, 129, 160, 161)] == [64, 80, 80, 96, 128, 160, 160, 192]
    assert [invariant.width(n, "cuda") for n in (1, 16, 17)] == [16, 16, 32]


def test_cpu_runs_each_answer_alone_at_its_exact_length():
    assert all(invariant.width(n, "cpu") == n for n in (1, 63, 64, 65, 129, 4097))
    assert invariant.rows(128, "cpu") == 1 and invariant.rows(16, "cpu") == 1
    assert invariant.plan([5, 9, 5], "cpu") == [([0], 1, 5), ([2], 1, 5), ([1], 1, 9)]


def test_gpu_rows_are_8192_tokens_over_the_width_at_most_64():
    for w in (16, 32, 64, 80, 128, 129, 160, 256, 1024, 5120, 8192, 12288):
        assert invariant.rows(w, "cuda") == reference_rows(w), w
    assert [invariant.rows(w, "cuda") for w in (16, 128, 256, 8192, 16384)] == [64, 64, 32, 1, 1]


def test_a_gpu_plan_covers_each_answer_once_in_micro_batches_of_its_bucket_and_the_buckets_rows():
    lengths = [300, 17, 64, 65, 300, 1, 2000] * 20
    plan = invariant.plan(lengths, "cuda")
    seen = sorted(i for idx, _, _ in plan for i in idx)
    assert seen == list(range(len(lengths))), "every answer exactly once"
    for idx, rows, w in plan:
        assert rows == reference_rows(w) and 1 <= len(idx) <= rows
        assert {reference_width(lengths[i]) for i in idx} == {w}
        assert idx == sorted(idx), "input order within a bucket"


class _Recorder:
    """A stand-in model: records the (rows, width) of every forward and scores a row by its own tokens."""

    def __init__(self):
        self.shapes = []

    def __call__(self, input_ids, attention_mask, **_):
        import torch

        self.shapes.append(tuple(input_ids.shape))
        return types.SimpleNamespace(logits=(input_ids * attention_mask).sum(-1, keepdim=True).float())


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_every_forward_runs_the_shape_the_answers_own_length_fixes(device):
    model = _Recorder()
    rm = types.SimpleNamespace(model=model, pad_id=0, left_pad=False, device="cpu")
    lengths = [3, 70, 70, 70, 17, 300, 300, 3]
    encs = [Encoded([1 + (i % 5)] * n, None, False, "", "") for i, n in enumerate(lengths)]
    scores = score_in_windows(list(range(len(encs))), lambda xs: [encs[i] for i in xs],
                              lambda batch, **shape: SeqClsRM._forward(rm, batch, **shape), batch_size=4,
                              plan=lambda ls: invariant.plan(ls, device))
    assert [s.score for s in scores] == [float(sum(e.ids)) for e in encs], "each answer's own score, fillers dropped"
    want = sorted((reference_rows(reference_width(n)), reference_width(n)) if device == "cuda" else (1, n)
                  for n in lengths)
    got = sorted(model.shapes)
    assert set(got) == set(want) and all(s in want for s in got), "rows and width fixed by each answer's length"
    if device == "cuda":
        assert len(got) == len({reference_width(n) for n in lengths}), "one micro-batch per bucket here"
    else:
        assert len(got) == len(lengths)


@pytest.mark.parametrize("device, kind", [("cpu", "cpu"), ("cuda", "cuda"), ("cuda:1", "cuda"), ("mps", "cpu")])
def test_the_device_kind(device, kind):
    assert invariant.device_kind(device) == kind


def test_the_bucket_grid_holds_a_length_4000_at_4096_and_the_plan_splits_a_full_bucket():
    assert invariant.width(4000, "cuda") == 4096 and invariant.rows(4096, "cuda") == 2
    assert invariant.plan([4000, 10, 4000, 4000], "cuda") == [([1], 64, 16), ([0, 2], 2, 4096), ([3], 2, 4096)]
    assert invariant.plan([], "cuda") == []


def test_a_kind_that_pads_itself_runs_one_answer_per_call_at_its_length():
    assert invariant.one_each([7, 3], "cuda") == [([0], 1, 7), ([1], 1, 3)]
