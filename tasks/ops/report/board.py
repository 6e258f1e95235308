"""The headline, the sortable leaderboard and the per-domain heatmap, from the leaderboard stage's
Parquet and metrics. Every accuracy carries its CI; columns a stage adds show up as they are."""
from __future__ import annotations

from collections import defaultdict

from tasks.ops.report import fmt
from tasks.models.strategies import EVALUATION_ONLY, STRATEGIES

MICRO, MACRO = "micro", "macro"
# leaderboard.parquet columns the fixed part of the table already shows; any other column is a flag a
# stage added (e.g. an RM sharing its LLM with the pair filter) and gets a column of its own
KNOWN_COLUMNS = {"rm", "strategy", "evaluation_only", "domain", "n", "accuracy", "ci_low", "ci_high", "ties", "invalid",
                 "truncated", "tie_policy"}
KNOWN_KEYS = {"evaluation_only", "invalid", "macro", "micro", "pairs", "per_domain", "position_bias", "ties", "truncated"}
ORACLE = "(upper bound)"


def strategy_order(s: str):
    return (STRATEGIES.index(s) if s in STRATEGIES else len(STRATEGIES.names()), s)


def strategy_label(s: str, evaluation_only: bool) -> str:
    return f"{s} {ORACLE}" if evaluation_only or s in EVALUATION_ONLY else s


def _scalar(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, str)) or (
        isinstance(v, list) and all(isinstance(x, (bool, int, float, str)) for x in v))


def _col(key: str, title: str, numeric: bool | None, help: str = "", extra: bool = False) -> dict:
    return {"key": key, "title": title, "numeric": numeric, "help": help, "extra": extra}


def _cell(v, text: str | None = None, **extra) -> dict:
    return {"v": fmt.sort_key(v), "text": fmt.value(v) if text is None else text, **extra}


def _acc_cell(acc: dict | None) -> dict:
    acc = acc or {}
    lo, hi = (acc.get("ci") or [None, None])[:2]
    return {"v": fmt.sort_key(acc.get("accuracy")), "text": fmt.pct(acc.get("accuracy")),
            "ci": fmt.ci_pct(lo, hi, n=acc.get("n"), value=acc.get("accuracy")),
            "lo": fmt.sort_key(lo), "hi": fmt.sort_key(hi), "n": acc.get("n")}


def leaderboard(rows: list[dict], columns: list[str], metrics: dict, controls=frozenset()) -> dict:
    """One row per RM × strategy: micro and macro accuracy with CIs, counts, position bias, extras; the
    positive-control RMs (`controls`: they read the gold rubric) labelled so."""
    micro = {(r["rm"], r["strategy"]): r for r in rows if r["domain"] == MICRO}
    entries = {(rm, s): e for rm, per in (metrics.get("rms") or {}).items() for s, e in per.items()}
    keys = sorted(set(micro) | set(entries))
    extra_cols = [c for c in columns if c not in KNOWN_COLUMNS]
    extra_keys = sorted({k for e in entries.values() for k, v in e.items() if k not in KNOWN_KEYS and _scalar(v)}
                        - set(extra_cols))
    head = [_col("rm", "RM", False), _col("strategy", "strategy", False),
            _col("micro", "micro accuracy [CI]", True, "all counted pairs; bootstrap CI"),
            _col("macro", "macro accuracy [CI]", True, "mean of the domains"), _col("pairs", "pairs", True),
            _col("ties", "ties", True), _col("invalid", "invalid", True), _col("truncated", "truncated", True),
            _col("position_bias", "position bias", True,
                 "share of pairs where a pairwise judge changed its verdict with the A/B order"),
            _col("vs_next", "vs next RM [p (Holm)]", True, "paired test against the RM ranked next (same pairs)")]
    head += [_col(c, c.replace("_", " "), None, "added by the leaderboard stage", extra=True)
             for c in extra_cols + extra_keys]
    adjacent = {(t["rm"], st): t for st, tests in ((metrics.get("adjacent") or {}).get("tests") or {}).items()
                for t in tests}
    body = []
    for rm, s in keys:
        e, m = entries.get((rm, s), {}), micro.get((rm, s), {})
        ev = bool(e.get("evaluation_only", m.get("evaluation_only")))
        cells = [_cell(rm, f"{rm} (positive control)" if rm in controls else None), _cell(s, strategy_label(s, ev)), _acc_cell(e.get(MICRO)), _acc_cell(e.get(MACRO)),
                 _cell(e.get("pairs")), _cell(e.get("ties", m.get("ties"))), _cell(e.get("invalid", m.get("invalid"))),
                 _cell(e.get("truncated", m.get("truncated"))),
                 _cell(e.get("position_bias"), fmt.pct(e.get("position_bias")) if e.get("position_bias") is not None
                       else "n/a"), _vs_next(adjacent.get((rm, s)))]
        cells += [_cell(m.get(c)) for c in extra_cols] + [_cell(e.get(k)) for k in extra_keys]
        acc = (e.get(MICRO) or {}).get("accuracy")   # default order: per strategy, best first, unscored last
        body.append({"rm": rm, "strategy": s, "evaluation_only": ev, "cells": cells,
                     "order": (strategy_order(s), -acc if acc is not None else 1, rm)})
    body.sort(key=lambda r: r["order"])
    return {"head": head, "rows": body, "tie_policy": metrics.get("tie_policy"), "ci": metrics.get("ci"),
            "bootstrap": metrics.get("bootstrap"), "split": metrics.get("split"), "labels": metrics.get("labels") or {},
            "adjacent": adjacent, "adjacent_method": (metrics.get("adjacent") or {}).get("method"),
            "alpha": (metrics.get("adjacent") or {}).get("alpha")}


