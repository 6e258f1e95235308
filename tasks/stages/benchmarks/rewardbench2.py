"""`rewardbench2` (allenai/reward-bench-2, split test): {id, prompt, chosen[list], rejected[list],
num_correct, num_incorrect, total_completions, models, subset, additional_metadata}. Best-of-4 in
most subsets (one correct against three: chance 25%); Ties has several correct answers per prompt.

Scoring as published (reward-bench's run_v2 and utils.process_single_model): a non-Ties item is right
when the correct answer scores above every incorrect one (a top score shared by k answers is worth 1/k
under the `half` policy, RewardBench 2's own rule). Ties is scored over the subset: its ids are
`ref:<n>` (one correct answer) and `tied:<n>` (several) for the same prompt n; per prompt, accurate =
worst correct > best incorrect, the correct-incorrect margin = worst correct - best incorrect and the
spread of the correct ones = best - worst correct; the score is 0.30 x tied accuracy + 0.30 x ref
accuracy + 0.20 x P(tied margin > spread) + 0.20 x P(min(ref margin, tied margin) > spread) + 0.01 x
mean tanh(min margin / spread - 1) (0 where that is undefined). The overall score is the mean over
subsets, Ties by that rule."""
from __future__ import annotations

import math
import re

from tasks.stages.benchmarks import register
from tasks.stages.benchmarks.base import Benchmark
from tasks.models.listwise import Item, credit

TIES = "Ties"
TIES_ID = re.compile(r"(ref|tied):(\d+)")


@register
class RewardBench2(Benchmark):
    name = kind = "rewardbench2"
    hub_id = "allenai/reward-bench-2"

    def item(self, row):
        row.required_id()
        prompt, subset = row.text("prompt"), row.text("subset")
        chosen, rejected = row.texts("chosen"), row.texts("rejected")
        for field, want in (("num_correct", len(chosen)), ("num_incorrect", len(rejected)),
                            ("total_completions", len(chosen) + len(rejected))):
            if field in row.data and row.integer(field) != want:
                row.fail(field, f"{row.data[field]} does not match the lists (expected {want})")
        if subset.lower() == TIES.lower() and not TIES_ID.fullmatch(row.id):
            row.fail("id", f"a Ties id must be ref:<n> or tied:<n>, got '{row.id}'")
        return Item(row.id, prompt, chosen, rejected, subset=subset)

    def metrics(self, rows, policy):
        by_subset: dict[str, list] = {}
        for r in rows:
            by_subset.setdefault(r["subset"], []).append(r)
        per = {}
        for subset, mine in sorted(by_subset.items()):
            if subset.lower() == TIES.lower():
                per[subset] = ties_score(mine)
            else:
                got = [c for c in (credit(r, policy) for r in mine) if c is not None]
                per[subset] = round(sum(got) / len(got), 4) if got else None
        known = [v for v in per.values() if v is not None]
        return {"subsets": per, "overall": round(sum(known) / len(known), 4) if known else None}


def _stats(r: dict):
    """(accurate, spread of the correct answers or None, correct-incorrect margin) of one Ties item."""
    c, i = r["scores_correct"], r["scores_incorrect"]
    if r["method"] != "pointwise" or not c or not i or None in (*c, *i):
        return None
    spread = max(c) - min(c) if len(c) > 1 else None
    margin = min(c) - max(i)
    return margin > 0, spread, margin


def ties_score(rows: list[dict]) -> float | None:
    """RewardBench 2's Ties score (module docstring) from the items' kept scores."""
    ref, tied = {}, {}
    for r in rows:
        kind, n = TIES_ID.fullmatch(r["item_id"]).groups()
        s = _stats(r)
        if s is not None:
            (ref if kind == "ref" else tied)[int(n)] = s
    if not ref and not tied:
        return None
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    ref_acc, tied_acc = mean([s[0] for s in ref.values()]), mean([s[0] for s in tied.values()])
    both = sorted(set(ref) & set(tied))
    pref = pref_hard = margin_score = 0.0
    if both:
        spread = [tied[n][1] for n in both]
        m_tied = [tied[n][2] for n in both]
        m_min = [min(ref[n][2], tied[n][2]) for n in both]
        pref = mean([t > s for t, s in zip(m_tied, spread) if s is not None] +
                    [False for s in spread if s is None])
        pref_hard = mean([m > s for m, s in zip(m_min, spread) if s is not None] +
                         [False for s in spread if s is None])
        margin_score = mean([_tanh_gap(m, s) for m, s in zip(m_min, spread)])
    return round(0.30 * tied_acc + 0.30 * ref_acc + 0.20 * pref + 0.20 * pref_hard + 0.01 * margin_score, 4)


def _tanh_gap(margin: float, spread: float | None) -> float:
    """tanh(margin / spread - 1) as numpy computes it (x / 0 = +-inf, 0 / 0 = NaN -> 0)."""
    if spread is None or (spread == 0 and margin == 0):
        return 0.0
    if spread == 0:
        return math.copysign(1.0, margin)
    return math.tanh(margin / spread - 1)
