"""Names a dataset defines, checked against the dataset's own list before any work: LaMP-QA's configs
(ingest.configs) and splits (every `splits` / `split` key), the domains ingest reads (bon.domains), and the
subsets of a `benchmarks:` entry where its importer knows the publisher's list (its dataset card); a subset
of a benchmark whose list is not known is checked against the data when it is read, before any scoring.
Each problem is one line naming the key and the value, with "did you mean". A split that exists but that
ingest does not read is a notice: the stage that reads it finds no question of it."""
from __future__ import annotations

from tasks.core.errors import suggestion
from tasks.core.params.rules import value

# keys naming splits of the ingested data (ingest.splits and rl_prompts.splits are typed: the schema checks them)
SPLIT_KEYS = ("rubrics.splits", "pairs.splits", "pairs.generate_splits", "human_eval.splits", "generic_pairs.splits",
              "train_rm.splits", "scoring.splits", "bon.splits", "rl.train.splits", "rl.eval.splits",
              "leaderboard.split", "correlation.split")
RL_PROMPT_KEYS = ("rl.train.splits",)   # also read from ingest.rl_prompts


def _items(p: dict, key: str) -> list[tuple[str, object]]:
    """(key with position, name) of a list key, or (key, name) of a single one; none when null."""
    v = value(p, key)
    if isinstance(v, list):
        return [(f"{key}[{i}]", n) for i, n in enumerate(v)]
    return [] if v is None else [(key, v)]


def _line(key: str, name, what: str, valid) -> str:
    return f"{key}: {name!r} is not {what}{suggestion(str(name), valid)}; valid: {', '.join(valid)}"


def data_problems(p: dict) -> list[str]:
    """Configs, splits, domains and known benchmark subsets that the data does not define."""
    from tasks.stages.sources import CONFIGS, SPLITS

    out = [_line(k, n, "a LaMP-QA config", list(CONFIGS)) for k, n in _items(p, "ingest.configs") if n not in CONFIGS]
    for key in SPLIT_KEYS:
        out += [_line(k, n, "a LaMP-QA split", SPLITS) for k, n in _items(p, key) if n not in SPLITS]
    domains = [CONFIGS[c] for c in value(p, "ingest.configs") or () if c in CONFIGS]
    out += [_line(k, n, "a domain ingest reads (ingest.configs)", domains) for k, n in _items(p, "bon.domains")
            if n not in domains]
    return out + subset_problems(p)


def subset_problems(p: dict) -> list[str]:
    from tasks.stages.benchmarks import BENCHMARKS

    out = []
    for name, entry in (value(p, "benchmarks") or {}).items():
        source, subset = (entry or {}).get("source"), (entry or {}).get("subset")
        if subset is not None and source in BENCHMARKS:
            line = unknown_subset(BENCHMARKS[source], subset, f"benchmarks.{name}.subset")
            out += [line] if line else []
    return out


def unknown_subset(bench, subset: str, key: str) -> str | None:
    """One line when the importer knows its publisher's subsets and `subset` is not one (the load's wording)."""
    known = list(getattr(bench, "subsets", ()) or ())
    if not known or subset in known:
        return None
    return f"{key}: no subset '{subset}' in {bench.name}{suggestion(subset, known)}; valid: {', '.join(known)}"


def data_notices(p: dict) -> list[str]:
    """Splits that exist but that ingest does not read: the stages reading them find no question."""
    read = set(value(p, "ingest.splits") or ())
    prompts = set(value(p, "ingest.rl_prompts.splits") or ())
    out = []
    for key in SPLIT_KEYS:
        have = read | prompts if key in RL_PROMPT_KEYS else read
        missing = [n for _, n in _items(p, key) if isinstance(n, str) and n not in have]
        if missing:
            where = "ingest.splits" + (" or ingest.rl_prompts.splits" if key in RL_PROMPT_KEYS else "")
            out.append(f"{key}: {', '.join(map(repr, dict.fromkeys(missing)))} not in {where} "
                       f"({', '.join(sorted(have)) or 'none'}): no question of it is read")
    return out
