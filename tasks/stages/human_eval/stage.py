"""The human_eval stage: import the annotators' files (or, before any exist, rate with an LLM
proxy), unblind, and report whether chosen and rejected differ only in personal fit."""
from __future__ import annotations

import re
import textwrap
from collections import Counter

import numpy as np

from tasks.core.errors import ConfigError
from tasks.stages.human_eval import DIMENSIONS, HUMAN, PAPER, PROXY, SIDES, analysis, proxy
from tasks.stages.human_eval.annotations import import_annotations
from tasks.stages.human_eval.export import key_rows, load_items, seeded_order

PROXY_MODES = ("auto", "always", "never")   # auto: only while no human has rated
COLORS = {"chosen": "#4C72B0", "rejected": "#DD8452"}


def stale_key_items(key_path, items: list[dict], seed: int) -> int:
    """Key items whose pair is gone or whose texts changed since the export: their human ratings
    describe answers the current pairs table no longer holds."""
    from pathlib import Path

    from tasks.core.artifacts import read_table

    if not Path(key_path).exists():
        return 0
    now = {k["item_id"]: (k["answer_a_sha256"], k["answer_b_sha256"]) for k in key_rows(items, seed)}
    return sum(now.get(k["item_id"]) != (k["answer_a_sha256"], k["answer_b_sha256"])
               for k in read_table(key_path, "human_eval_key").to_pylist())


def plot(summaries: dict, path) -> None:
    """Mean ± sd per dimension, chosen vs rejected; human and proxy side by side (proxy hatched)."""
    from tasks.core.plots import plt, save

    dims, bars = list(DIMENSIONS), [(k, s) for k in (HUMAN, PROXY) if summaries.get(k) for s in SIDES]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    x, width = np.arange(len(dims)), 0.8 / max(len(bars), 1)
    for i, (kind, side) in enumerate(bars):
        stats = [summaries[kind]["per_dimension"][d].get("all", {}).get(side, {}) for d in dims]
        ax.bar(x + (i - (len(bars) - 1) / 2) * width, [s.get("mean") or 0 for s in stats], width,
               yerr=[s.get("sd") or 0 for s in stats], capsize=3, color=COLORS[side], edgecolor="black",
               linewidth=0.4, hatch="//" if kind == PROXY else None, label=f"{kind}: {side}")
    ax.set_xticks(x, [textwrap.fill(DIMENSIONS[d][0], 18) for d in dims], fontsize=7)
    ax.set_ylim(0, 5.7)
    ax.set_ylabel("rating 1-5 (mean ± sd over items)", fontsize=8)
    ax.set_title("Human evaluation: chosen vs rejected", fontsize=9)
    if bars:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.text(0.5, 0.5, "no valid ratings yet", transform=ax.transAxes, ha="center")
    save(fig, path)


def _order(r: dict) -> tuple:
    return (r["annotator_kind"], r["annotator"], r["item_id"], r["answer"], list(DIMENSIONS).index(r["dimension"]))


def run(params: dict, inputs: dict, out: dict) -> dict:
    from tasks.core.artifacts import write_table
    from tasks.core.runlog import write_metrics
    from tasks.models.resources import Resources

    p, res = params["human_eval"], Resources(params)
    if p["proxy"] not in PROXY_MODES:
        raise ConfigError(f"human_eval.proxy: unknown value '{p['proxy']}'; valid: {', '.join(PROXY_MODES)}")
    items = seeded_order(load_items(inputs, p["splits"], p["profile_max_words"]), res.seed)
    imported = import_annotations(p["raw_dir"], p["key"], p["on_error"])
    human, proxied, replies = imported.ratings, [], []
    if p["proxy"] == "always" or (p["proxy"] == "auto" and not human):
        llm = res.llm(p["proxy_llm"])
        picked = proxy.proxy_items(items, {r["item_id"] for r in human}, p["proxy_limit"])
        proxied, replies = proxy.rate(picked, llm, p["proxy_llm"], p, res.seed)
    write_table(sorted(human + proxied, key=_order), out["ratings"], "human_ratings")
    write_table(replies, out["proxy_replies"], "proxy_replies")
    write_table(imported.quarantine, out["quarantine"], "quarantine")
    thresholds = (p["general_gap_max"], p["personal_gap_min"])
    summaries = {HUMAN: analysis.summarize(human, *thresholds) if human else None,
                 PROXY: analysis.summarize(proxied, *thresholds) if proxied else None}
    if summaries[PROXY]:
        summaries[PROXY].update(llm=p["proxy_llm"], forms=len(replies),
                                invalid_forms=sum(not r["valid"] for r in replies))
    metrics = {
        "source": "+".join(k for k, v in summaries.items() if v) or "none",
        "items_available": len(items),
        "annotations": {
            "files": imported.files, "human_ratings": len(human),
            "quarantined_rows": len({(q["file"], q["row"]) for q in imported.quarantine}),
            "quarantine_reasons": dict(sorted(Counter(re.sub(r"^annotations\[\d+\]\.", "", q["field"] or "row")
                                                      for q in imported.quarantine).items())),
            "skipped": dict(sorted(imported.skipped.items())),
            "key_items_changed_since_export": stale_key_items(p["key"], items, res.seed),
        },
        **summaries,
        "proxy_vs_human": analysis.proxy_vs_human(proxied, human) if human and proxied else None,
        "paper": PAPER,
        "run": res.stats(),
    }
    write_metrics(metrics, out["metrics"])
    plot(summaries, out["plot"])
    return metrics


def stage_cache_extra(params: dict, key: None) -> dict:
    """(flows/stage.py) The annotators' files and the key wherever params put them: a new file must miss the cache."""
    from tasks.core.artifacts import tree_hash

    p = params["human_eval"]
    return {"annotations": tree_hash([p["raw_dir"], p["key"]])}
