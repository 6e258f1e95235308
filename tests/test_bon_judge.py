"""bon_judge through the shared rubric judge (tasks/models/judge.py): 0/1/2 per aspect normalised to
[0, 1], each distinct answer judged once, unparseable verdicts counted and never scored 0."""
import pytest

from tasks.downstream.bon.judge_stage import judge_candidates, judge_metrics
from tasks.models.judge import LLMJudge
from tasks.models.llm import Completion
from tests.conftest import ROOT

QUESTION = {"id": "q1", "question": "How do I start a garden?",
            "rubric_aspects": [{"aspect": "Budget", "evidence": "40 euros", "reason": ""},
                               {"aspect": "Balcony", "evidence": "one metre", "reason": ""}]}


class ScriptedLLM:
    """Replies by the answer inside the prompt; records every prompt it was sent."""

    class backend:
        @staticmethod
        def identity():
            return "scripted"

    def __init__(self, replies: dict[str, str]):
        self.replies, self.prompts = replies, []

    def generate_many(self, requests, progress=None):
        out = []
        for messages, _, _ in requests:
            text = messages[0]["content"]
            self.prompts.append(text)
            out.append(Completion(next(r for a, r in self.replies.items() if a in text), 1, 1, 0.0))
        return out


def _samples(texts):
    from tasks.downstream.bon.sample import answer_hash

    return [{"question_id": "q1", "domain": "Lifestyle", "sample_index": i, "valid": t is not None, "text": t,
             "answer_hash": answer_hash(t) if t is not None else None} for i, t in enumerate(texts)]


def test_llm_verdicts_are_normalised_deduplicated_and_unparseable_ones_counted():
    llm = ScriptedLLM({"GOOD": "[2, 1]", "BAD": "[0, 0]", "ODD": "I like it a lot"})
    judge = LLMJudge(llm, "all", str(ROOT / "prompts" / "judge_all.txt"), retries=1)
    samples = _samples(["GOOD answer", "BAD answer", "GOOD answer", None, "ODD answer"])
    rows = judge_candidates(samples, {"q1": QUESTION}, judge)
    by_text = {s["text"]: r for s in samples if s["valid"] for r in rows if r["answer_hash"] == s["answer_hash"]}
    assert len(rows) == 3, "the duplicate is judged once, the failed sample not at all"
    assert by_text["GOOD answer"]["judge_score"] == pytest.approx(0.75) and by_text["GOOD answer"]["per_aspect"] == [2, 1]
    assert by_text["BAD answer"]["judge_score"] == 0.0 and by_text["BAD answer"]["valid"]
    odd = by_text["ODD answer"]
    assert odd["judge_score"] is None and odd["per_aspect"] is None and not odd["valid"], "never a silent 0"
    assert odd["judge_raw"] == "I like it a lot"
    assert sum("ODD" in p for p in llm.prompts) == 2, "an unparseable verdict is retried, then kept invalid"
    m = judge_metrics(rows, samples)
    assert (m["judged"], m["unparseable"], m["duplicate_answers"], m["valid_samples"]) == (3, 1, 1, 4)
    assert m["mean_score"] == pytest.approx(0.375), "the mean leaves the unparseable verdict out"
    assert all("Budget: 40 euros" in p for p in llm.prompts), "the judge, and only it, sees the gold rubric"


def test_the_same_text_under_two_questions_is_judged_against_each_rubric():
    from tasks.downstream.bon.judge_stage import candidates

    s = _samples(["same words"]) + [{**_samples(["same words"])[0], "question_id": "q2"}]
    assert [c[0] for c in candidates(s)] == ["q1", "q2"]
