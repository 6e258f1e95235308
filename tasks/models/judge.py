"""The rubric judge: how well an answer covers the user's gold rubric aspects, 0/1/2 per aspect
(LaMP-QA's scale), normalised to [0, 1] as sum / (2 × #aspects). Used for pair validity and BoN.

- `embedding`: MiniLM similarity between each aspect (title + evidence) and the answer's
  sentences, mapped to 0/1/2 by thresholds. Deterministic and cheap: the embedded default,
  because the local 135M LLM is at chance as a judge (measured).
- `llm`: any LLM backend; `per_aspect` (one call per aspect, LaMP-QA) or `all` (one call, the release).
  Its reply budget (`max_tokens`) must fit the longest rubric: in `all` mode a list of n digits
  costs ~3 tokens per aspect ("2", ",", " "), so a small budget silently loses the aspect-rich
  questions; `unparseable_by_aspects` makes such a bias visible in the metrics.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from tasks.core.errors import ConfigError
from tasks.core.registry import at_least, within
from tasks.core.fidelity import pick
from tasks.core.registry import Registry

SENTENCE = re.compile(r"(?<=[.!?])\s+")
# Room for a 0/1/2 list of ~40 aspects (~3 tokens each) plus a code fence or a short preamble;
# LaMP-QA test rubrics hold ~5 aspects on average and rarely more than a dozen.
DEFAULT_MAX_TOKENS = 128
JUDGES = Registry("judge kind")
SHARED = {"prompt": str, "max_tokens": at_least(1) | None}   # every kind takes them (a dvc dep, a reply budget)


@dataclass
class Verdict:
    per_aspect: list[int] | None    # None when the judge's reply could not be parsed
    raw: str = ""
    value: float | None = None      # a score set outright (the release's mean of whatever numbers it read)

    @property
    def valid(self) -> bool:
        return self.per_aspect is not None or self.value is not None

    @property
    def score(self) -> float | None:
        if self.value is not None:
            return self.value
        return sum(self.per_aspect) / (2 * len(self.per_aspect)) if self.valid and self.per_aspect else None


def aspect_text(a: dict) -> str:
    return f"{a['aspect']}: {a['evidence']}"


@JUDGES.register
class EmbeddingJudge:
    kind = "embedding"
    OPTIONS = {"encoder": str, "partly": within(-1, 1), "well": within(-1, 1), **SHARED}
    REQUIRED = ("partly", "well")

    @classmethod
    def entry_problems(cls, entry: dict, key: str) -> list[str]:
        from tasks.models.encoders import entry_problems

        return entry_problems(entry, key)

    @classmethod
    def from_config(cls, cfg: dict, *, encoder_factory, llm_factory, seed: int):
        return cls(encoder_factory(cfg.get("encoder", "embedded:all-MiniLM-L6-v2")), cfg["partly"], cfg["well"])

    def __init__(self, encoder, partly: float, well: float):
        if not partly < well:
            raise ConfigError("judge: thresholds need partly < well")
        self.encoder, self.partly, self.well = encoder, partly, well

    def identity(self) -> str:
        return f"embedding:{self.encoder.identity}:{self.partly}:{self.well}"

    def judge(self, items: list[tuple[dict, str]]) -> list[Verdict]:
        """items: (question row with rubric_aspects, answer). One batch for all texts."""
        sentences = [[s for s in SENTENCE.split(answer.strip()) if s] or [""] for _, answer in items]
        aspects = [[aspect_text(a) for a in q["rubric_aspects"]] for q, _ in items]
        vecs = self.encoder.encode([t for group in sentences + aspects for t in group])
        out, pos = [], 0
        sent_vecs = []
        for group in sentences:
            sent_vecs.append(vecs[pos:pos + len(group)])
            pos += len(group)
        for sv, group in zip(sent_vecs, aspects):
            av = vecs[pos:pos + len(group)]
            pos += len(group)
            best = (av @ sv.T).max(axis=1) if len(group) else np.zeros(0)
            out.append(Verdict([int(2 if s >= self.well else 1 if s >= self.partly else 0)
                                for s in np.round(best, 6)]))
        return out


def parse_digit(text: str) -> int:
    m = re.search(r"\b([012])\b", text)
    if not m:
        raise ValueError(f"no 0/1/2 verdict in {text[:60]!r}")
    return int(m.group(1))


def parse_digit_list(n: int):
    def parse(text: str) -> list[int]:
        m = re.search(r"\[[^\]]*\]", text)
        if not m:
            raise ValueError(f"no JSON list in {text[:60]!r}")
        try:
            values = json.loads(m.group(0))
        except json.JSONDecodeError as exc:
            raise ValueError(f"bad JSON list: {exc.msg}") from None
        if len(values) != n or any(v not in (0, 1, 2) for v in values):
            raise ValueError(f"expected {n} values in 0/1/2, got {values}")
        return [int(v) for v in values]
    return parse


@JUDGES.register
class LLMJudge:
    kind = "llm"
    OPTIONS = {"llm": str, "mode": Literal["per_aspect", "all"], "parse_retries": at_least(0), "system_prompt": str | None,
               **SHARED}
    REQUIRED = ("llm", "prompt")

    @classmethod
    def from_config(cls, cfg: dict, *, encoder_factory, llm_factory, seed: int, fidelity: str = "corrected"):
        max_tokens = DEFAULT_MAX_TOKENS if cfg.get("max_tokens") is None else cfg["max_tokens"]   # null = default
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"judge.max_tokens: need a positive number of tokens, got {max_tokens!r}")
        judge = cls(llm_factory(cfg["llm"]), cfg.get("mode", "per_aspect"), cfg["prompt"], max_tokens=max_tokens,
                    retries=cfg.get("parse_retries", 2), seed=seed)
        judge.fidelity, judge.system = fidelity, cfg.get("system_prompt")
        return judge

    fidelity: str = "corrected"     # common.fidelity (from_config)
    system: str | None = None       # the system message (release fidelity only)

    def __init__(self, llm, mode: str, prompt: str, *, max_tokens: int = DEFAULT_MAX_TOKENS, retries: int = 2,
                 temperature_bump: float = 0.3, seed: int = 0):
        if mode not in ("per_aspect", "all"):
            raise ConfigError(f"judge.mode: unknown mode '{mode}'; valid: per_aspect, all")
        self.llm, self.mode, self.prompt = llm, mode, prompt
        self.max_tokens, self.retries, self.bump, self.seed = max_tokens, retries, temperature_bump, seed

    def identity(self) -> str:
        from tasks.core.artifacts import file_hash

        tail = pick(IDENTITY_TAIL, self.fidelity)(self)   # prbench's identities stay as they were
        return f"llm:{self.llm.backend.identity()}:{self.mode}:{file_hash(self.prompt)[:12]}{tail}"

    def judge(self, items: list[tuple[dict, str]]) -> list[Verdict]:
        from tasks.core.prompts import render
        from tasks.models.llm import GenParams
        from tasks.models.structured import generate_parsed

        params = GenParams(temperature=0.0, max_tokens=self.max_tokens, seed=self.seed)
        if self.mode == "all":
            return pick(ALL_MODE, self.fidelity)(self, items, params)
        flat = [(i, render(self.prompt, question=q["question"], answer=a, aspect=x["aspect"], evidence=x["evidence"]))
                for i, (q, a) in enumerate(items) for x in q["rubric_aspects"]]
        parsed = generate_parsed(self.llm, [m for _, m in flat], parse_digit, params, retries=self.retries,
                                 temperature_bump=self.bump, progress="judge")
        grouped: dict[int, list] = {i: [] for i in range(len(items))}
        for (i, _), p in zip(flat, parsed):
            grouped[i].append(p)
        return [Verdict([p.value for p in ps] if all(p.valid for p in ps) else None,
                        "\n".join(p.raw for p in ps)) for i, ps in sorted(grouped.items())]


def _all_corrected(judge: LLMJudge, items, params) -> list[Verdict]:
    """One call per answer, the numbered aspects with their evidence; exactly n digits 0/1/2, else retried,
    then unparseable (null, counted)."""
    from tasks.core.prompts import render
    from tasks.models.structured import generate_parsed

    prompts = [render(judge.prompt, question=q["question"], answer=a, n=len(q["rubric_aspects"]),
                      aspect_list="\n".join(f"{i}. {aspect_text(x)}" for i, x in enumerate(q["rubric_aspects"], 1)))
               for q, a in items]
    parsed = generate_parsed(judge.llm, prompts, [parse_digit_list(len(q["rubric_aspects"])) for q, _ in items],
                             params, retries=judge.retries, temperature_bump=judge.bump, progress="judge")
    return [Verdict(p.value, p.raw) for p in parsed]


def _all_release(judge: LLMJudge, items, params) -> list[Verdict]:
    """BoN/evaluate.py:54-95: system "You are a fair and insightful judge." (bon.judge.system_prompt), the file
    with {question}, {answer}, {aspects} = the comma-joined aspect titles (BoN/sample.py:57-62), one call,
    no retry, the reply read by parse_release."""
    from tasks.core.prompts import aspect_titles, render_release

    prompts = [render_release(judge.prompt, judge.system, question=q["question"], answer=a,
                              aspects=aspect_titles(q["rubric_aspects"])) for q, a in items]
    outs = judge.llm.generate_many([(m, params, 0) for m in prompts], progress="judge")
    return [parse_release(getattr(o, "text", None)) for o in outs]


ALL_MODE = {"corrected": _all_corrected, "release": _all_release}   # common.fidelity
IDENTITY_TAIL = {"corrected": lambda judge: "",
                 "release": lambda judge: f":release:{hashlib.sha256((judge.system or '').encode()).hexdigest()[:8]}"}


def parse_release(reply: str | None) -> Verdict:
    """BoN/evaluate.py:87-95 (= PPO/evaluate.py:98-106): the numbers inside the first [...] (else anywhere in
    the reply), any count and any value, averaged with numpy; none at all, or no reply, scores 0.0 (bug kept:
    a judge failure is a bad answer, and the scale is the 0-2 mean, not normalised)."""
    text = (reply or "").strip()
    in_list = re.search(r"\[([^\]]+)\]", text)
    numbers = [float(n) for n in re.findall(r"-?\d+\.?\d*", in_list.group(1) if in_list else text)]
    mean = float(np.mean(numbers)) if numbers else 0.0
    ints = [int(n) for n in numbers] if numbers and all(n.is_integer() and abs(n) < 2 ** 31 for n in numbers) else None
    return Verdict(ints, text, value=mean)


def unparseable_by_aspects(verdicts: list[tuple[int, bool]]) -> list[dict]:
    """(number of gold aspects, verdict parsed) per verdict -> one row per rubric size, so a
    reply budget that cuts long rubrics short shows up as unparseable verdicts at large sizes."""
    per: dict[int, list[int]] = {}
    for n, ok in verdicts:
        counts = per.setdefault(int(n), [0, 0])
        counts[0] += 1
        counts[1] += not ok
    return [{"aspects": n, "judged": j, "unparseable": u} for n, (j, u) in sorted(per.items())]


def make_judge(cfg: dict, *, encoder_factory, llm_factory, seed: int = 0, key: str = "judge",
               fidelity: str = "corrected"):
    from tasks.core.registry import check_entry

    problems = check_entry(cfg, JUDGES, key)
    if problems:
        raise ConfigError("\n".join(problems))
    cls = JUDGES[cfg["kind"]]
    extra = {"fidelity": fidelity} if "fidelity" in inspect.signature(cls.from_config).parameters else {}
    return cls.from_config(cfg, encoder_factory=encoder_factory, llm_factory=llm_factory, seed=seed, **extra)
