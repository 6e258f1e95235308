"""An LLM annotator for when no human has rated yet: it fills the same form for every answer.
A reply that never parses is kept as invalid (raw text, null scores), never given a default.
Its ratings carry annotator_kind llm-proxy and are never pooled with human ones."""
from __future__ import annotations

import math
import re

from tasks.core.errors import ConfigError
from tasks.stages.human_eval import DIMENSIONS, PROXY, SCALE, dimensions_text, parse_score
from tasks.stages.human_eval.export import blind, chosen_answer
from tasks.models.llm import GenParams
from tasks.core.prompts import render
from tasks.models.structured import Parsed, generate_parsed

_DIM = "|".join(d.replace("_", "[_ ]") for d in DIMENSIONS)
# "factuality: 4", "- **Relevance**: 5/5"; never the template's "N" or a range like "1-5".
LINE = re.compile(rf"^[\s\-*#]*\**({_DIM})\**\s*[:=]\s*\**\s*(\d+(?:\.\d+)?)(?!\s*[-–]\s*\d)", re.I | re.M)


def parse_form(text: str) -> dict[str, int]:
    """All four dimensions rated 1-5 (the first line per dimension counts), else ValueError."""
    found: dict[str, int] = {}
    for m in LINE.finditer(text):
        dim = m.group(1).lower().replace(" ", "_")
        if dim not in found:
            try:
                found[dim] = parse_score(m.group(2))
            except ValueError as exc:
                raise ValueError(f"{dim}: {exc}") from None
    missing = [d for d in DIMENSIONS if d not in found]
    if missing:
        raise ValueError(f"no rating for {', '.join(missing)}")
    return found


def proxy_items(items: list[dict], rated_by_humans: set[str], limit: int | None) -> list[dict]:
    """The items humans rated first (so the two can be compared), in the seeded order, up to limit."""
    pick = [it for it in items if it["item_id"] in rated_by_humans] or items
    return pick[:limit] if limit else pick


VERDICTS = ("form", "logprobs")
DIGITS = [str(x) for x in range(SCALE[0], SCALE[1] + 1)]


def _logprob_forms(llm, forms: list, p: dict) -> list[Parsed]:
    """One short prompt per (answer, dimension); the rating is the most likely digit 1-5 by label
    log-probabilities, so it always parses (a small model that cannot fill the four-line form still
    rates). Non-finite log-probs make the form invalid, never a default."""
    out = []
    for it, _, _, text in forms:
        scores, raw, bad = {}, [], []
        for dim, (label, five) in DIMENSIONS.items():
            lp = llm.choice_logprobs(render(p["proxy_prompt"], dimension=label.lower(), five=five,
                                            dimensions=dimensions_text(), question=it["question"],
                                            aspects=it["aspects"], profile=it["profile"], answer=text), DIGITS)
            best = max(DIGITS, key=lambda d: (lp[d], -int(d)))   # ties: the lower rating, stably
            raw.append(f"{dim}: " + " ".join(f"{d}={lp[d]:.3f}" for d in DIGITS))
            if all(math.isfinite(lp[d]) for d in DIGITS):
                scores[dim] = int(best)
            else:
                bad.append(dim)
        out.append(Parsed(None if bad else scores, "\n".join(raw), 1,
                          f"parse: non-finite log-probs for {', '.join(bad)}" if bad else ""))
    return out


def rate(items: list[dict], llm, name: str, p: dict, seed: int) -> tuple[list[dict], list[dict]]:
    """(ratings, replies): four ratings and one reply per (item, answer). `proxy_verdict: form` asks
    for the four-line form in one reply; `logprobs` rates each dimension by label log-probabilities."""
    forms = []
    for it in items:
        shown = blind(it, seed)
        truth = chosen_answer(seed, it["question_id"])
        for answer in ("A", "B"):
            forms.append((it, answer, "chosen" if answer == truth else "rejected", shown[f"answer_{answer.lower()}"]))
    verdict = p.get("proxy_verdict", "form")
    if verdict not in VERDICTS:
        raise ConfigError(f"human_eval.proxy_verdict: unknown value '{verdict}'; valid: {', '.join(VERDICTS)}")
    if verdict == "logprobs":
        parsed = _logprob_forms(llm, forms, p)
    else:
        prompts = [render(p["proxy_prompt"], dimensions=dimensions_text(), question=it["question"],
                          aspects=it["aspects"], profile=it["profile"], answer=text) for it, _, _, text in forms]
        parsed = generate_parsed(llm, prompts, parse_form,
                                 GenParams(temperature=p["proxy_temperature"], max_tokens=p["proxy_max_tokens"],
                                           seed=seed), retries=p["parse_retries"],
                                 temperature_bump=p["temperature_bump"], progress="human_eval proxy")
    identity = llm.backend.identity()
    ratings, replies = [], []
    for (it, answer, side, _), r in zip(forms, parsed):
        base = {"item_id": it["item_id"], "question_id": it["question_id"], "answer": answer, "side": side}
        replies.append({**base, "llm": identity, "valid": r.valid, "attempts": r.attempts,
                        "error": r.error, "raw_text": r.raw})
        ratings += [{"annotator": name, "annotator_kind": PROXY, **base, "domain": it["domain"], "split": it["split"],
                     "dimension": d, "score": r.value[d] if r.valid else None, "source": identity,
                     "source_row": None} for d in DIMENSIONS]
    return ratings, replies
