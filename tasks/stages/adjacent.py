"""Adjacent-RM paired tests for the leaderboard: per strategy, the RMs in board order (micro accuracy, best
first; equal ones by name) and, for each RM and the one ranked next, an exact two-sided sign test on the
pairs both counted (McNemar's exact test when credits are 0/1: only the pairs one RM got right and the other
wrong count), Holm-corrected over that strategy's adjacent tests. A rank is "above" the next only where
p (Holm) < alpha = 1 - leaderboard.ci; a "best" RM needs its test against the runner-up to hold."""
from __future__ import annotations

from collections import defaultdict

METHOD = ("exact two-sided sign test (McNemar's exact test for 0/1 credits) on the pairs both RMs counted, "
          "each RM against the one ranked next; Holm over each strategy's adjacent tests")


def pair_credits(rows: list[dict], policy: str, credits) -> dict[tuple, float]:
    """{pair key: credit} as the leaderboard's `credits` counts it; a pair `drop` leaves out has no key."""
    seen: dict[tuple, int] = defaultdict(int)
    out = {}
    for r in rows:
        key = (r["domain"], r["split"], r["question_id"])
        seen[key] += 1
        c = credits([r], policy)
        if len(c):
            out[(*key, seen[key])] = float(c[0])
    return out


def sign_test(a: dict, b: dict) -> tuple[int, int, int, float]:
    """(pairs both counted, a better, b better, exact two-sided p) over the shared pair keys."""
    from scipy.stats import binomtest

    shared = sorted(set(a) & set(b))
    up = sum(a[k] > b[k] for k in shared)
    down = sum(a[k] < b[k] for k in shared)
    p = binomtest(up, up + down, 0.5).pvalue if up + down else 1.0
    return len(shared), up, down, min(1.0, float(p))


def adjacent_tests(scores: list[dict], rows: list[dict], p: dict, credits) -> dict:
    """{strategy: [{rank, rm, next, difference, pairs, discordant, p, p_holm, significant}]} (micro accuracy);
    `credits(rows, policy)`: the leaderboard's own credit per pair."""
    from tasks.stages.human_eval.analysis import holm

    by_group = defaultdict(list)
    for r in scores:
        by_group[(r["rm"], r["strategy"])].append(r)
    micro = [r for r in rows if r["domain"] == "micro" and r["accuracy"] is not None]
    alpha = round(1 - float(p["ci"]), 10)
    out = {}
    for strategy in sorted({r["strategy"] for r in micro}):
        ranked = sorted((r for r in micro if r["strategy"] == strategy), key=lambda r: (-r["accuracy"], r["rm"]))
        tests = []
        for i, (hi, lo) in enumerate(zip(ranked, ranked[1:]), start=1):
            n, up, down, pv = sign_test(pair_credits(by_group[(hi["rm"], strategy)], p["tie_policy"], credits),
                                        pair_credits(by_group[(lo["rm"], strategy)], p["tie_policy"], credits))
            tests.append({"rank": i, "rm": hi["rm"], "next": lo["rm"],
                          "difference": round(hi["accuracy"] - lo["accuracy"], 4), "pairs": n,
                          "discordant": [up, down], "p": round(pv, 6)})
        adjusted = holm({t["rank"]: t["p"] for t in tests})
        for t in tests:
            t["p_holm"] = None if adjusted[t["rank"]] is None else round(adjusted[t["rank"]], 6)
            t["significant"] = t["p_holm"] is not None and t["p_holm"] < alpha
        out[strategy] = tests
    return {"alpha": alpha, "method": METHOD, "tests": out}
