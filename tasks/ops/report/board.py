"""The sortable leaderboard and the per-domain heatmaps, from the leaderboard stage's Parquet and metrics (the
headline cards drawn from them: headline.py). Every accuracy carries its CI; columns a stage adds show up as they
are. At a hundred RMs and more the table is filtered and paged in the page (templates/board.js) and the heatmaps
keep the MAX_RMS_SHOWN best RMs, the null baselines as one range."""
from __future__ import annotations

from tasks.ops.report import fmt
from tasks.models.strategies import EVALUATION_ONLY, STRATEGIES

MICRO, MACRO = "micro", "macro"
# leaderboard.parquet columns the fixed part of the table already shows; any other column is a flag a
# stage added (e.g. an RM sharing its LLM with the pair filter) and gets a column of its own
KNOWN_COLUMNS = {"rm", "strategy", "evaluation_only", "domain", "n", "accuracy", "ci_low", "ci_high", "ties", "invalid",
                 "truncated", "tie_policy", "score_dtype", "within_resolution"}
KNOWN_KEYS = {"evaluation_only", "invalid", "macro", "micro", "pairs", "per_domain", "position_bias", "ties", "truncated",
              "score_dtype", "within_resolution"}
ORACLE = "(upper bound)"
PAGE_SIZE = 25   # leaderboard rows shown at a time (a "show all" button shows the rest)
MAX_RMS_SHOWN = 24   # per-RM views (heatmaps, Best-of-N) above this: null baselines as one range, the rest the best


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


def leaderboard(rows: list[dict], columns: list[str], metrics: dict, controls=frozenset(), nulls=frozenset()) -> dict:
    """One row per RM × strategy: micro and macro accuracy with CIs, counts, position bias, the tests against the
    next RM and against chance, extras; the positive-control RMs (`controls`: they read the gold rubric) and the
    null baselines (`nulls`: length-only and random scorers) labelled so."""
    micro = {(r["rm"], r["strategy"]): r for r in rows if r["domain"] == MICRO}
    entries = {(rm, s): e for rm, per in (metrics.get("rms") or {}).items() for s, e in per.items()}
    keys = sorted(set(micro) | set(entries))
    extra_cols = [c for c in columns if c not in KNOWN_COLUMNS]
    extra_keys = sorted({k for e in entries.values() for k, v in e.items() if k not in KNOWN_KEYS and _scalar(v)}
                        - set(extra_cols))
    head = [_col("rm", "RM", False), _col("strategy", "strategy", False),
            _col("micro", "micro accuracy [CI]", True, "all counted pairs; bootstrap CI"),
            _col("resolution", "within dtype resolution", True, "decided pairs whose margin is within 8 ulps of the "
                 "scores in the dtype they were computed in: precision alone could flip them (docs/statistics.md)"),
            _col("macro", "macro accuracy [CI]", True, "mean of the domains"), _col("pairs", "pairs", True),
            _col("ties", "ties", True), _col("invalid", "invalid", True), _col("truncated", "truncated", True),
            _col("position_bias", "position bias", True,
                 "share of pairs where a pairwise judge changed its verdict with the A/B order"),
            _col("vs_next", "vs next RM [p (Holm)]", True, "paired test against the RM ranked next (same pairs)"),
            _col("vs_chance", "vs chance [p (Holm)]", True,
                 "one-sided binomial test against a coin flip, Holm over the strategy's contestants")]
    head += [_col(c, c.replace("_", " "), None, "added by the leaderboard stage", extra=True)
             for c in extra_cols + extra_keys]
    adjacent = {(t["rm"], st): t for st, tests in ((metrics.get("adjacent") or {}).get("tests") or {}).items()
                for t in tests}
    chance = metrics.get("chance") or {}
    vs_chance = {(rm, st): t for st, per in (chance.get("tests") or {}).items() for rm, t in (per.get("rms") or {}).items()}
    implicit = {rm: v.get("implicit_reward") for rm, v in (metrics.get("labels") or {}).items() if isinstance(v, dict)}
    body = []
    for rm, s in keys:
        e, m = entries.get((rm, s), {}), micro.get((rm, s), {})
        ev = bool(e.get("evaluation_only", m.get("evaluation_only")))
        role = " (positive control)" if rm in controls else " (null baseline)" if rm in nulls else ""
        kind = " (implicit reward)" if implicit.get(rm) else ""   # a DPO policy: its column names the reference
        cells = [_cell(rm, rm + role + kind), _cell(s, strategy_label(s, ev)), _acc_cell(e.get(MICRO)), _resolution(e, m),
                 _acc_cell(e.get(MACRO)),
                 _cell(e.get("pairs")), _cell(e.get("ties", m.get("ties"))), _cell(e.get("invalid", m.get("invalid"))),
                 _cell(e.get("truncated", m.get("truncated"))),
                 _cell(e.get("position_bias"), fmt.pct(e.get("position_bias")) if e.get("position_bias") is not None
                       else "n/a"), _vs_next(adjacent.get((rm, s))), _vs_chance(vs_chance.get((rm, s)), role)]
        cells += [_cell(m.get(c)) for c in extra_cols] + [_cell(e.get(k)) for k in extra_keys]
        acc = (e.get(MICRO) or {}).get("accuracy")   # default order: per strategy, best first, unscored last
        body.append({"rm": rm, "strategy": s, "evaluation_only": ev, "cells": cells, "role": role.strip(" ()"),
                     "order": (strategy_order(s), -acc if acc is not None else 1, rm)})
    body.sort(key=lambda r: r["order"])
    strategies = {r["strategy"]: r["cells"][1]["text"] for r in body}
    return {"head": head, "rows": body, "page_size": PAGE_SIZE, "nulls": len({r["rm"] for r in body if r["rm"] in nulls}),
            "strategies": [{"value": s, "label": strategies[s]} for s in sorted(strategies, key=strategy_order)],
            "tie_policy": metrics.get("tie_policy"), "ci": metrics.get("ci"),
            "bootstrap": metrics.get("bootstrap"), "split": metrics.get("split"), "labels": metrics.get("labels") or {},
            "adjacent": adjacent, "adjacent_method": (metrics.get("adjacent") or {}).get("method"),
            "alpha": (metrics.get("adjacent") or {}).get("alpha"), "chance": vs_chance,
            "chance_family": {st: {k: v for k, v in per.items() if k != "rms"} for st, per in (chance.get("tests") or {}).items()},
            "chance_method": chance.get("method"), "chance_ties": chance.get("ties")}


