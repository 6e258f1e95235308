"""RL evaluation counts every question (docs/statistics.md#rl): an empty or failed answer, an unparseable
verdict and a question a policy never answered all score the judge's minimum (0) and stay in the mean; the
counts say which was which. Scores by hand from a scripted judge."""
from __future__ import annotations

import pytest

from tasks.downstream.rl import evaluate
from tasks.models.judge import Verdict

VERDICTS = {"good": Verdict([2, 2]), "fair": Verdict([1, 1]), "mumble": Verdict(None, "no digits")}


class Scripted:
    """A rubric judge by the answer's text: good 1.0, fair 0.5, mumble unparseable."""

    def judge(self, items):
        return [VERDICTS[text] for _, text in items]


def _rows(name: str, answers: dict) -> list[dict]:
    from tasks.downstream.bon.sample import answer_hash

    return [{"rm": name, "baseline": name == evaluate.BASELINE, "question_id": q, "domain": "Art", "split": "test",
             "text": t, "valid": bool(t), "error": "" if t else "empty reply", "answer_hash": answer_hash(t) if t else None,
             "finish_reason": "stop", "judge_score": None, "score": None, "policy": name} for q, t in answers.items()]


def _table():
    rows = (_rows(evaluate.BASELINE, {"q0": "good", "q1": "fair", "q2": "fair"})
            + _rows("blank", {"q0": "good", "q1": "", "q2": "fair"})
            + _rows("mute", {"q0": "mumble", "q1": "good", "q2": "good"})
            + _rows("absent", {"q0": "good", "q1": "fair"}))   # never answered q2
    evaluate.judge_answers(rows, {q: {"id": q} for q in ("q0", "q1", "q2")}, Scripted())
    lines = [evaluate.BASELINE, "blank", "mute", "absent"]
    return {r["rm"]: r for r in evaluate.summarise(rows, lines, {}, 200, 0.95, 1)}, rows


def test_every_question_counts_and_what_scored_the_minimum_is_counted_by_kind():
    table, rows = _table()
    assert {rm: r["mean_score"] for rm, r in table.items()} == pytest.approx(
        {evaluate.BASELINE: 2 / 3, "blank": 0.5, "mute": 2 / 3, "absent": 0.5})
    assert {rm: (r["questions"], r["scored"], r["invalid_answers"], r["unparseable_verdicts"]) for rm, r in table.items()} == {
        evaluate.BASELINE: (3, 3, 0, 0), "blank": (3, 2, 1, 0), "mute": (3, 2, 0, 1), "absent": (3, 2, 0, 0)}
    assert table["blank"]["gain_over_baseline"] == round(0.5 - 2 / 3, 6)   # written to 6 decimals
    scored = {(r["rm"], r["question_id"]): (r["judge_score"], r["score"]) for r in rows}
    assert scored[("blank", "q1")] == (None, evaluate.MIN_SCORE) and scored[("mute", "q0")] == (None, evaluate.MIN_SCORE)
