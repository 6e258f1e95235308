"""The RM registry, the baseline and judge kinds, and profile strategies."""
import pytest

from tasks.core.errors import ConfigError
from tasks.models.rms.base import PairInput
from tasks.models.rms.registry import make_rm
from tasks.models.strategies import contexts

P = [PairInput("q1", "How do I start a garden?", "", "short answer here", "a much longer answer with more words"),
     PairInput("q2", "Which bike?", "", "a long detailed answer about bikes", "brief")]


class Res:
    seed = 5

    def __init__(self, llm=None, encoder=None):
        self._llm, self._encoder = llm, encoder

    def llm(self, name):
        return self._llm

    def encoder(self, name):
        return self._encoder


def test_unknown_kind_and_option_are_clear_errors():
    with pytest.raises(ConfigError, match=r"scoring.rms.x.kind: unknown name 'seq_cls' \(did you mean 'seq-cls'\?\)"):
        make_rm("x", {"kind": "seq_cls"}, Res())
    with pytest.raises(ConfigError, match=r"scoring.rms.x.sed: not an option of kind 'random'.*did you mean 'seed'"):
        make_rm("x", {"kind": "random", "sed": 1}, Res())


def test_length_baselines():
    longer = make_rm("l", {"kind": "length-longer"}, Res()).score_pairs(P)
    shorter = make_rm("s", {"kind": "length-shorter"}, Res()).score_pairs(P)
    assert [s.chosen.score > s.rejected.score for s in longer] == [False, True]
    assert [s.chosen.score > s.rejected.score for s in shorter] == [True, False]


def test_random_is_seeded_and_order_free():
    a = make_rm("r", {"kind": "random", "seed": 1}, Res()).score_pairs(P)
    b = make_rm("r", {"kind": "random", "seed": 1}, Res()).score_pairs(P[::-1])[::-1]
    c = make_rm("r", {"kind": "random", "seed": 2}, Res()).score_pairs(P)
    assert a == b and a != c


def test_similarity_reads_the_context():
    from tasks.models.encoders import Encoder

    rm = make_rm("sim", {"kind": "similarity"}, Res(encoder=Encoder("embedded:all-MiniLM-L6-v2")))
    curry, steak = "Try a lentil and tofu curry.", "Try a steak with butter."
    vegan = PairInput("q", "What should I cook tonight?", "My past posts: I am vegan and cook lentils and tofu.",
                      curry, steak)
    griller = PairInput("q", "What should I cook tonight?",   # same question and answers, the other user
                        "My past posts: I grill steak every weekend and love butter.", curry, steak)
    (v, g) = rm.score_pairs([vegan, griller])
    assert v.chosen.score > v.rejected.score, "the vegan's context prefers the curry"
    assert g.chosen.score < g.rejected.score, "the griller's context flips it to the steak"


class ScriptedLLM:
    """choice_logprobs returns preset preferences by which answer is shown as A."""

    class backend:
        @staticmethod
        def identity():
            return "scripted"

    def __init__(self, prefer_first=None, texts=None):
        self.prefer_first, self.texts, self.calls = prefer_first, texts, []

    def choice_logprobs(self, messages, choices):
        content = messages[0]["content"]
        self.calls.append(content)
        if self.prefer_first:   # always "A": pure position bias
            return {choices[0]: -0.1, choices[1]: -2.0}
        a = content.split("Answer A:")[1].split("Answer B:")[0]
        good = "GOOD" in a
        return {choices[0]: -0.2 if good else -1.5, choices[1]: -1.5 if good else -0.2}

    def generate_many(self, requests, progress=None):
        from tasks.models.llm import Completion, LLMCallFailed

        return [LLMCallFailed("boom") if t is None else Completion(t, 1, 1, 0.0) for t in self.texts]


PAIR = [PairInput("q", "Q?", "ctx", "GOOD answer", "bad answer")]


def test_pairwise_judge_uses_both_orders_and_reports_position_bias():
    fair = make_rm("j", {"kind": "judge-pairwise", "llm": "x"}, Res(ScriptedLLM()))
    (s,) = fair.score_pairs(PAIR)
    assert s.chosen.score > s.rejected.score and s.order_consistent is True
    biased = ScriptedLLM(prefer_first=True)
    (s,) = make_rm("j", {"kind": "judge-pairwise", "llm": "x"}, Res(biased)).score_pairs(PAIR)
    assert len(biased.calls) == 2 and s.order_consistent is False
    assert s.chosen.score == s.rejected.score == 0.0, "pure position bias cancels to a tie"


def test_unparseable_judge_reply_is_invalid_not_a():
    llm = ScriptedLLM(texts=["I cannot decide.", "B", None])
    rm = make_rm("j", {"kind": "judge-pairwise", "llm": "x", "verdict": "reply", "both_orders": False}, Res(llm))
    scores = rm.score_pairs(PAIR * 3)
    assert [s.chosen.score for s in scores] == [None, -1.0, None]


def test_pointwise_reply_parses_1_to_10():
    llm = ScriptedLLM(texts=["8", "Score: 3/10", "great", None])
    rm = make_rm("p", {"kind": "judge-pointwise", "llm": "x", "verdict": "reply",
                       "prompt": "prompts/rm_pointwise_scale.txt"}, Res(llm))
    scores = rm.score_pairs(PAIR * 2)
    assert [(s.chosen.score, s.rejected.score) for s in scores] == [(8.0, 3.0), (None, None)]


def test_strategies():
    q = {"q": {"id": "q", "question": "Q?", "narrative": "SECRET",
               "rubric_aspects": [{"aspect": "Cheap", "evidence": "e", "reason": "r"}]}}
    assert contexts("none", q, {}, {}) == {"q": ""}
    assert contexts("raw_profile", q, {"q": "[1] post"}, {})["q"].endswith("[1] post")
    assert contexts("planner", q, {}, {"q": ["Budget"]})["q"].endswith("Budget")
    assert contexts("planner", q, {}, {"q": None})["q"] == ""
    assert contexts("oracle", q, {}, {})["q"].endswith("Cheap")
    assert all("SECRET" not in c["q"] for c in (contexts(s, q, {"q": "p"}, {"q": ["a"]})
                                               for s in ("none", "raw_profile", "planner", "oracle")))
    with pytest.raises(ConfigError, match="strategy: unknown name .narrative."):
        contexts("narrative", q, {}, {})
