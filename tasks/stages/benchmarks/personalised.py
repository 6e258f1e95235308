"""`personalised` (ours, QiyaoMa/Personalized-RewardBench): LaMP-QA test rows {id, question, profile
[{category, id, text}], chosen, rejected, ...}, one Parquet per config. Rows are checked by the same
rules as ingest (tasks/core/validate.py). The profile is the user's posts in their original order (the
DAG's own `score` stage ranks them with the retriever instead; this importer is for `prbench score`
and for comparing through the same list-wise scorer). Evaluation-only fields never reach an RM."""
from __future__ import annotations

from tasks.stages.benchmarks import register
from tasks.stages.benchmarks.base import Benchmark
from tasks.models.listwise import Item
from tasks.core.validate import row_problems

MAX_POSTS, MAX_WORDS = 10, 60


@register
class Personalised(Benchmark):
    name = kind = "personalised"
    hub_id = "QiyaoMa/Personalized-RewardBench"
    hub_config = "Lifestyle_and_Personal_Development"
    has_profile = True

    def item(self, row):
        problems = row_problems(row.data, with_pairs=True)
        if problems:
            field, message = problems[0]
            row.fail(field, message)
        posts = []
        for p in row.data["profile"][:MAX_POSTS]:
            words = p["text"].split()
            posts.append(f"({p['category']}) " + " ".join(words[:MAX_WORDS]) + (" …" if len(words) > MAX_WORDS else ""))
        return Item(row.id, row.data["question"], (row.data["chosen"],), (row.data["rejected"],),
                    subset=row.data["category"] or "all", profile=tuple(posts))
