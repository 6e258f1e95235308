"""LLM output that must parse: retried a bounded number of times with a temperature bump
(LaMP-QA's approach), then marked invalid with its raw text kept — never a default value.
With `accept_truncated=False` a reply that stopped on the token limit (finish_reason "length",
Gemini's MAX_TOKENS) counts as unparsed too: a cut-off answer is not a short answer. A callable
decides per reply: e.g. a reply already longer than the length the prompt asked for is no short
answer, and its parser cuts it at a sentence end like any over-long reply (no retry is wasted on it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from tasks.models.llm import GenParams


@dataclass
class Parsed:
    value: Any            # None when invalid
    raw: str              # the last raw reply ("" when every call failed)
    attempts: int
    error: str = ""       # why it is invalid: "parse: …" or "call failed: …"

    @property
    def valid(self) -> bool:
        return self.value is not None


def generate_parsed(llm, prompts: list[list[dict]], parse: Callable[[str], Any] | list[Callable], params: GenParams,
                    *, retries: int, temperature_bump: float, progress: str | None = None,
                    accept_truncated: bool | Callable[[str], bool] = True) -> list[Parsed]:
    """One Parsed per prompt (`parse` may be one parser per prompt). Attempt i uses sample_index i,
    so each attempt has its own cache key; all prompts of an attempt go out as one batch."""
    parsers = parse if isinstance(parse, list) else [parse] * len(prompts)
    results: list[Parsed | None] = [None] * len(prompts)
    last: dict[int, Parsed] = {}
    pending = list(range(len(prompts)))
    for attempt in range(retries + 1):
        if not pending:
            break
        p = GenParams(temperature=params.temperature + attempt * temperature_bump, top_p=params.top_p,
                      max_tokens=params.max_tokens, seed=params.seed)
        outs = llm.generate_many([(prompts[i], p, attempt) for i in pending],
                                 progress=f"{progress} (attempt {attempt + 1})" if progress else None)
        still = []
        for i, out in zip(pending, outs):
            text = getattr(out, "text", None)
            if text is None:
                last[i] = Parsed(None, "", attempt + 1, f"call failed: {getattr(out, 'error', out)}")
                still.append(i)
                continue
            if getattr(out, "finish_reason", "stop") == "length" and not (
                    accept_truncated(text) if callable(accept_truncated) else accept_truncated):
                last[i] = Parsed(None, text, attempt + 1, f"truncated: the reply hit max_tokens={p.max_tokens}")
                still.append(i)
                continue
            value, why = _try(parsers[i], text)
            if value is None:
                last[i] = Parsed(None, text, attempt + 1, f"parse: {why}")
                still.append(i)
            else:
                results[i] = Parsed(value, text, attempt + 1)
        pending = still
    for i in pending:
        results[i] = last[i]
    return results


def _try(parse, text):
    try:
        return parse(text), ""
    except ValueError as exc:
        return None, str(exc)
