"""The leaderboard stage: accuracy of every RM × strategy, per domain, micro (all pairs) and macro
(mean of domains), with percentile-bootstrap CIs; metrics for `dvc metrics diff`, plots, a text table."""
from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

import numpy as np

from tasks.core import precision
from tasks.core.determinism import stable_rng
from tasks.core.errors import ConfigError
from tasks.stages.adjacent import adjacent_tests
from tasks.stages.chance import chance_tests
from tasks.models.strategies import EVALUATION_ONLY, STRATEGIES

POLICIES = ("strict", "half", "drop")   # a tie is wrong | counts 0.5 | leaves the denominator
MICRO, MACRO = "micro", "macro"
ORACLE_LABEL = "(upper bound)"


def label(strategy: str) -> str: return f"{strategy} {ORACLE_LABEL}" if strategy in EVALUATION_ONLY else strategy  # noqa: E704


def _strategy_key(s: str):
    return (STRATEGIES.index(s) if s in STRATEGIES else len(STRATEGIES.names()), s)


def _invalid(r: dict) -> bool:
    return bool(r["invalid"]) or r["score_chosen"] is None or r["score_rejected"] is None


def _tie(r: dict) -> bool:
    return not _invalid(r) and bool(r["tie"])


def credits(rows: list[dict], policy: str) -> np.ndarray:
    """One credit per counted pair: 1 right, 0 wrong. Invalid is wrong under every policy, never dropped."""
    out = []
    for r in rows:
        if _invalid(r):
            out.append(0.0)
        elif _tie(r):
            if policy != "drop":
                out.append(0.5 if policy == "half" else 0.0)
        else:
            out.append(1.0 if r["correct"] else 0.0)
    return np.asarray(out, dtype=float)


def boot_means(values: np.ndarray, rng: np.random.Generator, b: int) -> np.ndarray:
    """b bootstrap means (pairs resampled with replacement). A resample only changes how many of each
    distinct credit it holds, so draw those counts: the same distribution in O(b) memory."""
    levels, counts = np.unique(values, return_counts=True)
    draws = rng.multinomial(len(values), counts / len(values), size=b)
    return draws @ levels / len(values)


def _estimate(values: np.ndarray, means, ci: float) -> tuple:
    """(accuracy, (ci_low, ci_high)); no accuracy when no pair counts (e.g. all ties under `drop`)."""
    if not len(values):
        return None, (None, None)
    lo, hi = np.quantile(means, [(1 - ci) / 2, (1 + ci) / 2])
    return float(values.mean()), (float(lo), float(hi))


def _r4(x): return None if x is None else round(float(x), 4)  # noqa: E704

def position_a_rate(rows: list[dict]):
    """Pairwise judges: share of verdicts for position A (0.5 = no position preference); None otherwise."""
    known = [r["picked_a"] for r in rows if r.get("picked_a") is not None]
    return _r4(sum(known) / len(known)) if known else None


NO_LABELS = {"shares_llm_with": "", "shares_encoder_with": "", "in_distribution": False, "implicit_reward": ""}


def _row(rm, strategy, domain, n, estimate, rows, policy, labels=None) -> dict:
    acc, (lo, hi) = estimate
    return {"rm": rm, "strategy": strategy, "evaluation_only": strategy in EVALUATION_ONLY, "domain": domain,
            "n": int(n), "accuracy": _r4(acc), "ci_low": _r4(lo), "ci_high": _r4(hi),
            "ties": sum(map(_tie, rows)), "invalid": sum(map(_invalid, rows)),
            "truncated": sum(bool(r["truncated"]) for r in rows), "tie_policy": policy,
            "planner_failed_rows": sum(bool(r.get("planner_failed")) for r in rows),
            "position_a_rate": position_a_rate(rows), **precision.fields(rows), **(labels or NO_LABELS)}


