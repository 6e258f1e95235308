"""Scoring one RM on one `benchmarks:` entry: its items under each strategy the benchmark allows,
in fixed chunks of `scale.chunk_size` items (as the score stage), one row per item with every
answer's score (tasks.models.listwise); then accuracy with a bootstrap CI, chance level, n, ties and invalid
per strategy and per subset, and the benchmark's own headline numbers."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from tasks.stages.benchmarks import get
from tasks.stages.benchmarks.base import format_profile
from tasks.core.determinism import stable_rng
from tasks.core.errors import ConfigError
from tasks.core.progress import bar as progress_bar
from tasks.stages.leaderboard import boot_means
from tasks.models.listwise import credit, score_items

ENTRY_KEYS = ("source", "path", "hub_id", "revision", "subset", "limit", "rms")


def check_entry(name: str, entry) -> dict:
    if not isinstance(entry, dict):
        raise ConfigError(f"benchmarks.{name}: a mapping like {{source: rewardbench2, path: ...}}, got {entry!r}")
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        raise ConfigError(f"benchmarks.{name}.{unknown[0]}: unknown key; valid: {', '.join(ENTRY_KEYS)}")
    if "source" not in entry:
        raise ConfigError(f"benchmarks.{name}.source: missing (one of the registered benchmarks)")
    get(entry["source"], f"benchmarks.{name}.source")
    return entry


def load(name: str, entry: dict, subset_key: str | None = None, data_key: str | None = None):
    """(importer, items) of one params entry; `subset_key` / `data_key`: how an unknown subset / data without
    items are named (default the params keys; `prbench score` names its flags)."""
    check_entry(name, entry)
    bench = get(entry["source"], f"benchmarks.{name}.source")
    items = bench.load(entry.get("path"), entry.get("hub_id"), entry.get("subset"), entry.get("limit"),
                       subset_key=subset_key or f"benchmarks.{name}.subset", revision=entry.get("revision"))
    if not items:
        raise ConfigError(f"{data_key or f'benchmarks.{name}'}: no items to score")
    return bench, items


def contexts(items, strategy: str) -> list[str]:
    if strategy == "none":
        return [""] * len(items)
    if strategy == "raw_profile":
        return [format_profile(it.profile or ()) for it in items]
    raise ConfigError(f"strategy '{strategy}': external benchmarks are scored with none / raw_profile")


def score(rm, name: str, bench, items, chunk_size: int = 256, strategies: list[str] | None = None) -> list[dict]:
    """Rows of each strategy the benchmark scores (`strategies`: only these of them, in its order)."""
    rows = []
    chosen = [s for s in bench.strategies() if strategies is None or s in strategies]
    with progress_bar(total=len(items) * len(chosen), desc=f"{name} {rm.name}", unit="item") as bar:
        for strategy in chosen:
            for a in range(0, len(items), chunk_size):
                part = items[a:a + chunk_size]
                for r in score_items(rm, part, contexts(part, strategy)):
                    rows.append({"rm": rm.name, "benchmark": name, "source": bench.name, "rm_kind": rm.kind,
                                 "rm_identity": rm.identity(), "strategy": strategy, **r})
                bar.update(len(part))
    return rows


def estimate(rows: list[dict], policy: str, b: int, ci: float, *seed_parts) -> dict:
    got = np.asarray([c for c in (credit(r, policy) for r in rows) if c is not None], dtype=float)
    out = {"n": len(rows), "counted": int(len(got)), "ties": sum(bool(r["tie"]) for r in rows),
           "invalid": sum(bool(r["invalid"]) for r in rows), "truncated": sum(bool(r["truncated"]) for r in rows),
           "chance": round(float(np.mean([r["chance"] for r in rows])), 4) if rows else None,
           "accuracy": None, "ci": [None, None]}
    if len(got):   # the leaderboard's bootstrap: items resampled with replacement, in O(b) memory
        means = boot_means(got, stable_rng(*seed_parts), b)
        lo, hi = np.quantile(means, [(1 - ci) / 2, (1 + ci) / 2])
        out.update(accuracy=round(float(got.mean()), 4), ci=[round(float(lo), 4), round(float(hi), 4)])
    return out


def summary(rows: list[dict], bench, lb: dict, seed: int) -> dict:
    """Per strategy: overall and per-subset estimates, the scoring method and the benchmark's own numbers."""
    policy, b, ci = lb["tie_policy"], int(lb["bootstrap"]), float(lb["ci"])
    by = defaultdict(list)
    for r in rows:
        by[r["strategy"]].append(r)
    out = {}
    for strategy, mine in by.items():
        subsets = defaultdict(list)
        for r in mine:
            subsets[r["subset"]].append(r)
        rm, name = mine[0]["rm"], mine[0]["benchmark"]
        out[strategy] = {**estimate(mine, policy, b, ci, seed, rm, name, strategy),
                         "method": sorted({r["method"] for r in mine}),
                         "subsets": {s: estimate(v, policy, b, ci, seed, rm, name, strategy, s)
                                     for s, v in sorted(subsets.items())},
                         "published": bench.metrics(mine, policy)}
    return {"tie_policy": policy, "ci_level": ci, "strategies": out}


def format_summary(name: str, rm: str, metrics: dict) -> str:
    """The printed table: accuracy [CI], chance, n, ties, invalid; per-subset rows under each strategy."""
    lines = [f"{name} / {rm}  (tie policy {metrics['tie_policy']}, {metrics['ci_level']:.0%} bootstrap CI)",
             f"{'strategy / subset':32} {'accuracy':>8} {'CI':>17} {'chance':>7} {'n':>5} {'ties':>5} {'invalid':>7}"]
    fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731

    def line(label, e):
        ci = "-" if e["accuracy"] is None else f"[{fmt(e['ci'][0])}, {fmt(e['ci'][1])}]"
        return f"{label:32} {fmt(e['accuracy']):>8} {ci:>17} {fmt(e['chance']):>7} {e['n']:>5} {e['ties']:>5} " \
               f"{e['invalid']:>7}"
    for strategy, e in metrics["strategies"].items():
        method = ", ".join(e["method"])
        lines.append(line(f"{strategy} (all)", e) + ("" if method == "pointwise" else f"  [{method}]"))
        lines += [line(f"  {s}", v) for s, v in e["subsets"].items()]
        if e["published"]:
            pub = {k: v for k, v in e["published"].items() if k != "rule"}
            lines.append(f"  published ({e['published'].get('rule') or 'its own rule'}): "
                         + ", ".join(f"{k} {v}" for k, v in _flat(pub)))
    return "\n".join(lines)


def _flat(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v