def _resolution(e: dict, m: dict) -> dict:
    """'decided within bfloat16 resolution: 3' (n/a: no model ran here)."""
    dtype, n = e.get("score_dtype", m.get("score_dtype")), e.get("within_resolution", m.get("within_resolution"))
    return _cell(n, f"decided within {dtype} resolution: {n}" if dtype and n is not None else "n/a")


def _vs_next(t: dict | None) -> dict:
    """The adjacent test of an RM against the one ranked next: difference, p (Holm), and its verdict."""
    if not t:
        return _cell(None, fmt.DASH)
    said = "significant" if t["significant"] else "not significant"
    return _cell(t["p_holm"], f"{fmt.signed(t['difference'], 1, percent=True)} vs {t['next']}, "
                              f"p {fmt.p_value(t['p_holm'])} ({said})", significant=bool(t["significant"]))


def _vs_chance(t: dict | None, role: str) -> dict:
    """The test of an RM's counted pairs against a coin flip: right of tested, p (Holm), and its verdict."""
    if not t:
        return _cell(None, f"not tested: {role.strip(' ()')}" if role else fmt.DASH)
    said = "above chance" if t["above_chance"] else "not above chance"
    return _cell(t["p_holm"], f"{t['right']} of {t['right'] + t['wrong']} right, p {fmt.p_value(t['p_holm'])} ({said})",
                 above_chance=bool(t["above_chance"]))