def group_rows(rm: str, strategy: str, scores: list[dict], p: dict, seed: int,
               labels: dict | None = None) -> list[dict]:
    """Leaderboard rows of one (rm, strategy): each domain, then micro, then macro. `labels`: the
    RM's tasks.core.rm_labels entry (shares_llm_with, shares_encoder_with, in_distribution), on every row."""
    by_domain = defaultdict(list)
    for r in scores:
        by_domain[r["domain"] or "unknown"].append(r)
    policy, b, ci = p["tie_policy"], int(p["bootstrap"]), float(p["ci"])
    values = {d: credits(rows, policy) for d, rows in sorted(by_domain.items())}
    boot = lambda v, name: boot_means(v, stable_rng(seed, rm, strategy, name), b) if len(v) else None  # noqa: E731
    out = [_row(rm, strategy, d, len(v), _estimate(v, boot(v, d), ci), by_domain[d], policy, labels)
           for d, v in values.items()]
    every = np.concatenate(list(values.values()))
    out.append(_row(rm, strategy, MICRO, len(every), _estimate(every, boot(every, MICRO), ci), scores, policy, labels))
    counted = [v for v in values.values() if len(v)]   # a domain with no counted pair has no accuracy to average
    macro = (None, (None, None))
    if counted:   # resample within each domain, then average the domain means
        rng = stable_rng(seed, rm, strategy, MACRO)
        means = np.mean([boot_means(v, rng, b) for v in counted], axis=0)
        lo, hi = np.quantile(means, [(1 - ci) / 2, (1 + ci) / 2])
        macro = (float(np.mean([v.mean() for v in counted])), (float(lo), float(hi)))
    out.append(_row(rm, strategy, MACRO, sum(map(len, counted)), macro, scores, policy, labels))
    return out


def leaderboard_rows(scores: list[dict], p: dict, seed: int, labels: dict | None = None) -> list[dict]:
    groups = defaultdict(list)
    for r in scores:
        groups[(r["rm"], r["strategy"])].append(r)
    keys = sorted(groups, key=lambda k: (k[0], _strategy_key(k[1])))
    return [row for rm, s in keys for row in group_rows(rm, s, groups[(rm, s)], p, seed, (labels or {}).get(rm))]


def _position_bias(rows: list[dict]):
    known = [r["order_consistent"] for r in rows if r["order_consistent"] is not None]
    return _r4(sum(not k for k in known) / len(known)) if known else None


def leaderboard_metrics(rows: list[dict], scores: list[dict], p: dict, rms: dict | None = None) -> dict:
    """Accuracies and counts per RM × strategy, the adjacent tests, the tests against chance (`rms`: scoring.rms)."""
    by_group = defaultdict(list)
    for r in scores:
        by_group[(r["rm"], r["strategy"])].append(r)
    per_rm: dict = defaultdict(dict)
    for r in rows:
        entry = per_rm[r["rm"]].setdefault(r["strategy"], {
            "evaluation_only": r["evaluation_only"], "per_domain": {}, "pairs": len(by_group[(r["rm"], r["strategy"])]),
            "position_bias": _position_bias(by_group[(r["rm"], r["strategy"])]),
            "position_a_rate": position_a_rate(by_group[(r["rm"], r["strategy"])])})
        acc = {"accuracy": r["accuracy"], "ci": [r["ci_low"], r["ci_high"]], "n": r["n"]}
        if r["domain"] in (MICRO, MACRO):
            entry[r["domain"]] = acc
            entry.update(ties=r["ties"], invalid=r["invalid"], truncated=r["truncated"],
                         planner_failed_rows=r["planner_failed_rows"], **{k: r.get(k) for k in precision.FIELDS})
        else:
            entry["per_domain"][r["domain"]] = acc
    labels = {r["rm"]: {**{k: [x for x in r[k].split(", ") if x] for k in ("shares_llm_with", "shares_encoder_with")},
                        "in_distribution": r["in_distribution"], "implicit_reward": r["implicit_reward"]} for r in rows}
    return {"tie_policy": p["tie_policy"], "ci": p["ci"], "bootstrap": p["bootstrap"], "split": p["split"],
            "rms": dict(per_rm), "labels": dict(sorted(labels.items())),
            "adjacent": adjacent_tests(scores, rows, p, credits), "chance": chance_tests(scores, p, credits, rms)}


def _fmt(acc, lo, hi) -> str: return "-" if acc is None else f"{acc:.3f} [{lo:.3f}, {hi:.3f}]"  # noqa: E704


