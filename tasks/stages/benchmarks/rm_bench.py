"""`rm-bench` (THU-KEG/RM-Bench, total_dataset.json): {id, prompt, chosen[3], rejected[3], domain};
answer i of each list is in style i (concise, detailed plain, detailed markdown). The item is
list-wise here (all three chosen above all three rejected, chance 1/20); the published numbers come
from the 3 x 3 matrix of chosen i vs rejected j: hard = chosen in a plainer style than the rejected
(above the diagonal), normal = the diagonal, easy = below it; pointwise RMs only."""
from __future__ import annotations

from tasks.stages.benchmarks import register
from tasks.stages.benchmarks.base import Benchmark
from tasks.models.listwise import Item


@register
class RmBench(Benchmark):
    name = kind = "rm-bench"
    hub_id = "THU-KEG/RM-Bench"

    def item(self, row):
        row.required_id()
        chosen = row.texts("chosen", n=3)
        return Item(row.id, row.text("prompt"), chosen, row.texts("rejected", n=3), subset=row.text("domain"))

    def metrics(self, rows, policy):
        cells = {"easy": [], "normal": [], "hard": []}
        for r in rows:
            c, i = r["scores_correct"], r["scores_incorrect"]
            if r["method"] != "pointwise" or len(c) != 3 or len(i) != 3 or None in (*c, *i):
                continue
            for a in range(3):
                for b in range(3):
                    win = 1.0 if c[a] > i[b] else (0.5 if policy == "half" and c[a] == i[b] else 0.0)
                    cells["hard" if a < b else "normal" if a == b else "easy"].append(win)
        return {k: (round(sum(v) / len(v), 4) if v else None) for k, v in cells.items()}
