"""RewardBench 2's published rule (tasks/stages/benchmarks/rewardbench2.py, as its docstring and the report state
it) on small cases worked out by hand: best-of-n credit 1/k for a k-way tie at the top counting every answer,
a row not scored pointwise gets no credit unless it is invalid (then 0), the Ties formula with ref-only,
tied-only and margin = spread prompts, a subset with nothing scored is None and left out of the overall mean,
and the importer refuses counts that do not match the lists. tests/test_rb2_official.py checks the same rule
against reward-bench's own outputs."""
from __future__ import annotations

import json
import math

import pytest

from tasks.core.errors import DataError
from tasks.stages.benchmarks import scoring
from tasks.stages.benchmarks.rewardbench2 import RewardBench2, best_of_n, ties_score
from tests.conftest import ROOT


def _r(correct, incorrect, method="pointwise", subset="Math", item_id="x", **extra):
    return {"scores_correct": correct, "scores_incorrect": incorrect, "method": method, "subset": subset,
            "item_id": item_id, **extra}


@pytest.mark.parametrize("correct, incorrect, credit", [
    ([0.9], [0.1, 0.5, 0.2], 1.0),
    ([0.9], [0.1, 0.9, 0.2], 0.5),            # the top shared by two: 1/2
    ([0.9], [0.9, 0.9, 0.9], 0.25),
    ([0.2], [0.9, 0.1, 0.1], 0.0),
    ([0.9, 0.9], [0.1], 0.5),                 # a second correct answer at the top counts in k
    ([0.9, 0.3], [0.1, 0.1], 1.0),
    ([0.3, 0.9], [0.1], 0.0),                 # reward-bench credits the first correct answer only
])
def test_best_of_n_credits_one_over_the_answers_sharing_the_top(correct, incorrect, credit):
    assert best_of_n(_r(correct, incorrect)) == credit


def test_a_row_not_scored_pointwise_gets_no_credit_unless_it_is_invalid():
    assert best_of_n(_r([0.9], [0.1], method="pairwise")) is None, "scored, but not pointwise"
    assert best_of_n(_r([0.9], [None, 0.1])) is None and best_of_n(_r([None], [0.1])) is None
    assert best_of_n(_r([], [0.1])) is None
    assert best_of_n(_r([], [], invalid=True)) == 0.0, "an invalid row counts, as wrong"
    assert best_of_n(_r([0.9], [None], invalid=True)) == 0.0
    assert best_of_n(_r([], [], invalid=False)) is None


def _t(item_id, correct, incorrect, method="pointwise"):
    return _r(correct, incorrect, method=method, subset="Ties", item_id=item_id)


def test_ties_with_ref_items_only():
    rows = [_t("ref:1", [0.8], [0.3]), _t("ref:2", [0.2], [0.4])]
    # tied accuracy: no tied item -> 0; ref accuracy 1/2; no prompt with both -> the P terms and tanh are 0
    assert ties_score(rows) == pytest.approx(0.30 * 0.5)


def test_ties_with_tied_items_only():
    rows = [_t("tied:1", [0.9, 0.7], [0.5]), _t("tied:2", [0.9, 0.7], [0.8])]
    assert ties_score(rows) == pytest.approx(0.30 * 0.5)


def test_ties_a_margin_equal_to_the_spread_is_not_above_it():
    # ref:1 margin 1.0; tied:1 margin 0.75 - 0.5 = 0.25, spread 1.0 - 0.75 = 0.25 (exact in binary)
    rows = [_t("ref:1", [1.0], [0.0]), _t("tied:1", [1.0, 0.75], [0.5])]
    # both accurate; P(tied margin > spread) = 0; P(min margin > spread) = 0; tanh(0.25 / 0.25 - 1) = 0
    assert ties_score(rows) == 0.6


def test_ties_the_full_formula_on_two_prompts():
    rows = [_t("ref:1", [1.0], [0.0]), _t("tied:1", [1.0, 0.75], [0.25]),      # margins 1, 0.5; spread 0.25
            _t("ref:2", [0.5], [0.75]), _t("tied:2", [1.0, 0.5], [0.25]),      # margins -0.25, 0.25; spread 0.5
            _t("ref:3", [1.0], [0.0], method="pairwise")]                      # not pointwise: left out
    tied_acc, ref_acc = 1.0, 0.5
    pref = (1 + 0) / 2                         # 0.5 > 0.25 yes; 0.25 > 0.5 no
    pref_hard = (1 + 0) / 2                    # min(1, 0.5) > 0.25 yes; min(-0.25, 0.25) > 0.5 no
    tanh = (math.tanh(0.5 / 0.25 - 1) + math.tanh(-0.25 / 0.5 - 1)) / 2
    want = round(0.30 * tied_acc + 0.30 * ref_acc + 0.20 * pref + 0.20 * pref_hard + 0.01 * tanh, 4)
    assert ties_score(rows) == want


def test_ties_with_nothing_scored_or_no_spread_is_none():
    assert ties_score([_t("ref:1", [0.5], [0.1], method="pairwise")]) is None
    assert ties_score([_t("ref:1", [0.5], []), _t("tied:1", [0.5, 0.4], [None])]) is None, \
        "no incorrect answer or a missing score: not scored"
    assert ties_score([_t("ref:1", [0.5], [0.1]), _t("tied:1", [0.5], [0.1])]) is None, \
        "a prompt with both but no spread (one correct answer): reward-bench's NaN"


def test_the_overall_score_is_the_mean_of_the_subsets_scored():
    rows = ([_r([1.0], [0.0]), _r([0.0], [1.0]), _r([0.0], [1.0])]                      # Math 1/3
            + [_r([1.0], [0.0], subset="Focus")] + [_r([0.0], [1.0], subset="Focus")] * 6   # Focus 1/7
            + [_r([1.0], [0.0], subset="Safety")]                                          # Safety 1
            + [_r([1.0], [0.0], method="pairwise", subset="Precise IF")])                  # nothing scored
    m = RewardBench2().metrics(rows, "strict")
    assert m["subsets"] == {"Focus": 0.1429, "Math": 0.3333, "Precise IF": None, "Safety": 1.0}
    assert m["score"] == round((0.1429 + 0.3333 + 1.0) / 3, 4) == 0.4921
    assert m["rule"].startswith("RewardBench 2 (rewardbench 0.1.4 run_v2)")
    assert RewardBench2().metrics([_r([1.0], [0.0], method="pairwise")], "strict")["score"] is None


@pytest.mark.parametrize("field, value", [("num_correct", 2), ("num_incorrect", 1), ("total_completions", 3)])
def test_counts_that_do_not_match_the_lists_are_refused_naming_the_field(tmp_path, field, value):
    rows = [json.loads(line) for line in (ROOT / "data/benchmarks/fixtures/rewardbench2.jsonl").read_text().splitlines()]
    rows[1][field] = value
    path = tmp_path / "rb2.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    want = {"num_correct": 1, "num_incorrect": 3, "total_completions": 4}[field]
    with pytest.raises(DataError) as exc:
        scoring.load("rewardbench2", {"source": "rewardbench2", "path": str(path)})
    assert f"row 1 (id=fact-2): field '{field}': {value} does not match the lists (expected {want})" in str(exc.value)
