"""`mixture`: a positive-control RM of known quality. Its score blends a known good signal, the cosine
(MiniLM) between the answer and the user's gold rubric aspects, with its own seeded noise:

    score = weight * cosine(answer, gold aspects) + (1 - weight) * noise_scale * N(0, 1)

The noise is keyed by the RM's seed, its name, the question and the answer, so reruns agree and two
rungs never share it. A ladder of weights (scoring.rms ladder-*) has a true order known by construction:
more weight, more of the gold signal, on the benchmark and downstream alike. It reads the gold rubric,
an evaluation-only label, on purpose: it is a positive control (can the pipeline see a real relation?),
never a contestant, and says nothing of the benchmark's value. The rubric is looked up by question
text in the ingested questions (data/ingest/questions.parquet, a dep of every stage that scores)."""
from __future__ import annotations

import random

from tasks.core import layout
from tasks.core.errors import ConfigError
from tasks.core.registry import at_least, within
from tasks.models.rms.base import AnswerScore, RewardModel, input_hash
from tasks.models.rms.registry import register

KIND = "mixture"


def gold_text(question: dict) -> str:
    return "What I expect in an answer: " + "; ".join(a["aspect"] for a in question["rubric_aspects"])


@register
class MixtureRM(RewardModel):
    kind = KIND
    OPTIONS = {"weight": within(0, 1), "noise_scale": at_least(0, float), "encoder": str, "seed": at_least(0),
               "questions": str}
    REQUIRED = ("weight",)

    @classmethod
    def entry_problems(cls, entry, key):
        from tasks.models.encoders import entry_problems

        return entry_problems(entry, key)

    def __init__(self, name, entry, resources):
        super().__init__(name, entry)
        self.weight = float(entry["weight"])
        if not 0 <= self.weight <= 1:
            raise ConfigError(f"scoring.rms.{name}.weight: need a weight in [0, 1], got {self.weight}")
        self.noise_scale = float(entry.get("noise_scale", 0.07))   # ~ the spread of the cosine across answers
        self.seed = int(entry.get("seed", resources.seed))
        self.encoder = resources.encoder(entry.get("encoder", "embedded:all-MiniLM-L6-v2"))
        self.questions_path = entry.get("questions", layout.INGEST["questions"])
        self._gold: dict[str, str] | None = None

    def identity(self) -> str:
        return f"mixture:{self.weight}:{self.noise_scale}:{self.seed}:{self.encoder.identity}"

    def gold(self, question: str) -> str:
        if self._gold is None:
            from tasks.core.artifacts import read_table

            rows = read_table(self.questions_path, "questions").to_pylist()
            self._gold = {}
            for q in rows:   # an RM sees the question's text, not its id: a text asked twice keeps its first rubric
                self._gold.setdefault(q["question"], gold_text(q))
        if question not in self._gold:
            raise ConfigError(f"scoring.rms.{self.name}: no gold rubric for question {question[:60]!r} in "
                              f"{self.questions_path}")
        return self._gold[question]

    def score_answers(self, items):
        refs = [self.gold(q) for q, _, _ in items]
        vecs = self.encoder.encode(refs + [a for _, _, a in items]) if items else []
        n, out = len(items), []
        for i, (q, _, a) in enumerate(items):
            signal = float((vecs[i] * vecs[n + i]).sum())
            noise = random.Random(f"{self.seed}:{self.name}:{input_hash(q, a)}").gauss(0.0, 1.0)
            score = self.weight * signal + (1 - self.weight) * self.noise_scale * noise
            out.append(AnswerScore(round(score, 6), input_hash=input_hash(refs[i], a)))
        return out
