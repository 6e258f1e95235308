"""Non-finite scores (issue 11 item 6): a judge label outside an OpenAI-compatible server's top
log-probs, through the real backend and a fake server. Both labels missing is no verdict (invalid,
counted), not NaN scored as plain wrong; one label missing is still a clear verdict; and any RM's
NaN or inf score is invalid in the scores table."""
import math

import pytest

from tasks.stages.leaderboard import leaderboard_rows
from tasks.models.llm import LLM, CallCache, make_backend
from tasks.models.rms.registry import make_rm
from tasks.models.rms.base import AnswerScore, RewardModel
from tasks.stages.score import score_rows
from tests.fakes.openai_server import FakeOpenAIServer

PAIRS = [{"question_id": f"q{i}", "domain": "Art", "split": "test", "chosen": f"GOOD answer {i}",
          "rejected": f"bad answer {i}"} for i in range(4)]
QUESTIONS = {p["question_id"]: {"question": "What suits me?"} for p in PAIRS}
CONTEXT = {q: "" for q in QUESTIONS}
LB = {"tie_policy": "strict", "bootstrap": 50, "ci": 0.95}


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


class Res:
    seed = 3

    def __init__(self, llm):
        self._llm = llm

    def llm(self, name):
        return self._llm


def _judge(server, tmp_path, kind="judge-pairwise"):
    backend = make_backend({"backend": "openai", "model": "judge", "base_url": server.url + "/v1"})
    return make_rm("j", {"kind": kind, "llm": "x"}, Res(LLM(backend, CallCache(tmp_path / "c.sqlite"))))


def no_label(messages):
    return {"The": -0.1, "Sure": -2.5}   # neither "A" nor "B" among the top tokens


def only_the_winner(messages):
    text = messages[-1]["content"]
    a = text.split("Answer A:")[1].split("Answer B:")[0]
    return {"A" if "GOOD" in a else "B": -0.01, "The": -5.0}   # the other label is below the top list


def test_no_label_in_the_top_logprobs_is_invalid_not_wrong(tmp_path):
    with FakeOpenAIServer(logprobs_handler=no_label) as server:
        rows = score_rows(_judge(server, tmp_path), "personalised", "none", PAIRS, QUESTIONS, CONTEXT)
    assert all(r["invalid"] and r["score_chosen"] is None for r in rows), "never a NaN score"
    (micro,) = [r for r in leaderboard_rows(rows, LB, 1) if r["domain"] == "micro"]
    assert micro["invalid"] == 4 and micro["accuracy"] == 0.0


def test_one_label_below_the_top_list_is_still_a_finite_verdict(tmp_path):
    with FakeOpenAIServer(logprobs_handler=only_the_winner) as server:
        rows = score_rows(_judge(server, tmp_path), "personalised", "none", PAIRS, QUESTIONS, CONTEXT)
    assert all(r["correct"] and not r["invalid"] and math.isfinite(r["score_chosen"]) for r in rows)


class Odd(RewardModel):
    kind = "odd"

    def identity(self):
        return "odd"

    def score_answers(self, items):
        values = [math.nan, 1.0, 2.0, math.inf, 1.0, 0.5, 2.0, 1.0]
        return [AnswerScore(v) for v, _ in zip(values, items)]


def test_nan_or_inf_from_any_rm_is_invalid_and_counted():
    rows = score_rows(Odd("odd", {}), "personalised", "none", PAIRS, QUESTIONS, CONTEXT)
    assert [r["invalid"] for r in rows] == [True, True, False, False]
    assert [r["correct"] for r in rows] == [False, False, True, True]
    assert rows[0]["score_chosen"] is None and rows[0]["score_rejected"] == 1.0
    assert rows[1]["score_rejected"] is None, "inf is not a score either"


class NanOnHard(RewardModel):
    """Scores an answer by its length, but fails (NaN) on every answer to the hard question."""
    kind = "nan-on-hard"

    def identity(self):
        return "nan-on-hard"

    def score_answers(self, items):
        return [AnswerScore(math.nan if "hard" in question else float(len(answer))) for question, _, answer in items]


def test_a_nan_returning_rm_loses_its_bon_question():
    """Best-of-N counts the question an RM fails on as its worst pick, never skips it: here the RM picks the
    best answer of the easy question (1.0) and, failing on the hard one, its worst (0.2), so its best-of-4 is
    their mean, 0.6, over both questions: not 1.0 over the easy one alone, as when the question was skipped."""
    from tasks.downstream.bon.report import ALL, curve_rows, per_question_rows
    from tasks.downstream.bon.select import sample_rows
    from tasks.downstream.judging import distinct_answers

    questions = {"easy": {"question": "An easy one?"}, "hard": {"question": "A hard one?"}}
    texts = ["a", "bb bb", "ccc ccc ccc", "dddd dddd dddd dddd"]
    judge = {"easy": [0.1, 0.4, 0.7, 1.0], "hard": [0.9, 0.2, 0.6, 0.5]}
    samples = [{"question_id": q, "domain": "Art", "sample_index": i, "valid": True, "answer_hash": f"{q}{i}",
                "text": t} for q in questions for i, t in enumerate(texts)]
    judged = {(r["question_id"], r["answer_hash"]): judge[r["question_id"]][r["sample_index"]] for r in samples}
    todo = distinct_answers(samples)   # as bon_score scores them: each distinct answer once
    scored = NanOnHard("nan", {}).score_answers([(questions[q]["question"], "", text) for (q, _), text in todo])
    rows = sample_rows("nan", "none", samples, {key: (s.score, s.truncated) for (key, _), s in zip(todo, scored)})
    scores = {(r["question_id"], r["sample_index"]): r["score"] for r in rows}
    assert all(math.isnan(scores[("hard", i)]) for i in range(4))
    per_q, counts = per_question_rows(samples, judged, {"nan": scores}, [1, 2, 4])
    curve = {(r["rm"], r["k"]): r for r in curve_rows(per_q, [1, 2, 4], 0, 0.95, 1)
             if r["domain"] == ALL and r["method"] == "expected"}
    assert curve[("nan", 4)]["n_questions"] == 2, "the failed question is counted"
    assert curve[("nan", 4)]["judge_score"] == pytest.approx((1.0 + 0.2) / 2)
    assert curve[("nan", 1)]["judge_score"] == curve[("(random)", 1)]["judge_score"], "k = 1: no pick to lose"
    first_k = {r["question_id"]: r["judge_score"] for r in per_q if r["rm"] == "nan" and r["k"] == 2
               and r["method"] == "first_k"}
    assert first_k == {"easy": 0.4, "hard": 0.2}, "the worst of the first k when none has a score"
    assert counts["nan"]["no_rm_score"] == 4 and counts["nan"]["questions_without_rm_score"] == 1