def _vs_next(t: dict | None) -> dict:
    """The adjacent test of an RM against the one ranked next: difference, p (Holm), and its verdict."""
    if not t:
        return _cell(None, fmt.DASH)
    said = "significant" if t["significant"] else "not significant"
    return _cell(t["p_holm"], f"{fmt.signed(t['difference'], 1, percent=True)} vs {t['next']}, "
                              f"p {fmt.p_value(t['p_holm'])} ({said})", significant=bool(t["significant"]))


def headline(board: dict, rms: dict) -> dict:
    """Per benchmark strategy: the top RM(s) by micro accuracy with CI ("best" only where its paired test against
    the runner-up holds: `holds`, else `runner_up` says why), an in-distribution RM (trained on pairs
    built like the benchmark's) labelled so; the oracle's best as the upper bound; chance (a coin flip picks
    the chosen answer half the time) and the random RM as measured."""
    best, oracle = [], []
    in_dist = {rm: v.get("in_distribution") for rm, v in (board.get("labels") or {}).items()}
    by_strategy = defaultdict(list)
    for r in board["rows"]:
        by_strategy[r["strategy"]].append(r)
    for s in sorted(by_strategy, key=strategy_order):
        scored = [r for r in by_strategy[s] if isinstance(r["cells"][2]["v"], (int, float))
                  and (rms.get(r["rm"]) or {}).get("kind") != "mixture"]   # a positive control is no contestant
        if not scored:
            continue
        top = max(r["cells"][2]["v"] for r in scored)
        winners = [r for r in scored if r["cells"][2]["v"] == top]
        test = (board.get("adjacent") or {}).get((winners[0]["rm"], s))
        item = {"strategy": strategy_label(s, winners[0]["evaluation_only"]), "rms": [r["rm"] for r in winners],
                "labelled": [r["rm"] + (" (in-distribution)" if in_dist.get(r["rm"]) else "") for r in winners],
                "accuracy": winners[0]["cells"][2]["text"], "ci": winners[0]["cells"][2]["ci"],
                "others": len(scored) - len(winners), "holds": len(winners) == 1 and bool(test and test["significant"]),
                "runner_up": _runner_up(test, winners)}
        (oracle if winners[0]["evaluation_only"] else best).append(item)
    randoms = [r for r in board["rows"] if (rms.get(r["rm"]) or {}).get("kind") == "random"]
    return {"best": best, "oracle": oracle, "chance": fmt.pct(0.5),
            "random": [{"rm": r["rm"], "strategy": r["cells"][1]["text"], "accuracy": r["cells"][2]["text"],
                        "ci": r["cells"][2]["ci"]} for r in randoms],
            "rms": len({r["rm"] for r in board["rows"]}), "tie_policy": board["tie_policy"], "ci": board["ci"],
            "alpha": board.get("alpha") if board.get("alpha") is not None else fmt.DASH}


def _runner_up(test: dict | None, winners: list[dict]) -> str:
    """Why the top RM is not called best: a tie, or its paired test against the runner-up not holding."""
    if len(winners) > 1:
        return "tied"
    if not test:
        return "no runner-up to test against"
    return (f"{'above' if test['significant'] else 'not significantly above'} {test['next']}: "
            f"p (Holm) {fmt.p_value(test['p_holm'])}, paired on {test['pairs']} pairs")


def heat_colour(acc) -> tuple[str, str]:
    """(background, text colour): red below chance, white at chance, blue above."""
    if acc is None:
        return "#e5e5e5", "#333"
    t = max(-1.0, min(1.0, (acc - 0.5) * 2))
    base = (33, 102, 172) if t >= 0 else (178, 24, 43)
    rgb = [round(255 + (c - 255) * abs(t)) for c in base]
    return "#{:02x}{:02x}{:02x}".format(*rgb), "#fff" if abs(t) > 0.55 else "#111"


def heatmaps(rows: list[dict], first: str | None) -> list[dict]:
    """Per strategy, a domain × RM grid of accuracies (micro and macro as the last rows)."""
    out = []
    strategies = sorted({r["strategy"] for r in rows}, key=lambda s: (s != first, strategy_order(s)))
    for s in strategies:
        mine = [r for r in rows if r["strategy"] == s]
        rms = sorted({r["rm"] for r in mine})
        domains = sorted({r["domain"] for r in mine} - {MICRO, MACRO}) + [d for d in (MICRO, MACRO)
                                                                          if any(r["domain"] == d for r in mine)]
        cell = {(r["domain"], r["rm"]): r for r in mine}
        grid = []
        for d in domains:
            line = []
            for rm in rms:
                r = cell.get((d, rm))
                acc = r["accuracy"] if r else None
                bg, fg = heat_colour(acc)
                line.append({"text": fmt.pct(acc, 0) if acc is not None else fmt.DASH, "v": fmt.sort_key(acc),
                             "ci": fmt.ci_pct(r["ci_low"], r["ci_high"], 0, r["n"], acc) if r else "",
                             "bg": bg, "fg": fg,
                             "title": f"{rm} · {d}: {fmt.pct(acc)} {fmt.ci_pct(r['ci_low'], r['ci_high'])} "
                                      f"(n = {r['n']})" if r else f"{rm} · {d}: not scored"})
            grid.append({"domain": d, "cells": line})
        ev = any(r["evaluation_only"] for r in mine)
        out.append({"strategy": s, "label": strategy_label(s, ev), "rms": rms, "grid": grid})
    return out
