"""The shapes of batch-invariant scoring (tasks/models/rms/invariant.py, docs/determinism.md#batch-invariant-scoring):
an answer's forward pass has a width set by its own length and a row count set by that width and the device kind,
never by its batch mates or their order. Cases on each boundary: a width exactly on a step, one token past it, an
octave's edge, the row cap, a bucket that splits into several micro-batches."""
import pytest

from tasks.models.rms import invariant


@pytest.mark.parametrize("device, kind", [("cpu", "cpu"), ("cuda", "cuda"), ("cuda:1", "cuda"), ("mps", "cpu")])
def test_the_device_kind(device, kind):
    assert invariant.device_kind(device) == kind


def test_on_cpu_an_answer_runs_alone_at_its_exact_length():
    assert [invariant.width(n, "cpu") for n in (1, 17, 65, 300)] == [1, 17, 65, 300]
    assert invariant.rows(17, "cpu") == invariant.rows(4096, "cpu") == 1


@pytest.mark.parametrize("length, width", [(1, 16), (16, 16), (17, 32), (48, 48), (49, 64), (64, 64),
                                           (65, 80), (80, 80), (81, 96), (128, 128), (129, 160), (256, 256),
                                           (257, 320), (4000, 4096)])
def test_on_a_gpu_widths_step_by_16_to_64_then_by_a_quarter_octave(length, width):
    assert invariant.width(length, "cuda") == width
    assert width - length < max(16, length / 4), "padding at most a step: 16 tokens, or a quarter of the answer"


@pytest.mark.parametrize("width, rows", [(16, 64), (128, 64), (160, 51), (4096, 2), (8192, 1), (10000, 1)])
def test_on_a_gpu_a_micro_batch_holds_8192_tokens_at_most_64_rows_at_least_one(width, rows):
    assert invariant.rows(width, "cuda") == rows


def test_the_plan_covers_each_answer_once_by_bucket_in_input_order():
    assert invariant.plan([5, 3, 5], "cpu") == [([1], 1, 3), ([0], 1, 5), ([2], 1, 5)]
    assert invariant.plan([5, 70, 3, 12], "cuda") == [([0, 2, 3], 64, 16), ([1], 64, 80)]
    assert invariant.plan([4000, 10, 4000, 4000], "cuda") == [([1], 64, 16), ([0, 2], 2, 4096), ([3], 2, 4096)]
    assert invariant.plan([], "cuda") == []


def test_a_kind_that_pads_itself_runs_one_answer_per_call_at_its_length():
    assert invariant.one_each([7, 3], "cuda") == [([0], 1, 7), ([1], 1, 3)]
