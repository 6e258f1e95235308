"""Other benchmarks by their publishers' own scores (issue 33 item 7). `correlation.benchmarks` may list
`<entry>:published` for a `benchmarks:` entry: each RM's published number (RewardBench 2's overall, RM-Bench's
domain mean, PPE's and the pairwise benchmarks' accuracy: the importer's `metrics(...)["score"]`), computed
from the entry's per-item scores (data/bench_scores/<entry>), enters as a fixed number per RM, labelled
with the rule. The entry's list-wise score (prbench's rule, resampled per item) stays beside it."""
from __future__ import annotations

from pathlib import Path

from tasks.core.errors import ConfigError, did_you_mean
from tasks.downstream.correlation.sides import Side

SUFFIX = ":published"
LISTWISE = "listwise: every correct answer above every incorrect one (prbench, tasks/models/listwise.py)"


def split_names(names) -> tuple[list[str], list[str]]:
    """correlation.benchmarks -> (the scored ones: personalised / generic, the `benchmarks:` entries asked by
    their published score)."""
    return [n for n in names if not n.endswith(SUFFIX)], [n[:-len(SUFFIX)] for n in names if n.endswith(SUFFIX)]


def load_published(names: list[str], folders: dict, strategy: str) -> dict[str, Side]:
    """One fixed-number Side per entry in `names`: its published score per RM."""
    from tasks.core.artifacts import read_table
    from tasks.stages.benchmarks import get

    sides = {}
    for name in names:
        if name not in folders:
            raise ConfigError(f"correlation.benchmarks: '{name}{SUFFIX}': no bench_score output for it; "
                              f"{did_you_mean(name, folders)}")
        rows = [r for f in sorted(Path(folders[name]).glob("*.parquet")) for r in read_table(f, "list_scores").to_pylist()]
        use = strategy if any(r["strategy"] == strategy for r in rows) else "none"
        side = Side(f"{name}{SUFFIX}", "published")
        for rm in sorted({r["rm"] for r in rows}):
            mine = [r for r in rows if r["rm"] == rm and r["strategy"] == use]
            if not mine:   # not scored under the strategy the others were: no number, not another strategy's
                continue
            bench = get(mine[0]["source"])
            pub = bench.metrics(mine, "strict")
            side.rule = pub["rule"]   # every importer's metrics names its publisher's rule
            if pub.get("score") is not None:
                side.fixed[rm] = float(pub["score"])
            side.kinds[rm] = mine[0]["rm_kind"]
        sides[side.name] = side
    return sides


def label(side: Side) -> str:
    """How an other benchmark's number (a `bench_scores` or `published` side: stage.LABELLED) was scored: its
    publisher's rule or prbench's list-wise one."""
    return f"published: {side.rule}" if side.source == "published" else LISTWISE
