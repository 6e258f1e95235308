"""`generic`: any pairwise preference file, one row {id, prompt, chosen, rejected[, subset]} (the
layout of RewardBench 1, HH-style exports and our own generic baseline pairs). No user history."""
from __future__ import annotations

from tasks.stages.benchmarks import register
from tasks.stages.benchmarks.base import Benchmark
from tasks.models.listwise import Item


@register
class Generic(Benchmark):
    name = kind = "generic"
    hub_id = "allenai/reward-bench"
    hub_split = "filtered"

    def item(self, row):
        row.required_id()
        return Item(row.id, row.text("prompt"), (row.text("chosen"),), (row.text("rejected"),),
                    subset=row.text("subset", required=False) or "all")