def format_table(rows: list[dict]) -> str:
    """RM × strategy, micro accuracy with its CI, as aligned text."""
    micro = [r for r in rows if r["domain"] == MICRO]
    strategies = sorted({r["strategy"] for r in micro}, key=_strategy_key)
    cells = {(r["rm"], r["strategy"]): _fmt(r["accuracy"], r["ci_low"], r["ci_high"]) for r in micro}
    lines = [["rm", *map(label, strategies)]]
    lines += [[_rm_label(rm, micro), *(cells.get((rm, s), "-") for s in strategies)]
              for rm in sorted({r["rm"] for r in micro})]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    title = f"micro accuracy [bootstrap CI], tie policy: {micro[0]['tie_policy'] if micro else '?'}"
    notes = [f"{r['rm']} / {r['strategy']}: {r['planner_failed_rows']} of {r['n']} pairs had no parsed plan "
             "(scored with the question only)" for r in micro if r.get("planner_failed_rows")]
    return "\n".join([title, *("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines),
                      *notes])


def _rm_label(rm: str, micro: list[dict]) -> str:
    """The RM's name with its labels: in-distribution, or sharing its LLM with a judge."""
    r = next(x for x in micro if x["rm"] == rm)
    marks = (["in-distribution"] if r.get("in_distribution") else []) + [
        f"shares {what} with {r[key]}" for what, key in (("LLM", "shares_llm_with"), ("encoder", "shares_encoder_with"))
        if r.get(key)] + ([f"implicit reward: {r['implicit_reward']}"] if r.get("implicit_reward") else [])
    return f"{rm} [{'; '.join(marks)}]" if marks else rm


def write_plot_data(rows: list[dict], path) -> Path:
    """Micro accuracy per RM × strategy as CSV, for `dvc plots`; written atomically, fixed format."""
    from tasks.core.artifacts import write_text

    num = lambda x: "" if x is None else f"{x:.4f}"  # noqa: E731
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["rm", "strategy", "evaluation_only", "accuracy", "ci_low", "ci_high"])
    writer.writerows([r["rm"], r["strategy"], str(r["evaluation_only"]).lower(), num(r["accuracy"]),
                      num(r["ci_low"]), num(r["ci_high"])] for r in rows if r["domain"] == MICRO)
    return write_text(text.getvalue(), path)


def _color(strategy: str, i: int) -> str:
    """One colour per known strategy, the same in every run and plot."""
    return f"C{STRATEGIES.index(strategy) if strategy in STRATEGIES else len(STRATEGIES.names()) + i}"


