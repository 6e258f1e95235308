"""The list-wise rule (m correct vs n incorrect), its tie credit and chance level; pairs (m = n = 1)
score byte-identically to the pairwise stage before list-wise scoring existed; a pairwise-only RM
scores a list by comparing each correct answer with each incorrect one, and says so."""
import hashlib
from pathlib import Path

import pytest

from tasks.models.listwise import PAIRWISE_EACH, POINTWISE, Item, chance, credit, outcome, score_items
from tasks.models.rms.base import AnswerScore, PairScore, RewardModel
from tests.test_score_stage import _project, _run

# sha256 of data/scores/<rm>.parquet written by the score stage on this small project: first pinned at main
# 1c02128 (before list-wise scoring), re-pinned once when issue 48 added the `score_dtype` column (the rows'
# values unchanged): the pairwise stage must keep writing exactly these bytes
GOLDEN = {"longer": "4c5df4db71a3659e85a44970cbd9a721b679013812ef518ae5685f975e02870c",
          "shorter": "4660d336b9af7627d2b6e38dcb5b4f73f25482d71aca69ad7366d1ccc1df002a",
          "random": "e5fef69f838ffccfe2e9c1c89e7b777b0b6b7ab1b97d7c49ff1f7b7b2d2fcc9e",
          "judge": "dff401c80f554d36be1e4fd49974b8e824b4993d993b6986cee18bd4c094adff"}
RMS = {"longer": {"kind": "length-longer"}, "shorter": {"kind": "length-shorter"}, "random": {"kind": "random"},
       "judge": {"kind": "judge-pairwise", "llm": "test-llm", "verdict": "reply", "both_orders": True}}


def test_pairwise_scores_are_byte_identical_to_before(tmp_path):
    params = _project(tmp_path, rms=RMS)
    for rm in RMS:
        _, rows, out = _run(tmp_path, params, rm)
        assert len(rows) == 27
        assert hashlib.sha256(Path(out["scores"]).read_bytes()).hexdigest() == GOLDEN[rm], rm


def test_chance_level():
    assert chance(1, 1) == 0.5 and chance(1, 3) == 0.25 and chance(2, 2) == pytest.approx(1 / 6)
    assert chance(3, 3) == pytest.approx(1 / 20)


@pytest.mark.parametrize("correct, incorrect, want", [
    ([5.0], [2.0, 3.0, 1.0], (True, False, 1.0)),
    ([2.0], [5.0, 1.0], (False, False, 0.0)),
    ([3.0], [3.0, 1.0, 2.0], (False, True, 0.5)),          # one correct among 2 top scorers: 1/2
    ([4.0], [4.0, 4.0, 1.0], (False, True, 1 / 3)),        # among 3 top scorers: 1/3 (RewardBench 2)
    ([6.0, 3.0], [3.0, 3.0, 1.0], (False, True, 1 / 3)),   # 1 correct and 2 incorrect tied at 3: 1/C(3,1)
    ([6.0, 7.0], [2.0, 3.0], (True, False, 1.0)),          # every correct above every incorrect
    ([6.0, 2.0], [3.0], (False, False, 0.0)),              # one correct below an incorrect: wrong
])
def test_outcome(correct, incorrect, want):
    got = outcome(correct, incorrect)
    assert (got["correct"], got["tie"]) == want[:2] and got["tie_credit"] == pytest.approx(want[2])
    assert not got["invalid"]


def test_missing_score_is_invalid_and_wrong_under_every_policy():
    row = outcome([1.0], [None, 0.0])
    assert row["invalid"] and not row["correct"]
    assert all(credit(row, p) == 0.0 for p in ("strict", "half", "drop"))
    tie = outcome([1.0], [1.0])
    assert (credit(tie, "strict"), credit(tie, "half"), credit(tie, "drop")) == (0.0, 0.5, None)


class _Judge(RewardModel):
    """A pairwise-only RM: prefers the longer answer; records every comparison it was asked."""
    kind = "test-pairwise"

    def __init__(self):
        super().__init__("judge", {"kind": self.kind})
        self.asked = []

    def identity(self):
        return self.kind

    def score_pairs(self, pairs):
        self.asked += [(p.chosen, p.rejected) for p in pairs]
        out = []
        for p in pairs:
            m = float(len(p.chosen) - len(p.rejected))
            out.append(PairScore(AnswerScore(m / 2), AnswerScore(-m / 2)))
        return out


def test_pairwise_only_rm_compares_each_correct_with_each_incorrect():
    judge = _Judge()
    items = [Item("a", "q", ("xxxx", "xxx"), ("x", "xx")), Item("b", "q", ("xxx",), ("xxxx", "x", "xx"))]
    rows = score_items(judge, items, ["", ""])
    assert judge.asked == [("xxxx", "x"), ("xxxx", "xx"), ("xxx", "x"), ("xxx", "xx"),
                           ("xxx", "xxxx"), ("xxx", "x"), ("xxx", "xx")]
    assert [r["method"] for r in rows] == [PAIRWISE_EACH] * 2
    assert rows[0]["margins"] == [3.0, 2.0, 2.0, 1.0] and rows[0]["correct"]
    assert rows[1]["margins"] == [-1.0, 2.0, 1.0] and not rows[1]["correct"] and not rows[1]["tie"]
    assert rows[0]["scores_correct"] == [] and rows[1]["chance"] == 0.25


def test_pointwise_rm_keeps_every_answer_score():
    from tasks.models.rms.baselines import LengthLonger

    rows = score_items(LengthLonger("l", {}), [Item("a", "q", ("one two", "one two three"), ("one",))], [""])
    assert rows[0]["method"] == POINTWISE
    assert rows[0]["scores_correct"] == [2.0, 3.0] and rows[0]["scores_incorrect"] == [1.0]
    assert len(rows[0]["input_hashes"]) == 3 and rows[0]["chance"] == pytest.approx(1 / 3, abs=1e-6)
