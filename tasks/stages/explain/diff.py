"""What differs between the chosen and the rejected answer, word by word: each answer as alternating runs of
text, shared then its own, so a page or a terminal marks the odd runs and the joined runs are the answer."""
from __future__ import annotations

import difflib
import re

_TOKENS = re.compile(r"\s+|\S+")


def _words(text: str) -> list[str]:
    """Words with the whitespace after each attached: joined, they are the text again."""
    parts = _TOKENS.findall(text)
    out: list[str] = [parts.pop(0)] if parts and parts[0].isspace() else []   # leading whitespace: a token alone
    for p in parts:
        if p.isspace() and out:
            out[-1] += p
        else:
            out.append(p)
    return out


def _runs(tokens: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """Alternating runs, shared first (possibly ""), from the token spans this answer has on its own."""
    runs, at = [], 0
    for lo, hi in spans:
        runs += ["".join(tokens[at:lo]), "".join(tokens[lo:hi])]
        at = hi
    tail = "".join(tokens[at:])
    return runs + [tail] if tail else runs


def word_diff(a: str, b: str) -> tuple[list[str], list[str]]:
    """(runs of a, runs of b): even runs are in both answers, odd runs only in that one. Words compare without
    their trailing whitespace; no word is ever treated as junk, so the result does not depend on text length."""
    ta, tb = _words(a or ""), _words(b or "")
    matcher = difflib.SequenceMatcher(None, [t.rstrip() for t in ta], [t.rstrip() for t in tb], autojunk=False)
    only_a, only_b = [], []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        if a1 > a0:
            only_a.append((a0, a1))
        if b1 > b0:
            only_b.append((b0, b1))
    return _runs(ta, only_a), _runs(tb, only_b)


def changed_share(runs: list[str]) -> float:
    """The share of an answer's words that the other answer lacks."""
    own = sum(len(r.split()) for r in runs[1::2])
    total = sum(len(r.split()) for r in runs)
    return own / total if total else 0.0