def heat_colour(acc) -> tuple[str, str]:
    """(background, text colour): red below chance, white at chance, blue above."""
    if acc is None:
        return "#e5e5e5", "#333"
    t = max(-1.0, min(1.0, (acc - 0.5) * 2))
    base = (33, 102, 172) if t >= 0 else (178, 24, 43)
    rgb = [round(255 + (c - 255) * abs(t)) for c in base]
    return "#{:02x}{:02x}{:02x}".format(*rgb), "#fff" if abs(t) > 0.55 else "#111"


def _shown(mine: list[dict], nulls) -> tuple[list[str], list[str]]:
    """(RMs drawn one by one, null baselines drawn as one range): every RM up to MAX_RMS_SHOWN; above it the
    null baselines become one column and the others are cut to the MAX_RMS_SHOWN best by micro accuracy."""
    rms = sorted({r["rm"] for r in mine})
    if len(rms) <= MAX_RMS_SHOWN:
        return rms, []
    micro = {r["rm"]: r["accuracy"] for r in mine if r["domain"] == MICRO}
    others = sorted((rm for rm in rms if rm not in nulls), key=lambda rm: (micro.get(rm) is None, -(micro.get(rm) or 0), rm))
    return sorted(others[:MAX_RMS_SHOWN]), [rm for rm in rms if rm in nulls]


def _heat_cell(r: dict | None, rm: str, d: str) -> dict:
    acc = r["accuracy"] if r else None
    bg, fg = heat_colour(acc)
    return {"text": fmt.pct(acc, 0) if acc is not None else fmt.DASH, "v": fmt.sort_key(acc),
            "ci": fmt.ci_pct(r["ci_low"], r["ci_high"], 0, r["n"], acc) if r else "", "bg": bg, "fg": fg,
            "title": f"{rm} · {d}: {fmt.pct(acc)} {fmt.ci_pct(r['ci_low'], r['ci_high'])} (n = {r['n']})" if r
            else f"{rm} · {d}: not scored"}


def _range_cell(rows: list[dict], d: str) -> dict:
    """The null baselines of one domain as one cell: their range, the RMs at either end on hover."""
    known = sorted((r["accuracy"], r["rm"]) for r in rows if r["accuracy"] is not None)
    if not known:
        return {"text": fmt.DASH, "v": "", "ci": "", "bg": "#e5e5e5", "fg": "#333", "title": f"{d}: not scored"}
    (lo, lo_rm), (hi, hi_rm) = known[0], min(x for x in known if x[0] == known[-1][0])
    return {"text": f"{fmt.pct(lo, 0)}–{fmt.pct(hi, 0)}", "v": hi, "ci": f"{len(known)} RMs", "bg": "#eeeeee",
            "fg": "#111", "title": f"null baselines · {d}: lowest {lo_rm} {fmt.pct(lo)}, highest {hi_rm} {fmt.pct(hi)}"}


def heatmaps(rows: list[dict], first: str | None, nulls=frozenset()) -> list[dict]:
    """Per strategy, a domain × RM grid of accuracies (micro and macro as the last rows); above MAX_RMS_SHOWN RMs
    the null baselines (`nulls`) as one range column and the rest cut to the best (`left_out` says how many)."""
    out = []
    strategies = sorted({r["strategy"] for r in rows}, key=lambda s: (s != first, strategy_order(s)))
    for s in strategies:
        mine = [r for r in rows if r["strategy"] == s]
        rms, summarised = _shown(mine, nulls)
        domains = sorted({r["domain"] for r in mine} - {MICRO, MACRO}) + [d for d in (MICRO, MACRO)
                                                                          if any(r["domain"] == d for r in mine)]
        cell = {(r["domain"], r["rm"]): r for r in mine}
        grid = [{"domain": d, "cells": [_heat_cell(cell.get((d, rm)), rm, d) for rm in rms]
                 + ([_range_cell([cell[(d, rm)] for rm in summarised if (d, rm) in cell], d)] if summarised else [])}
                for d in domains]
        ev = any(r["evaluation_only"] for r in mine)
        out.append({"strategy": s, "label": strategy_label(s, ev), "grid": grid, "nulls": len(summarised),
                    "rms": rms + ([f"null baselines ({len(summarised)})"] if summarised else []),
                    "left_out": len({r["rm"] for r in mine}) - len(rms) - len(summarised)})
    return out
