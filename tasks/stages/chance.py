"""The leaderboard's test against chance: is an RM above a coin flip, once the top of a strategy's m
contestants has been picked? (The best of a hundred RMs on six pairs is the winner's curse, not a result.)

Per RM × strategy, an exact one-sided binomial test (a sign test) of its counted pairs against 0.5:
successes are the pairs it got right (credit 1), failures the pairs it got wrong (credit 0: an invalid score
always; a tie under `strict`). A tie under `half` earns 0.5, exactly a coin's expected credit, and has no sign,
so it leaves the test as a zero difference leaves a sign test; under `drop` it was never counted.

Contestants: every RM but the null baselines and the positive controls (tasks/core/rm_labels.py `role`). The
headline names the top contestant, the maximum of m, so the test is corrected for that pick: Holm over the m
contestants' tests of the strategy. Holm bounds the chance of any false "above chance" among all m, so the
verdict holds whichever RM the ranking put on top. An RM is above chance where p (Holm) < alpha = 1 -
leaderboard.ci. `min_pairs`: the fewest pairs on which even a perfect score can pass, all m tests counted
(n of n right has p = 0.5^n, and Holm's first step multiplies the smallest p by m)."""
from __future__ import annotations

import math
from collections import defaultdict

from tasks.core.rm_labels import CONTESTANT, role

METHOD = ("exact one-sided binomial (sign) test of each contestant's right vs wrong pairs against 0.5; "
          "Holm over the strategy's contestants (every RM but the null baselines and positive controls)")
TIES = {"strict": "a tie counts as wrong", "half": "a tie (credit 0.5) leaves the test, as in a sign test",
        "drop": "a tie was never counted"}


def binomial_p(right: int, wrong: int) -> float:
    """P(at least `right` of right + wrong coin flips come up right): 1.0 with no pair to test."""
    from scipy.stats import binomtest

    n = right + wrong
    return float(binomtest(right, n, 0.5, alternative="greater").pvalue) if n else 1.0


def min_pairs(m: int, alpha: float) -> int:
    """The fewest pairs n with 0.5^n * m < alpha: below it no contestant of m can be shown above chance."""
    n = max(0, math.ceil(math.log2(max(m, 1) / alpha)))
    return n + 1 if 0.5 ** n * max(m, 1) >= alpha else n


def chance_tests(scores: list[dict], p: dict, credits, rms: dict | None) -> dict:
    """{"alpha", "method", "ties", "tests": {strategy: {"contestants": m, "min_pairs", "rms": {rm: {right, wrong,
    left_out, p, p_holm, above_chance}}}}}; `credits(rows, policy)`: the leaderboard's own credit per pair;
    `rms`: scoring.rms (an RM it does not list counts as a contestant)."""
    from tasks.stages.human_eval.analysis import holm

    by_group = defaultdict(list)
    for r in scores:
        if role((rms or {}).get(r["rm"])) == CONTESTANT:
            by_group[(r["strategy"], r["rm"])].append(r)
    alpha = round(1 - float(p["ci"]), 10)
    out: dict = {}
    for (strategy, rm), rows in sorted(by_group.items()):
        values = [float(v) for v in credits(rows, p["tie_policy"])]
        right, wrong = values.count(1.0), values.count(0.0)
        out.setdefault(strategy, {})[rm] = {"right": right, "wrong": wrong, "left_out": len(values) - right - wrong,
                                            "p": round(binomial_p(right, wrong), 6)}
    tests = {}
    for strategy, per in out.items():
        adjusted = holm({rm: t["p"] for rm, t in per.items()})
        for rm, t in per.items():
            t["p_holm"] = round(adjusted[rm], 6)
            t["above_chance"] = t["p_holm"] < alpha
        tests[strategy] = {"contestants": len(per), "min_pairs": min_pairs(len(per), alpha), "rms": per}
    return {"alpha": alpha, "method": METHOD, "ties": TIES[p["tie_policy"]], "tests": tests}
