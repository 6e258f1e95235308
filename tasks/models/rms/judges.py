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
from tasks.core.registry import at_least
from tasks.core.fidelity import pick
from tasks.models.llm import GenParams
from tasks.core.prompts import render, render_release
from tasks.models.rms.base import AnswerScore, PairScore, RewardModel, input_hash, user_message
from tasks.models.rms.registry import register

VERDICTS = ("logprobs", "reply")


def log_ratio(first: float, second: float) -> float | None:
    """log p(first) - log p(second), or None (no verdict) when it is not finite: -inf - -inf is NaN."""
    d = first - second
    return round(d, 6) if math.isfinite(d) else None


def _read(path: str) -> str:
    from pathlib import Path

    if not Path(path).is_file():
        raise ConfigError(f"prompt file '{path}' not found")
    return Path(path).read_text(encoding="utf-8").strip()


def parse_verdict(reply: str | None) -> float | None:
    """prbench: the first standalone A or B (1.0 / -1.0); none, or no reply, is no verdict."""
    m = re.search(r"\b([AB])\b", reply) if reply is not None else None
    return None if m is None else 1.0 if m.group(1) == "A" else -1.0


def parse_verdict_release(reply: str | None) -> float:
    """evaluation/pairwise.py:86-100: text after the last </think>, quotes and asterisks removed, what follows
    the first "result:" (any case) starting with a or b; anything else, a failed call included, is "A"
    (bug kept: a judge that never answers scores as if it always preferred the first answer)."""
    text = (reply or "").strip().split("</think>")[-1].strip().replace('"', "").replace("*", "").strip()
    if "result:" in text.lower() and text.lower().split("result:")[1].strip().startswith("b"):
        return -1.0
    return 1.0


VERDICT_PARSERS = {"corrected": parse_verdict, "release": parse_verdict_release}   # common.fidelity


def _pair_prompt(judge, p, a: str, b: str) -> list[dict]:
    return render(judge.prompt, user=user_message(p.question, p.context), answer_a=a, answer_b=b)


def _pair_prompt_release(judge, p, a: str, b: str) -> list[dict]:
    """evaluation/pairwise.py:49-51, 76-82: the system file, then the user file with the question only (no
    profile: the release's judge never sees the user)."""
    system = judge.entry.get("system_prompt_file")
    return render_release(judge.prompt, system and _read(system), question=p.question, Response_A=a, Response_B=b)


PAIR_PROMPTS = {"corrected": _pair_prompt, "release": _pair_prompt_release}   # common.fidelity


class _LLMJudge(RewardModel):
    OPTIONS = {"llm": str, "prompt": str, "verdict": Literal[VERDICTS], "max_tokens": at_least(1)}
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
    OPTIONS = {**_LLMJudge.OPTIONS, "both_orders": bool, "system_prompt_file": str | None}
    DEFAULT_PROMPT = "prompts/rm_pairwise.txt"

    def _prompt(self, p, swap: bool) -> list[dict]:
        a, b = (p.rejected, p.chosen) if swap else (p.chosen, p.rejected)
        return pick(PAIR_PROMPTS, self.fidelity)(self, p, a, b)

    def chosen_shown_second(self, p) -> bool:
        """The seeded coin for one order: keyed by the seed and the pair itself, never by its
        position in the batch, so adding or reordering pairs leaves every placement as it was."""
        key = "\x1f".join((str(self.seed), p.question_id, p.question, p.chosen, p.rejected))
        return hashlib.sha256(key.encode("utf-8")).digest()[0] & 1 == 1

    def score_pairs(self, pairs):
        both = self.entry.get("both_orders", True)
        orders = ([(p, False) for p in pairs] + [(p, True) for p in pairs] if both
                  else [(p, self.chosen_shown_second(p)) for p in pairs])
        prompts = [self._prompt(p, swap) for p, swap in orders]
        prefs = self._prefer_a(prompts)   # > 0: A preferred; None: no verdict
        out = []
        for i in range(len(pairs)):
            h = input_hash(*(m[-1]["content"] for m in prompts[i::len(pairs)]))
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
        parse = pick(VERDICT_PARSERS, self.fidelity)
        return [parse(r) for r in self._replies(prompts)]


@register
class PointwiseJudge(_LLMJudge):
    kind = "judge-pointwise"
    DEFAULT_PROMPT = "prompts/rm_pointwise.txt"

    def score_answers(self, items):
        prompts = [render(self.prompt, user=user_message(q, c, self.fidelity), answer=a) for q, c, a in items]
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
