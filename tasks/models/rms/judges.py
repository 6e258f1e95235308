"""LLM judges as reward models, over any backend of the LLM layer.

- judge-pairwise: both orders (A/B and B/A) by default, so position bias cancels and is
  measured; the verdict comes from the log-probabilities of the two labels (`verdict: logprobs`,
  local models) or from the parsed reply (`verdict: reply`, APIs). An unparseable reply is
  invalid, never counted as "A" (the release's silent default). With `both_orders: false` each
  pair is shown once, chosen in A or B by a seeded coin keyed by the pair (p = 0.5, as the
  release), so a judge that always says "A" scores ~50%, not ~100%; `picked_a` reports the
  share of verdicts for position A in both modes.
- judge-pointwise: each answer alone; log p(Yes) − log p(No), or a parsed 1–10.
A log-prob difference that is not finite (both labels outside a server's top tokens) is no verdict.
"""
from __future__ import annotations

import hashlib
import math
import re
from typing import Literal

from tasks.core.progress import bar as progress_bar

from tasks.core.errors import ConfigError
from tasks.models.llm import GenParams
from tasks.core.prompts import render
from tasks.models.rms.base import AnswerScore, PairScore, RewardModel, input_hash, user_message
from tasks.models.rms.registry import register

VERDICTS = ("logprobs", "reply")


def log_ratio(first: float, second: float) -> float | None:
    """log p(first) - log p(second), or None (no verdict) when it is not finite: -inf - -inf is NaN."""
    d = first - second
    return round(d, 6) if math.isfinite(d) else None


class _LLMJudge(RewardModel):
    OPTIONS = {"llm": str, "prompt": str, "verdict": Literal[VERDICTS], "max_tokens": int}
    REQUIRED = ("llm",)   # a name under params `llms`
    DEFAULT_PROMPT = ""

    def __init__(self, name, entry, resources):
        super().__init__(name, entry)
        self.llm = resources.llm(entry["llm"])
        self.prompt = entry.get("prompt", self.DEFAULT_PROMPT)
        self.verdict = entry.get("verdict", "logprobs")
        if self.verdict not in VERDICTS:
            raise ConfigError(f"scoring.rms.{name}.verdict: unknown '{self.verdict}'; valid: {', '.join(VERDICTS)}")
        self.params = GenParams(temperature=0.0, max_tokens=int(entry.get("max_tokens", 8)), seed=resources.seed)
        self.seed = int(resources.seed)

    def identity(self) -> str:
        from tasks.core.artifacts import file_hash

        return f"{self.kind}:{self.llm.backend.identity()}:{self.verdict}:{file_hash(self.prompt)[:12]}"

    def _replies(self, prompts: list[list[dict]]) -> list[str | None]:
        outs = self.llm.generate_many([(m, self.params, 0) for m in prompts], progress=self.name)
        return [getattr(o, "text", None) for o in outs]


@register
class PairwiseJudge(_LLMJudge):
    kind = "judge-pairwise"
    OPTIONS = {**_LLMJudge.OPTIONS, "both_orders": bool}
    DEFAULT_PROMPT = "prompts/rm_pairwise.txt"

    def chosen_shown_second(self, p) -> bool:
        """The seeded coin for one order: keyed by the seed and the pair itself, never by its
        position in the batch, so adding or reordering pairs leaves every placement as it was."""
        key = "\x1f".join((str(self.seed), p.question_id, p.question, p.chosen, p.rejected))
        return hashlib.sha256(key.encode("utf-8")).digest()[0] & 1 == 1

    def score_pairs(self, pairs):
        both = self.entry.get("both_orders", True)
        orders = ([(p, False) for p in pairs] + [(p, True) for p in pairs] if both
                  else [(p, self.chosen_shown_second(p)) for p in pairs])
        prompts = [render(self.prompt, user=user_message(p.question, p.context),
                          answer_a=p.rejected if swap else p.chosen, answer_b=p.chosen if swap else p.rejected)
                   for p, swap in orders]
        prefs = self._prefer_a(prompts)   # > 0: A preferred; None: no verdict
        out = []
        for i in range(len(pairs)):
            h = input_hash(*(m[0]["content"] for m in prompts[i::len(pairs)]))
            # votes for chosen: + when chosen won; a verdict for B counts against chosen shown as A
            shown = [(prefs[i], orders[i][1])] + ([(prefs[len(pairs) + i], True)] if both else [])
            if any(pref is None for pref, _ in shown):
                out.append(PairScore(AnswerScore(None, input_hash=h), AnswerScore(None, input_hash=h),
                                     chosen_position="both" if both else "AB"[shown[0][1]]))
                continue
            votes = [-pref if swap else pref for pref, swap in shown]
            margin = sum(votes) / len(votes)   # the chosen answer's advantage, position folded out
            consistent = ((votes[0] > 0) == (votes[1] > 0)) if both else None
            picked_a = sum(1.0 if pref > 0 else 0.0 if pref < 0 else 0.5 for pref, _ in shown) / len(shown)
            out.append(PairScore(AnswerScore(margin, input_hash=h), AnswerScore(-margin, input_hash=h), consistent,
                                 chosen_position="both" if both else "AB"[shown[0][1]], picked_a=picked_a))
        return out

    def _prefer_a(self, prompts) -> list[float | None]:
        if self.verdict == "logprobs":
            prefs = []
            for m in progress_bar(prompts, desc=self.name, unit="call"):
                lp = self.llm.choice_logprobs(m, ["A", "B"])
                prefs.append(log_ratio(lp["A"], lp["B"]))
            return prefs
        return [None if r is None or not (m := re.search(r"\b([AB])\b", r)) else (1.0 if m.group(1) == "A" else -1.0)
                for r in self._replies(prompts)]


@register
class PointwiseJudge(_LLMJudge):
    kind = "judge-pointwise"
    DEFAULT_PROMPT = "prompts/rm_pointwise.txt"

    def score_answers(self, items):
        prompts = [render(self.prompt, user=user_message(q, c), answer=a) for q, c, a in items]
        hashes = [input_hash(m[0]["content"]) for m in prompts]
        if self.verdict == "logprobs":
            scores = []
            for m in progress_bar(prompts, desc=self.name, unit="call"):
                lp = self.llm.choice_logprobs(m, ["Yes", "No"])
                scores.append(log_ratio(lp["Yes"], lp["No"]))
        else:
            scores = [None if r is None or not (m := re.search(r"\b(10|[1-9])\b", r)) else float(m.group(1))
                      for r in self._replies(prompts)]
        return [AnswerScore(s, input_hash=h) for s, h in zip(scores, hashes)]
