"""The run page's headline cards, from the leaderboard board (tasks/ops/report/board.py): per benchmark strategy
the top contestant, the oracle's upper bound, and chance beside what the null baselines measured.

Only contestants compete (tasks/core/rm_labels.py `role`): a null baseline (length-only, random) or a positive
control (the gold-rubric ladder) is never the top RM. The top is called "best" only where two tests hold, each
corrected for how many were looked at: against chance (tasks/stages/chance.py: Holm over the strategy's
contestants, for the top is the maximum of them) and against the runner-up (tasks/stages/adjacent.py: Holm over
the strategy's adjacent tests). Otherwise it is the "top RM", with the reason for each test. The null
baselines are summarised (count, kinds, range per strategy), not listed: at a hundred of them the list was the
page, and its maximum is the winner's curse, not a result."""
from __future__ import annotations

from collections import Counter, defaultdict

from tasks.core.rm_labels import CONTESTANT, NULL_BASELINE, role
from tasks.ops.report import fmt
from tasks.ops.report.board import strategy_label, strategy_order

NAMES_SHOWN = 5   # a tie of many at the top: these names, then how many more


def headline(board: dict, rms: dict) -> dict:
    """{"best": [card], "oracle": [card], "chance", "nulls", "rms", "tie_policy", "ci", "alpha"}; a card: the
    strategy, the top contestant(s) with accuracy and CI, `holds` (both tests), `vs_chance` and `runner_up`
    (each test's verdict in words), in-distribution RMs (trained on pairs built like the benchmark's) labelled."""
    best, oracle = [], []
    in_dist = {rm: v.get("in_distribution") for rm, v in (board.get("labels") or {}).items()}
    by_strategy = defaultdict(list)
    for r in board["rows"]:
        by_strategy[r["strategy"]].append(r)
    for s in sorted(by_strategy, key=strategy_order):
        scored = [r for r in by_strategy[s] if isinstance(r["cells"][2]["v"], (int, float))
                  and role(rms.get(r["rm"])) == CONTESTANT]
        if not scored:
            continue
        top = max(r["cells"][2]["v"] for r in scored)
        winners = [r for r in scored if r["cells"][2]["v"] == top]
        test = (board.get("adjacent") or {}).get((winners[0]["rm"], s))
        chance = (board.get("chance") or {}).get((winners[0]["rm"], s))
        family = (board.get("chance_family") or {}).get(s) or {}
        labelled = [r["rm"] + (" (in-distribution)" if in_dist.get(r["rm"]) else "") for r in winners]
        if len(labelled) > NAMES_SHOWN:
            labelled = labelled[:NAMES_SHOWN] + [f"and {len(labelled) - NAMES_SHOWN} more"]
        above_next = len(winners) == 1 and bool(test and test["significant"])
        item = {"strategy": strategy_label(s, winners[0]["evaluation_only"]), "rms": [r["rm"] for r in winners],
                "labelled": labelled, "accuracy": winners[0]["cells"][2]["text"], "ci": winners[0]["cells"][2]["ci"],
                "others": len(scored) - len(winners), "contestants": len(scored),
                "above_chance": bool(chance and chance["above_chance"]), "above_runner_up": above_next,
                "vs_chance": vs_chance(chance, family), "runner_up": runner_up(test, winners)}
        item["holds"] = item["above_chance"] and above_next
        (oracle if winners[0]["evaluation_only"] else best).append(item)
    return {"best": best, "oracle": oracle, "chance": fmt.pct(0.5), "nulls": null_baselines(board, rms),
            "rms": len({r["rm"] for r in board["rows"]}), "tie_policy": board["tie_policy"], "ci": board["ci"],
            "alpha": board.get("alpha") if board.get("alpha") is not None else fmt.DASH,
            "chance_method": board.get("chance_method"), "chance_ties": board.get("chance_ties")}


def vs_chance(t: dict | None, family: dict) -> str:
    """The top RM's test against chance in words: above or not, or why it could not be (too few pairs)."""
    if not t:
        return "no test against chance in these metrics"
    n, m = t["right"] + t["wrong"], family.get("contestants", 1)
    left = f", {t['left_out']} ties left out" if t.get("left_out") else ""
    said = (f"{t['right']} of {n} right{left}, p (Holm over {m} contestant{'s' if m != 1 else ''}) "
            f"{fmt.p_value(t['p_holm'])}")
    if t["above_chance"]:
        return f"above chance: {said}"
    need = family.get("min_pairs")
    if need is not None and n < need:
        return (f"too few pairs to beat chance: {said}; even all {n} right could not, picked from {m}: "
                f"that takes {need} tested pairs")
    return f"not above chance: {said}"


def runner_up(test: dict | None, winners: list[dict]) -> str:
    """The top RM's paired test against the runner-up in words: a tie, above, or not significantly above."""
    if len(winners) > 1:
        return "tied"
    if not test:
        return "no runner-up to test against"
    return (f"{'above' if test['significant'] else 'not significantly above'} {test['next']}: "
            f"p (Holm) {fmt.p_value(test['p_holm'])}, paired on {test['pairs']} pairs")


def null_baselines(board: dict, rms: dict) -> dict | None:
    """The null baselines as one summary: how many, of which kinds, and per strategy the range they measured
    (min–max micro accuracy, the RMs at either end as a tooltip)."""
    rows = [r for r in board["rows"] if role(rms.get(r["rm"])) == NULL_BASELINE]
    if not rows:
        return None
    names = sorted({r["rm"] for r in rows})
    kinds = Counter(rms[rm]["kind"] for rm in names)
    per = defaultdict(list)
    for r in rows:
        if isinstance(r["cells"][2]["v"], (int, float)):
            per[r["strategy"]].append((r["cells"][2]["v"], r["rm"], r))
    ranges = []
    for s in sorted(per, key=strategy_order):
        ranked = sorted(per[s], key=lambda x: (x[0], x[1]))
        lo, hi = ranked[0], min((x for x in ranked if x[0] == ranked[-1][0]), key=lambda x: x[1])
        ranges.append({"strategy": strategy_label(s, lo[2]["evaluation_only"]), "value": s, "rms": len(ranked),
                       "text": f"{fmt.pct(lo[0])[:-1]}–{fmt.pct(hi[0])}" if len(ranked) > 1 else fmt.pct(lo[0]),
                       "title": f"lowest {_named(lo)}, highest {_named(hi)}" if len(ranked) > 1 else _named(lo)})
    return {"count": len(names), "kinds": ", ".join(f"{k} × {n}" if n > 1 else k for k, n in sorted(kinds.items())),
            "names": names if len(names) <= NAMES_SHOWN else [], "ranges": ranges}


def _named(entry: tuple) -> str:
    return f"{entry[1]} {entry[2]['cells'][2]['text']}"
