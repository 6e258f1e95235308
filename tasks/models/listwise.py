"""List-wise scoring: an item has m >= 1 correct and n >= 1 incorrect answers; it is right when every
correct answer scores above every incorrect one. A pair is the m = n = 1 case, and `outcome` is the
one rule the pairwise score stage uses too, so its rows are what they always were.

Ties: the item is tied when nothing incorrect beats anything correct but the worst correct answer
equals the best incorrect one. Its `tie_credit` is the chance that breaking the tied scores at random
puts every tied correct answer above every tied incorrect one, 1 / C(a + b, a) for a correct and b
incorrect answers at that score: 1/2 for a pair (the `half` policy), 1/k for one correct among k
top scorers (RewardBench 2's own rule). Chance level of an item is 1 / C(m + n, m).

Pointwise RMs score every answer once, each item's answers together (so a seq-cls RM cuts them to the
same context). Pairwise-only RMs (a pairwise judge) compare each correct answer with each incorrect
one (a judge with both_orders shows both orders): the item is right when every comparison is won;
rows say `method: pairwise-each` and keep each comparison's margin instead of per-answer scores."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from tasks.models.rms.base import PairInput

POINTWISE, PAIRWISE_EACH, PAIR = "pointwise", "pairwise-each", "pair"


@dataclass(frozen=True)
class Item:
    id: str
    prompt: str
    correct: tuple[str, ...]
    incorrect: tuple[str, ...]
    subset: str = ""
    profile: tuple[str, ...] | None = None   # the user's history / stated preferences; None: none exists
    split: str = "test"
    meta: dict = field(default_factory=dict, hash=False, compare=False)


def chance(m: int, n: int) -> float:
    """Probability that a random order puts all m correct answers above all n incorrect ones."""
    return 1.0 / math.comb(m + n, m)


def outcome(correct: list, incorrect: list) -> dict:
    """{correct, tie, tie_credit, invalid} of one item from its answers' scores (None = no usable score)."""
    if any(s is None for s in (*correct, *incorrect)) or not correct or not incorrect:
        return {"correct": False, "tie": False, "tie_credit": 0.0, "invalid": True}
    worst, best = min(correct), max(incorrect)
    if worst > best:
        return {"correct": True, "tie": False, "tie_credit": 1.0, "invalid": False}
    if worst == best:
        a, b = sum(s == worst for s in correct), sum(s == best for s in incorrect)
        return {"correct": False, "tie": True, "tie_credit": chance(a, b), "invalid": False}
    return {"correct": False, "tie": False, "tie_credit": 0.0, "invalid": False}


def margins_outcome(margins: list) -> dict:
    """The same for a pairwise-only RM: one margin (correct's advantage) per (correct, incorrect) comparison."""
    if not margins or any(m is None for m in margins):
        return {"correct": False, "tie": False, "tie_credit": 0.0, "invalid": True}
    if all(m > 0 for m in margins):
        return {"correct": True, "tie": False, "tie_credit": 1.0, "invalid": False}
    if all(m >= 0 for m in margins):   # no comparison lost, some undecided
        return {"correct": False, "tie": True, "tie_credit": 0.5 ** sum(m == 0 for m in margins), "invalid": False}
    return {"correct": False, "tie": False, "tie_credit": 0.0, "invalid": False}


def credit(row: dict, policy: str) -> float | None:
    """An item's credit under a tie policy (strict | half | drop); None = left out (a tie under drop)."""
    if row["invalid"]:
        return 0.0
    if row["tie"]:
        return None if policy == "drop" else row["tie_credit"] if policy == "half" else 0.0
    return 1.0 if row["correct"] else 0.0


def _usable(x):
    return x if x is not None and math.isfinite(x) else None


def score_items(rm, items: list[Item], contexts: list[str]) -> list[dict]:
    """One row per item: every answer's score (or every comparison's margin), the outcome, chance level."""
    from tasks.models.rms.base import RewardModel

    if type(rm).score_answers is not RewardModel.score_answers:   # pointwise: each answer scored once
        flat = [(it.prompt, ctx, a) for it, ctx in zip(items, contexts) for a in (*it.correct, *it.incorrect)]
        scores = iter(rm.score_answers(flat))
        rows = []
        for it in items:
            got = [next(scores) for _ in range(len(it.correct) + len(it.incorrect))]
            c = [_usable(s.score) for s in got[:len(it.correct)]]
            i = [_usable(s.score) for s in got[len(it.correct):]]
            rows.append(_row(it, POINTWISE, c, i, [], got, outcome(c, i)))
        return rows
    pairs = [PairInput(it.id, it.prompt, ctx, c, r) for it, ctx in zip(items, contexts)
             for c in it.correct for r in it.incorrect]
    scored = iter(rm.score_pairs(pairs))
    rows = []
    for it in items:
        got = [next(scored) for _ in range(len(it.correct) * len(it.incorrect))]
        margins = [None if _usable(s.chosen.score) is None or _usable(s.rejected.score) is None
                   else s.chosen.score - s.rejected.score for s in got]
        answers = [a for s in got for a in (s.chosen, s.rejected)]
        rows.append(_row(it, PAIRWISE_EACH, [], [], margins, answers, margins_outcome(margins)))
    return rows


def _row(it: Item, method: str, c: list, i: list, margins: list, answers: list, out: dict) -> dict:
    return {"item_id": it.id, "subset": it.subset, "split": it.split, "n_correct": len(it.correct),
            "n_incorrect": len(it.incorrect), "method": method, "scores_correct": c, "scores_incorrect": i,
            "margins": margins, **out, "chance": round(chance(len(it.correct), len(it.incorrect)), 6),
            "truncated": any(a.truncated for a in answers),
            "input_hashes": [a.input_hash for a in answers]}
