"""`personalised` (ours, QiyaoMa/Personalized-RewardBench; its dataset card's `configs:`): one config per
domain (Art_and_Entertainment, Lifestyle_and_Personal_Development, Society_and_Culture), split `test`,
LaMP-QA test rows {id, question, profile [{category, id, text}], chosen, rejected, ...}; every config is
read and the domain (the config, or a local file's config name) is the subset. Rows are checked by the same
rules as ingest (tasks/core/validate.py). The profile is the user's posts in their original order (the
DAG's own `score` stage ranks them with the retriever instead; this importer is for `prbench score`
and for comparing through the same list-wise scorer). Evaluation-only fields never reach an RM."""
from __future__ import annotations

from pathlib import Path

from tasks.stages.benchmarks import register
from tasks.core.errors import DataError
from tasks.stages.benchmarks.base import Benchmark, published_accuracy
from tasks.models.listwise import Item
from tasks.core.validate import row_problems
from tasks.stages.sources import CONFIGS, name_to_config_split

MAX_POSTS, MAX_WORDS = 10, 60


@register
class Personalised(Benchmark):
    name = kind = "personalised"
    hub_id = "QiyaoMa/Personalized-RewardBench"
    hub_configs = tuple(CONFIGS)
    has_profile = True
    rule = "pairwise accuracy, a tie wrong (the authors' release), micro over the three domains"

    def files(self, path):
        """A local copy's test files only (a LaMP-QA folder holds train files too: not the benchmark)."""
        return [f for f in super().files(path) if _split(f) == "test"]

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
                    subset=_domain(row.raw), profile=tuple(posts))

    def metrics(self, rows, policy):
        return published_accuracy(self.rule, rows)


def _split(f: Path) -> str:
    try:
        return name_to_config_split(f)[1]
    except DataError:
        return "test"   # a single file without a config in its name: the benchmark's rows


def _domain(raw) -> str:
    """The config a row was read from: the hub's config, else the local file's config name."""
    if raw.config:
        return raw.config
    try:
        return name_to_config_split(Path(raw.file))[0]
    except DataError:
        return "all"   # a single file without a config in its name
