"""The LLM rubric judge's reply budget (issue 11 item 1): it comes from params through make_judge,
its default fits long rubrics, and unparseable verdicts are reported per rubric size. Tokenizer-
free: the scripted judge cuts its reply the way a Qwen tokenizer counts it (each digit, comma,
space and bracket one token: ~3 tokens per aspect)."""
import re

import pytest

from tasks.downstream.bon.judge_stage import judge_candidates, judge_metrics
from tasks.core.errors import ConfigError
from tasks.models.judge import make_judge
from tasks.models.llm import Completion
from tasks.stages.pairs import judge_pairs, pair_metrics
from tests.conftest import ROOT

TOKEN = re.compile(r"\d|\s+|[^\s\d]+")


class CuttingLLM:
    """Replies with a full-marks list for the n items in the prompt, cut at max_tokens."""

    class backend:
        @staticmethod
        def identity():
            return "cutting"

    def __init__(self):
        self.budgets = []

    def generate_many(self, requests, progress=None):
        out = []
        for messages, params, _ in requests:
            self.budgets.append(params.max_tokens)
            n = int(re.search(r"JSON list of (\d+) digits", messages[0]["content"]).group(1))
            tokens = TOKEN.findall(str([2] * n))
            cut = len(tokens) > params.max_tokens
            out.append(Completion("".join(tokens[:params.max_tokens]), 1, 1, 0.0,
                                  finish_reason="length" if cut else "stop"))
        return out


def question(qid, n):
    return {"id": qid, "question": f"Question {qid}?",
            "rubric_aspects": [{"aspect": f"aspect {i}", "evidence": "e", "reason": ""} for i in range(n)]}


def judge(llm, **cfg):
    return make_judge({"kind": "llm", "llm": "x", "mode": "all", "prompt": str(ROOT / "prompts/judge_all.txt"),
                       "parse_retries": 0, **cfg}, encoder_factory=None, llm_factory=lambda name: llm)


@pytest.mark.parametrize("n", [6, 12, 20])
def test_long_rubrics_parse_within_the_default_budget(n):
    (v,) = judge(CuttingLLM()).judge([(question("q", n), "an answer")])
    assert v.valid and v.per_aspect == [2] * n


def test_the_budget_comes_from_params():
    llm = CuttingLLM()
    (v,) = judge(llm, max_tokens=16).judge([(question("q", 6), "an answer")])
    assert llm.budgets == [16] and not v.valid, "6 aspects need 18 tokens: cut, unparseable"
    with pytest.raises(ConfigError, match="judge.max_tokens"):
        judge(llm, max_tokens=0)


def _samples(qids):
    from tasks.downstream.bon.sample import answer_hash

    return [{"question_id": q, "domain": "Art", "sample_index": 0, "valid": True, "text": f"answer to {q}",
             "answer_hash": answer_hash(f"answer to {q}")} for q in qids]


def test_unparseable_verdicts_are_reported_per_number_of_aspects():
    questions = {"short": question("short", 3), "long": question("long", 7)}
    small = judge(CuttingLLM(), max_tokens=16)   # fits 3 aspects (9 tokens), not 7 (21)
    samples = _samples(["short", "long"])
    m = judge_metrics(judge_candidates(samples, questions, small), samples, questions)
    assert m["unparseable_by_aspects"] == [{"aspects": 3, "judged": 1, "unparseable": 0},
                                           {"aspects": 7, "judged": 1, "unparseable": 1}]
    pairs = [{"question_id": q, "domain": "Art", "split": "test", "chosen": "c", "rejected": "r", "generator": "g",
              "chosen_words": 1, "rejected_words": 1, "length_ratio": 1.0} for q in questions]
    judged = judge_pairs(pairs, questions, small, "reference")
    by_size = pair_metrics({"reference": judged}, {q: len(x["rubric_aspects"]) for q, x in questions.items()})
    assert by_size["reference"]["unparseable_by_aspects"] == [{"aspects": 3, "judged": 2, "unparseable": 0},
                                                             {"aspects": 7, "judged": 2, "unparseable": 2}]
