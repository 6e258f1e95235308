"""One cell per (pair, RM, strategy) of the scored pairs: the RM's margin, whether it was right, whether it
picked the longer answer; and the pair predicates the explorer filters by. Pure functions: the stage, the
page (templates/pairs.js mirrors `pair_outcomes`) and `prbench explain` share these definitions."""
from __future__ import annotations

from collections import defaultdict

CHOSEN_LONGER, CHOSEN_SHORTER, EQUAL = "chosen longer", "chosen shorter", "equal length"
RELATIONS = (CHOSEN_LONGER, CHOSEN_SHORTER, EQUAL)
NONE = "none"   # the strategy that shows the RM no profile: what "with the profile" is measured against
# the explorer's outcome filters, in its order
EVERY_WRONG, DISAGREE, ONLY_WITH, ONLY_WITHOUT, LONGER_REJECTED = (
    "every RM wrong", "RMs disagree", "right only with the profile", "right only without it",
    "the longer answer was rejected")
OUTCOMES = (EVERY_WRONG, DISAGREE, ONLY_WITH, ONLY_WITHOUT, LONGER_REJECTED)


def words(text: str | None) -> int:
    """An answer's length in words: the length baselines' own measure (tasks/models/rms/baselines.py)."""
    return len((text or "").split())


def length_relation(chosen: str | None, rejected: str | None) -> str:
    cw, rw = words(chosen), words(rejected)
    return CHOSEN_LONGER if cw > rw else CHOSEN_SHORTER if cw < rw else EQUAL


def _invalid(r: dict) -> bool:
    return bool(r["invalid"]) or r["score_chosen"] is None or r["score_rejected"] is None


def decided(r: dict) -> bool:
    """The RM preferred one answer: a usable score on both and no tie."""
    return not _invalid(r) and not r["tie"]


def right(r: dict) -> bool:
    """It picked the chosen answer (a tie or an invalid score is never right)."""
    return decided(r) and bool(r["correct"])


def credit(r: dict, policy: str) -> float | None:
    """The leaderboard's credit of one scored pair (tasks/stages/leaderboard.py `credits`): 1 right, 0 wrong,
    a tie 0 / 0.5 / not counted (None) under strict / half / drop, an invalid score always 0."""
    if _invalid(r):
        return 0.0
    if r["tie"]:
        return None if policy == "drop" else 0.5 if policy == "half" else 0.0
    return 1.0 if r["correct"] else 0.0


def picked_longer(r: dict, relation: str) -> bool | None:
    """Whether the RM preferred the longer answer; None where the answers are as long or it preferred neither."""
    if relation == EQUAL or not decided(r):
        return None
    return bool(r["correct"]) == (relation == CHOSEN_LONGER)


def margin(r: dict) -> float | None:
    """score(chosen) - score(rejected), as the scores' 6 decimals (positive: the RM preferred the chosen)."""
    if r["score_chosen"] is None or r["score_rejected"] is None:
        return None
    return round(float(r["score_chosen"]) - float(r["score_rejected"]), 6) + 0.0


def cell(r: dict, relation: str, policy: str, role: str, evaluation_only: bool) -> dict:
    """A row of data/explain/cells.parquet from a row of data/scores/<rm>.parquet."""
    return {"question_id": r["question_id"], "domain": r["domain"], "rm": r["rm"], "role": role,
            "strategy": r["strategy"], "evaluation_only": evaluation_only, "margin": margin(r), "right": right(r),
            "credit": credit(r, policy), "tie": not _invalid(r) and bool(r["tie"]), "invalid": _invalid(r),
            "truncated": bool(r["truncated"]), "picked_longer": picked_longer(r, relation),
            "chosen_position": r.get("chosen_position"), "planner_failed": bool(r.get("planner_failed"))}


def cells(scores: list[dict], relations: dict[str, str], policy: str, roles: dict[str, str],
          evaluation_only=frozenset()) -> list[dict]:
    """Every scored pair's cell, ordered by pair, RM, strategy. `relations`: question id -> length relation of
    the benchmark's pair; a score row of a pair not in it is an error (the scores are stale)."""
    out = []
    for r in scores:
        if r["question_id"] not in relations:
            raise ValueError(f"scores of {r['rm']} name pair '{r['question_id']}', which the benchmark's pairs lack: "
                             "the scores are older than the pairs (run the score stage again)")
        out.append(cell(r, relations[r["question_id"]], policy, roles.get(r["rm"], ""), r["strategy"] in evaluation_only))
    return sorted(out, key=lambda c: (c["question_id"], c["rm"], c["strategy"]))


def by_pair(rows: list[dict]) -> dict[str, dict[tuple[str, str], bool]]:
    """question id -> {(rm, strategy): right}."""
    out: dict = defaultdict(dict)
    for c in rows:
        out[c["question_id"]][(c["rm"], c["strategy"])] = bool(c["right"])
    return dict(out)


def pair_outcomes(rights: dict[tuple[str, str], bool], rms, strategies, relation: str) -> set[str]:
    """The outcome filters a pair passes for the RMs and strategies in scope. `rights`: (rm, strategy) ->
    right, for the cells the pair was scored in. Every RM wrong: each scored cell in scope is wrong (at least
    one scored). RMs disagree: within one strategy, one RM right and another wrong. Right only with the
    profile: an RM right under a strategy in scope other than `none` and wrong under `none`; only without
    it: the reverse. The longer answer was rejected: a fact of the pair, whatever the scope."""
    rms, strategies = set(rms), list(strategies)
    scope = {k: v for k, v in rights.items() if k[0] in rms and k[1] in strategies}
    out = {LONGER_REJECTED} if relation == CHOSEN_SHORTER else set()
    if scope and not any(scope.values()):
        out.add(EVERY_WRONG)
    if any(len({v for (_, s), v in scope.items() if s == st}) == 2 for st in strategies):
        out.add(DISAGREE)
    for rm in rms:
        if (rm, NONE) not in rights:
            continue
        without = rights[(rm, NONE)]
        with_profile = [rights[(rm, s)] for s in strategies if s != NONE and (rm, s) in rights]
        if not without and any(with_profile):
            out.add(ONLY_WITH)
        if without and not all(with_profile):
            out.add(ONLY_WITHOUT)
    return out
