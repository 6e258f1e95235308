"""The explain stage as flows/stage.py runs it: every RM's scores of the leaderboard's benchmark and split,
the benchmark's pairs and what the RMs were shown, into data/explain/ (cells, pairs), metrics/explain.json
(the error analysis) and plots/explain_length.png (the length bias per RM)."""
from __future__ import annotations

from collections import Counter

from tasks.core.errors import ConfigError
from tasks.stages.explain import analysis
from tasks.stages.explain.cells import cells as make_cells
from tasks.stages.explain.pairs import pair_rows


def _params(params: dict) -> dict:
    """The leaderboard's keys it reads, checked as the leaderboard checks them (heatmap_strategy is the page's), and
    its own group."""
    from tasks.stages.leaderboard import check_params

    board = check_params({"heatmap_strategy": None, **params["leaderboard"]})
    return {**{k: v for k, v in board.items() if k != "heatmap_strategy"}, **params["explain"]}


def _scores(inputs: dict, p: dict) -> list[dict]:
    from tasks.core.artifacts import read_table

    rows = [r for _, path in sorted(inputs.items()) for r in read_table(path, "scores").to_pylist()]
    return [r for r in rows if (p["split"] is None or r["split"] == p["split"])
            and r["benchmark"] == p.get("benchmark", "personalised")]


def load(params: dict, inputs: dict) -> tuple[list[dict], list[dict], dict]:
    """(cells, pair rows, p) from the stage's inputs; bad or stale inputs stop it before anything is written."""
    import pyarrow.parquet as pq

    from tasks.core.artifacts import read_table
    from tasks.core.rm_labels import role
    from tasks.models.strategies import EVALUATION_ONLY, load_contexts

    p = _params(params)
    scores = _scores(inputs.get("scores") or {}, p)
    if not scores:
        raise ConfigError(f"explain: no scored pairs of benchmark '{p.get('benchmark', 'personalised')}' in split "
                          f"'{p['split']}' under data/scores/ (run the score stages first)")
    scored = {r["question_id"] for r in scores}
    pairs = [r for r in read_table(inputs["selected_pairs"], "judged_pairs").to_pylist() if r["question_id"] in scored]
    missing = sorted(scored - {r["question_id"] for r in pairs})
    if missing:
        stale = next(r for r in scores if r["question_id"] == missing[0])
        raise ConfigError(f"{inputs['scores'][stale['rm']]}: pair '{missing[0]}' is not among the benchmark's pairs "
                          f"({inputs['selected_pairs']}): the scores are older than the pairs (run score@{stale['rm']})")
    questions = {q["id"]: q for q in read_table(inputs["questions"], "questions").to_pylist()}
    sizes = Counter(pq.read_table(inputs["profiles"], columns=["question_id"]).column(0).to_pylist())
    strategies = sorted({r["strategy"] for r in scores}, key=analysis.strategy_order)
    fidelity = params["common"].get("fidelity", "corrected")
    ctx = {s: load_contexts(s, inputs["questions"], inputs["profile_context"], inputs.get("inferred_rubrics"),
                            fidelity) for s in strategies}
    ratings = read_table(inputs["ratings"], "human_ratings").to_pylist() if inputs.get("ratings") else []
    rows = pair_rows(pairs, questions, sizes, {s: dict(c) for s, c in ctx.items()},
                     {s: c.failed for s, c in ctx.items()}, ratings, p["profile_bins"])
    roles = {rm: role(entry) for rm, entry in params["scoring"]["rms"].items()}
    relations = {r["question_id"]: r["length_relation"] for r in rows}
    return make_cells(scores, relations, p["tie_policy"], roles, EVALUATION_ONLY), rows, p


def run(params: dict, inputs: dict, out: dict) -> dict:
    """inputs: the declared ones (selected pairs, questions, profiles, profile context, inferred rubrics,
    human ratings) and "scores": {rm: its scores Parquet}."""
    from tasks.core.artifacts import write_table
    from tasks.core.runlog import write_metrics

    cells, rows, p = load(params, inputs)
    kinds = {rm: entry.get("kind") for rm, entry in params["scoring"]["rms"].items()}
    metrics = analysis.analyse(cells, rows, p, params["common"]["seed"], kinds)
    write_table(rows, out["pairs"], "explain_pairs")
    write_table(cells, out["cells"], "explain_cells")
    write_metrics(metrics, out["metrics"])
    plot_length_bias(metrics, out["plot"])
    return metrics


def plot_length_bias(metrics: dict, path) -> None:
    """Per RM, the share of decided pairs of unequal length where it preferred the longer answer, one marker per
    strategy with its CI (a bare marker where too few pairs); 50% dashed, a perfect RM's share dotted. The null
    baselines other than the length rules are left out (a coin's share says nothing; they are in the metrics)."""
    from tasks.core.plots import plt, save
    from tasks.stages.explain.text import LENGTH_KINDS

    rms = sorted(rm for rm, e in metrics["rms"].items() if e["role"] != "null baseline" or e.get("kind") in LENGTH_KINDS)
    strategies = metrics["strategies"]
    fig, ax = plt.subplots(figsize=(min(24.0, max(5.0, 0.45 * len(rms) + 2.5)), 3.6))
    labelled = set()
    for i, s in enumerate(strategies):
        for j, rm in enumerate(rms):
            e = (metrics["rms"][rm]["strategies"].get(s) or {}).get("picked_longer") or {}
            if e.get("value") is None:
                continue
            lo, hi = e["ci"] or (e["value"], e["value"])
            ax.errorbar([j + (i - (len(strategies) - 1) / 2) * 0.15], [e["value"]], fmt="o", color=f"C{i}",
                        yerr=[[e["value"] - lo], [hi - e["value"]]], capsize=2, markersize=4,
                        label=None if s in labelled else s)
            labelled.add(s)
    length = metrics["pairs"]["length"]
    unequal = length.get("chosen longer", 0) + length.get("chosen shorter", 0)
    if unequal:
        ax.axhline(length.get("chosen longer", 0) / unequal, color="black", linewidth=1, linestyle=":",
                   label="a perfect RM (chosen longer)")
    ax.axhline(0.5, linestyle="--", color="grey", linewidth=1, label="no length preference")
    ax.set_xticks(range(len(rms)), rms, rotation=35, ha="right", fontsize=7)
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("picked the longer answer")
    ax.set_title("Length bias: share of pairs where the RM preferred the longer answer (CI)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    save(fig, path)


def stage_inputs(params: dict, key: None, declared: dict) -> dict:
    """(flows/stage.py) the declared inputs that exist and {rm: scores path} for the RMs in params."""
    from tasks.core import artifacts, layout

    scores = artifacts.existing({rm: layout.scores(rm)["scores"] for rm in sorted(params["scoring"]["rms"])})
    return {**artifacts.existing(declared), "scores": scores}


def stage_rows(out: dict) -> list[dict]:
    """One row per RM × strategy: what the Prefect UI's table shows (flows/ui.py)."""
    import json
    from pathlib import Path

    from tasks.stages.explain.text import summary_rows

    return summary_rows(json.loads(Path(out["metrics"]).read_text(encoding="utf-8")))


def stage_summary(out: dict, metrics: dict) -> str:
    from tasks.stages.explain.text import summary_table

    return summary_table(metrics)
