"""A planner row that never parsed (issue 11 item 4): the RM then sees the question only, so
such pairs are marked in the scores, counted per RM x strategy in the leaderboard (parquet,
metrics) and named under the text table, beside the accuracy."""
from tasks.stages.leaderboard import format_table, leaderboard_metrics, leaderboard_rows
from tasks.models.rms.registry import make_rm
from tasks.stages.score import score_rows, summary
from tasks.models.strategies import contexts

QUESTIONS = {f"q{i}": {"id": f"q{i}", "question": f"Question {i}?", "rubric_aspects": [
    {"aspect": "Cheap", "evidence": "e", "reason": "r"}]} for i in range(4)}
PAIRS = [{"question_id": q, "domain": "Art", "split": "test", "chosen": "a longer chosen answer here",
          "rejected": "short one"} for q in QUESTIONS]
INFERRED = {"q0": ["Budget"], "q1": None, "q2": ["Tone"], "q3": None}   # q1, q3: the planner never parsed
LB = {"tie_policy": "strict", "bootstrap": 50, "ci": 0.95, "split": "test"}


def test_failed_planner_rows_are_marked_counted_and_reported():
    rm = make_rm("longer", {"kind": "length-longer"}, None)
    rows = []
    for strategy in ("none", "planner"):
        ctx = contexts(strategy, QUESTIONS, {}, INFERRED)
        rows += score_rows(rm, "personalised", strategy, PAIRS, QUESTIONS, ctx)
    planner = [r for r in rows if r["strategy"] == "planner"]
    assert [r["planner_failed"] for r in planner] == [False, True, False, True]
    assert not any(r["planner_failed"] for r in rows if r["strategy"] == "none")
    assert summary(rows)["personalised/planner"]["planner_failed"] == 2
    board = leaderboard_rows(rows, LB, 1)
    micro = {r["strategy"]: r for r in board if r["domain"] == "micro"}
    assert micro["planner"]["planner_failed_rows"] == 2 and micro["none"]["planner_failed_rows"] == 0
    assert leaderboard_metrics(board, rows, LB)["rms"]["longer"]["planner"]["planner_failed_rows"] == 2
    assert "longer / planner: 2 of 4 pairs had no parsed plan" in format_table(board)


def test_a_failed_plan_still_shows_the_question_only():
    ctx = contexts("planner", QUESTIONS, {}, INFERRED)
    assert ctx["q1"] == "" and ctx["q0"].endswith("Budget") and ctx.failed == {"q1", "q3"}
