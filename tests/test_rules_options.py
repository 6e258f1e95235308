"""The non-default branches of params a user sets (docs/params.md), each by a small case worked out by hand:
the human-eval proxy's `logprobs` verdict (the most likely digit, a tie to the lower rating, any non-finite
digit invalid), the RL options (the batch sizes, `lr_schedule`, per-domain policies, the algorithms, the
training seeds) and the rubric judge (`embedding` thresholds on the answer's best sentence; `llm` per_aspect
and all)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from tasks.core.errors import ConfigError
from tests.conftest import ROOT

# --- human_eval.proxy_verdict: logprobs --------------------------------------------------------------------------


class Digits:
    """choice_logprobs: the same label log-probabilities for every prompt."""

    def __init__(self, lp: dict):
        self.lp = lp
        self.backend = SimpleNamespace(identity=lambda: "digits")

    def choice_logprobs(self, messages, choices):
        return {c: self.lp[c] for c in choices}


PROXY = {"proxy_prompt": str(ROOT / "prompts/annotator_dimension.txt"), "proxy_verdict": "logprobs",
         "proxy_temperature": 0.0, "proxy_max_tokens": 40, "parse_retries": 2, "temperature_bump": 0.3}
ITEM = {"item_id": "it-a", "question_id": "a", "domain": "Art", "split": "test", "question": "q?", "aspects": "- budget",
        "profile": "posts", "chosen": "CHOSEN", "rejected": "REJECTED"}


def _ratings(lp: dict) -> set:
    from tasks.stages.human_eval.proxy import rate

    ratings, _ = rate([ITEM], Digits(lp), "proxy", PROXY, seed=1)
    return {r["score"] for r in ratings}


def test_the_proxy_rates_the_most_likely_digit_a_tie_going_to_the_lower_rating():
    assert _ratings({"1": -3.0, "2": -2.0, "3": -0.5, "4": -1.0, "5": -3.0}) == {3}
    assert _ratings({"1": -3.0, "2": -3.0, "3": -0.5, "4": -0.5, "5": -3.0}) == {3}, "3 and 4 tie: the lower"


def test_one_non_finite_digit_makes_the_rating_invalid():
    assert _ratings({"1": math.nan, "2": -2.0, "3": -0.5, "4": -1.0, "5": -3.0}) == {None}
    assert _ratings({"1": -3.0, "2": -2.0, "3": -0.5, "4": -1.0, "5": -math.inf}) == {None}


# --- rl: batch sizes, lr_schedule, per-domain policies, algorithms, seeds -------------------------------------------

def _sizes(**t):
    from tasks.downstream.rl.trainers import sizes

    return sizes({"lr_schedule": "constant", **t})


def test_batch_sizes_each_divide_the_next_and_a_null_mini_batch_is_the_batch():
    assert _sizes(micro_batch_size=2, mini_batch_size=4, batch_size=8) == (2, 4, 8)
    assert _sizes(micro_batch_size=2, mini_batch_size=None, batch_size=8) == (2, 8, 8)
    for micro, mini in ((3, 4), (2, 3)):
        with pytest.raises(ConfigError, match="micro_batch_size"):
            _sizes(micro_batch_size=micro, mini_batch_size=mini, batch_size=8)


def test_the_lr_schedule_reaches_trl_and_an_unknown_one_is_refused():
    from tasks.downstream.rl.trainers import _common_args

    assert {s: _common_args({"lr_schedule": s})["lr_scheduler_type"] for s in ("constant", "linear")} == \
        {"constant": "constant", "linear": "linear"}
    with pytest.raises(ConfigError, match="rl.train.lr_schedule: unknown 'cosine'"):
        _sizes(micro_batch_size=1, mini_batch_size=None, batch_size=2, lr_schedule="cosine")


def test_per_domain_policies_group_questions_by_domain_in_name_order():
    from tasks.downstream.rl.train import domain_groups

    qs = [{"id": "s1", "domain": "Society"}, {"id": "a1", "domain": "Art"}, {"id": "s2", "domain": "Society"}]
    msgs = ["m-s1", "m-a1", "m-s2"]
    assert domain_groups(qs, msgs, False) == [(None, qs, msgs)]
    assert domain_groups(qs, msgs, True) == [("Art", [qs[1]], ["m-a1"]), ("Society", [qs[0], qs[2]], ["m-s1", "m-s2"])]


@pytest.mark.parametrize("name, config, trainer", [("grpo", "GRPOConfig", "GRPOTrainer"),
                                                   ("rloo", "RLOOConfig", "RLOOTrainer")])
def test_each_group_relative_algorithm_builds_its_own_trainer(monkeypatch, name, config, trainer):
    import sys
    import types

    from tasks.downstream.rl import algorithms, trainers

    # trl's classes by name (importing trl itself takes half a minute; the slow RL tests train with it)
    trl = types.ModuleType("trl")
    for cls in ("GRPOConfig", "GRPOTrainer", "RLOOConfig", "RLOOTrainer"):
        setattr(trl, cls, type(cls, (), {}))
    monkeypatch.setitem(sys.modules, "trl", trl)
    seen = []
    monkeypatch.setattr(trainers, "group_relative", lambda cfg, cls, *rest: seen.append((cfg.__name__, cls.__name__)))
    job = algorithms.Job(*([None] * 11))
    algorithms.ALGORITHMS[name](job)
    assert seen == [(config, trainer)]
    assert algorithms.ALGORITHMS.names() == ["ppo", "grpo", "rloo"]


def test_the_training_seeds_are_common_seed_then_the_next_ones():
    from tasks.downstream.rl.train import seeds_of

    assert seeds_of({"seeds": 3}, 5) == [5, 6, 7] and seeds_of({"seeds": None}, 5) == [5]


# --- the rubric judge ------------------------------------------------------------------------------------------------

ASPECT = {"aspect": "Budget", "evidence": "spend under 40 euros", "reason": ""}
ANSWER = "Keep it cheap and spend under 40 euros on tools. Paint the walls blue."


@pytest.fixture(scope="module")
def encoder():
    from tasks.models.encoders import Encoder

    return Encoder("embedded:all-MiniLM-L6-v2")


def test_embedding_levels_read_the_best_sentence_and_a_similarity_on_a_threshold_reaches_it(encoder):
    from tasks.models.judge import EmbeddingJudge, aspect_text

    sentences = ["Keep it cheap and spend under 40 euros on tools.", "Paint the walls blue."]   # split after . ! ?
    vecs = encoder.encode([*sentences, aspect_text(ASPECT)])   # one batch, in the judge's order
    sims = sorted(round(float(vecs[-1] @ v), 6) for v in vecs[:-1])
    low, best = sims
    assert best - low > 0.1, "the budget sentence is the better match"
    question = {"rubric_aspects": [ASPECT]}
    level = lambda partly, well: EmbeddingJudge(encoder, partly, well).judge([(question, ANSWER)])[0].per_aspect  # noqa: E731
    assert level(low, best) == [2], "exactly on `well`: well covered"
    assert level(best, best + 0.1) == [1], "exactly on `partly`: partly covered"
    assert level(best + 0.01, best + 0.1) == [0]
    assert level((low + best) / 2 + 0.01, best) == [2], "the best sentence counts, not the mean of them"


class Scripted:
    """An LLM replying by a marker in the prompt."""

    backend = SimpleNamespace(identity=lambda: "scripted")

    def __init__(self, replies: dict):
        self.replies = replies

    def generate_many(self, requests, progress=None):
        from tasks.models.llm import Completion

        return [Completion(next(r for k, r in self.replies.items() if k in m[0]["content"]), 1, 1, 0.0)
                for m, _, _ in requests]


def _llm_judge(replies, mode=None, prompt="judge_aspect.txt"):
    from tasks.models.judge import make_judge

    cfg = {"kind": "llm", "llm": "x", "prompt": str(ROOT / "prompts" / prompt), "parse_retries": 0,
           **({"mode": mode} if mode else {})}
    return make_judge(cfg, encoder_factory=None, llm_factory=lambda name: Scripted(replies))


QUESTION = {"id": "q1", "question": "How do I start a garden?",
            "rubric_aspects": [{"aspect": "Budget", "evidence": "40 euros", "reason": ""},
                               {"aspect": "Balcony", "evidence": "one metre", "reason": ""}]}


def test_per_aspect_is_the_default_one_call_per_aspect_and_one_unparseable_aspect_voids_the_verdict():
    judge = _llm_judge({"Budget": "2", "Balcony": "1"})
    assert judge.mode == "per_aspect"
    (v,) = judge.judge([(QUESTION, "an answer")])
    assert v.per_aspect == [2, 1] and v.score == 0.75
    (v,) = _llm_judge({"Budget": "2", "Balcony": "I cannot say"}).judge([(QUESTION, "an answer")])
    assert v.per_aspect is None and v.score is None and not v.valid


def test_all_mode_needs_exactly_one_digit_per_aspect():
    (v,) = _llm_judge({"": "[2, 0]"}, "all", "judge_all.txt").judge([(QUESTION, "an answer")])
    assert v.per_aspect == [2, 0] and v.score == 0.5
    for reply in ("[2]", "[2, 0, 1]", "[2, 3]"):
        (v,) = _llm_judge({"": reply}, "all", "judge_all.txt").judge([(QUESTION, "an answer")])
        assert v.per_aspect is None and not v.valid, reply
