"""The reward-model interface. Every kind scores pairs; pointwise kinds score answers alone and
inherit the pairing. Inputs are plain strings: the strategy has already built the context."""
from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class PairInput:
    question_id: str
    question: str
    context: str          # the strategy's text (retrieved posts, inferred or gold aspects); "" for none
    chosen: str
    rejected: str


@dataclass(frozen=True)
class AnswerScore:
    score: float | None   # None = the RM gave no usable score (unparseable judge reply, failed call)
    truncated: bool = False
    input_hash: str = ""  # sha256 of exactly what the model saw


@dataclass(frozen=True)
class PairScore:
    chosen: AnswerScore
    rejected: AnswerScore
    order_consistent: bool | None = None   # pairwise judges: same answer preferred in both orders
    chosen_position: str | None = None     # pairwise judges: where chosen was shown: "A", "B" or "both"
    picked_a: float | None = None          # pairwise judges: share of verdicts for position A (0.5 = no bias)


def input_hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def _glued(question: str, context: str) -> str:
    return question + context


# the user turn: question, a blank line, the context (prbench) | question + profile with no separator, as the
# release glues them (BoN/score.py:80, PPO/reward_server.py:174): "...?Post 1 (Category: ...)"
USER_TURN = {"corrected": lambda q, c: f"{q}\n\n{c}" if c else q, "release": _glued}


def user_message(question: str, context: str, fidelity: str = "corrected") -> str:
    """What an RM's user turn holds: the question, then the strategy's context if any."""
    from tasks.core.fidelity import pick

    return pick(USER_TURN, fidelity)(question, context)


class RewardModel(ABC):
    kind: str = ""
    fidelity: str = "corrected"       # common.fidelity, set by make_rm: what the RM is shown and how
    OPTIONS: dict[str, object] = {}   # params keys this kind accepts besides `kind`, with their types
    REQUIRED: tuple[str, ...] = ()

    @classmethod
    def entry_problems(cls, entry: dict, key: str) -> list[str]:
        """What a params entry of this kind lacks beyond its options' types, told without building anything
        (a model folder that is not one); one line each, naming `key`."""
        return []

    def __init__(self, name: str, entry: dict):
        self.name, self.entry = name, entry

    @abstractmethod
    def identity(self) -> str:
        """Kind + model identity (weights hash for local files); recorded with every score."""

    def numerics(self) -> dict:
        """What the scores depend on besides the inputs and the identity, for kinds that run a model here: dtype,
        device kind, attention implementation, batch_invariant (recorded in the score metrics and results)."""
        return {}

    def score_pairs(self, pairs: list[PairInput]) -> list[PairScore]:
        """Default: score every answer on its own (pointwise kinds override score_answers)."""
        flat = [(p.question, p.context, a) for p in pairs for a in (p.chosen, p.rejected)]
        scores = self.score_answers(flat)
        return [PairScore(c, r) for c, r in zip(scores[0::2], scores[1::2])]

    def score_answers(self, items: list[tuple[str, str, str]]) -> list[AnswerScore]:
        """items: (question, context, answer). Pairwise-only kinds need not implement it."""
        raise NotImplementedError(f"{self.kind}: pointwise scoring is not supported")