def plot_accuracy(rows: list[dict], path) -> None:
    """Micro accuracy per RM, one bar per strategy with its CI; oracle hatched; chance dashed."""
    from tasks.core.plots import plt, save

    micro = [r for r in rows if r["domain"] == MICRO and r["accuracy"] is not None]
    rms = sorted({r["rm"] for r in micro})
    strategies = sorted({r["strategy"] for r in micro}, key=_strategy_key)
    fig, ax = plt.subplots(figsize=(max(4.5, 1.2 * len(rms) * max(1, len(strategies)) ** 0.5 + 2), 3.6))
    width = 0.8 / max(1, len(strategies))
    for i, s in enumerate(strategies):
        mine = [r for r in micro if r["strategy"] == s]
        x = np.array([rms.index(r["rm"]) for r in mine]) - 0.4 + width * (i + 0.5)
        acc = np.array([r["accuracy"] for r in mine])
        err = [acc - [r["ci_low"] for r in mine], [r["ci_high"] for r in mine] - acc]
        ax.bar(x, acc, width=width, yerr=err, capsize=3, label=label(s), color=_color(s, i),
               hatch="//" if s in EVALUATION_ONLY else None, edgecolor="black", linewidth=0.5)
    ax.axhline(0.5, linestyle="--", color="grey", linewidth=1, label="chance")
    ax.set_xticks(range(len(rms)), rms, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"accuracy ({micro[0]['tie_policy'] if micro else '?'} ties)")
    ax.set_title("Picks the answer that fits the user (micro, bootstrap CI)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    save(fig, path)


def plot_domains(rows: list[dict], strategy: str, path) -> None:
    """Accuracy per domain × RM for one strategy, values written in the cells."""
    from tasks.core.plots import plt, save

    mine = [r for r in rows if r["strategy"] == strategy and r["domain"] not in (MICRO, MACRO)]
    rms, domains = sorted({r["rm"] for r in mine}), sorted({r["domain"] for r in mine})
    grid = np.full((len(domains), len(rms)), np.nan)
    for r in mine:
        grid[domains.index(r["domain"]), rms.index(r["rm"])] = np.nan if r["accuracy"] is None else r["accuracy"]
    fig, ax = plt.subplots(figsize=(max(4, 1.3 * len(rms) + 2), max(2.5, 0.6 * len(domains) + 1.5)))
    if mine:
        cmap = plt.get_cmap("viridis").with_extremes(bad="lightgrey")   # grey: not scored, or nothing counted
        im = ax.imshow(grid, vmin=0, vmax=1, cmap=cmap, aspect="auto")
        for (i, j), v in np.ndenumerate(grid):
            ax.text(j, i, "-" if np.isnan(v) else f"{v:.2f}", ha="center", va="center",
                    color="white" if v <= 0.6 else "black", fontsize=9)
        ax.set_xticks(range(len(rms)), rms, rotation=20, ha="right")
        ax.set_yticks(range(len(domains)), domains)
        fig.colorbar(im, ax=ax, label="accuracy")
    else:
        ax.text(0.5, 0.5, f"no scores for strategy '{strategy}'", ha="center", va="center")
        ax.set_axis_off()
    ax.set_title(f"Accuracy per domain: {label(strategy)}")
    save(fig, path)


def check_params(p: dict) -> dict:
    missing = [k for k in ("tie_policy", "bootstrap", "ci", "split", "heatmap_strategy") if k not in p]
    if missing:
        raise ConfigError(f"leaderboard: missing {', '.join(missing)} in params")
    if p.get("tie_policy") not in POLICIES:
        raise ConfigError(f"leaderboard.tie_policy: unknown policy '{p.get('tie_policy')}'; "
                          f"valid: {', '.join(POLICIES)}")
    if not isinstance(p.get("bootstrap"), int) or p["bootstrap"] < 1:
        raise ConfigError(f"leaderboard.bootstrap: need a positive number of resamples, got {p.get('bootstrap')!r}")
    if not isinstance(p.get("ci"), (int, float)) or not 0 < p["ci"] < 1:
        raise ConfigError(f"leaderboard.ci: need a level in (0, 1), e.g. 0.95, got {p.get('ci')!r}")
    return p


def run(params: dict, inputs: dict, out: dict) -> dict:
    """inputs: {rm: path of its SCORES Parquet}. params: leaderboard, common.seed, and what
    tasks.core.rm_labels reads (llms, scoring.rms, the judges' keys) for the RM labels."""
    from tasks.core.artifacts import read_table, write_table
    from tasks.core.rm_labels import labels
    from tasks.core.runlog import write_metrics

    p, seed = check_params(params["leaderboard"]), params["common"]["seed"]
    if not inputs:
        raise ConfigError("leaderboard: no scores under data/scores/ (run the score stage first)")
    scores = [r for _, path in sorted(inputs.items()) for r in read_table(path, "scores").to_pylist()]
    scores = [r for r in scores if (p["split"] is None or r["split"] == p["split"])
              and r["benchmark"] == p.get("benchmark", "personalised")]
    if not scores:
        raise ConfigError(f"leaderboard.split: no scored pairs in split '{p['split']}'")
    rows = leaderboard_rows(scores, p, seed, labels(params))
    metrics = leaderboard_metrics(rows, scores, p, (params.get("scoring") or {}).get("rms"))
    write_table(rows, out["leaderboard"], "leaderboard")
    write_metrics(metrics, out["metrics"])
    plot_accuracy(rows, out["plot_accuracy"])
    plot_domains(rows, p["heatmap_strategy"], out["plot_heatmap"])
    write_plot_data(rows, out["plot_data"])
    return metrics


def stage_inputs(params: dict, key: None, declared: dict) -> dict:
    """(flows/stage.py) {rm: scores path} for the RMs in params that were scored."""
    from tasks.core import layout, artifacts
    return artifacts.existing({rm: layout.scores(rm)["scores"] for rm in sorted(params["scoring"]["rms"])})


def stage_rows(out: dict) -> list[dict]:
    from tasks.core import artifacts
    return artifacts.read_table(out["leaderboard"], "leaderboard").to_pylist()


def stage_summary(out: dict, metrics: dict) -> str: return format_table(stage_rows(out))  # noqa: E704
