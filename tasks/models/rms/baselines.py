"""Null models users ask for (length-only, random) and a zero-shot personalisation baseline
(MiniLM similarity between the answer and the strategy's context)."""
from __future__ import annotations

import random

from tasks.core.registry import at_least
from tasks.models.rms.base import AnswerScore, RewardModel, input_hash
from tasks.models.rms.registry import register


@register
class LengthLonger(RewardModel):
    kind = "length-longer"
    OPTIONS = {}

    def identity(self) -> str:
        return self.kind

    def score_answers(self, items):
        return [AnswerScore(float(len(a.split())), input_hash=input_hash(a)) for _, _, a in items]


@register
class LengthShorter(LengthLonger):
    kind = "length-shorter"

    def score_answers(self, items):
        return [AnswerScore(-float(len(a.split())), input_hash=input_hash(a)) for _, _, a in items]


@register
class RandomRM(RewardModel):
    """A seeded coin per answer, keyed by the answer's text: reruns and reorderings agree."""
    kind = "random"
    OPTIONS = {"seed": at_least(0)}

    def __init__(self, name, entry, resources=None):
        super().__init__(name, entry)
        self.seed = int(entry.get("seed", resources.seed if resources else 0))

    def identity(self) -> str:
        return f"random:{self.seed}"

    def score_answers(self, items):
        out = []
        for q, c, a in items:
            h = input_hash(q, c, a)
            out.append(AnswerScore(random.Random(f"{self.seed}:{h}").random(), input_hash=h))
        return out


@register
class SimilarityRM(RewardModel):
    """Cosine between answer and context. With no context (strategy none) it falls back to the
    question, so the baseline still means something."""
    kind = "similarity"
    OPTIONS = {"encoder": str}

    @classmethod
    def entry_problems(cls, entry, key):
        from tasks.models.encoders import entry_problems

        return entry_problems(entry, key)

    def __init__(self, name, entry, resources):
        super().__init__(name, entry)
        self.encoder = resources.encoder(entry.get("encoder", "embedded:all-MiniLM-L6-v2"))

    def identity(self) -> str:
        return f"similarity:{self.encoder.identity}"

    def score_answers(self, items):
        refs = [c or q for q, c, _ in items]
        vecs = self.encoder.encode(refs + [a for _, _, a in items])
        n = len(items)
        sims = (vecs[:n] * vecs[n:]).sum(axis=1)
        return [AnswerScore(round(float(s), 6), input_hash=input_hash(r, a))
                for s, r, (_, _, a) in zip(sims, refs, items)]
