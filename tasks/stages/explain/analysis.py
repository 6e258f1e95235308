"""The error analysis of each RM × strategy, computed from its cells: accuracy by the answers' length relation
and the share of pairs where it picked the longer answer (a length bias), by the question's category, by the
user's profile size, by the chosen answer's position (pairwise judges), and the gain from the profile per pair.
Every figure has its n and a percentile-bootstrap CI (the leaderboard's resampling and level, seeded per
figure), or says "too few pairs" below `explain.min_n`: the value stands, no interval is claimed."""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from tasks.core.determinism import stable_rng
from tasks.models.strategies import STRATEGIES
from tasks.stages.explain.cells import CHOSEN_LONGER, CHOSEN_SHORTER, NONE, RELATIONS, by_pair, pair_outcomes
from tasks.stages.explain.cells import EVERY_WRONG, DISAGREE
from tasks.stages.leaderboard import boot_means

CONTESTANT = "contestant"


def _r4(x): return None if x is None else round(float(x), 4) + 0.0  # noqa: E704


def too_few(n: int, min_n: int) -> str:
    return f"too few pairs (n = {n} < {min_n})"


def _interval(means: np.ndarray, ci: float) -> list:
    lo, hi = np.quantile(means, [(1 - ci) / 2, (1 + ci) / 2])
    return [_r4(lo), _r4(hi)]


def estimate(values, p: dict, rng) -> dict:
    """A share (or a mean of credits) with its n and CI: {"value", "n", "ci", "status"}."""
    v = np.asarray(values, dtype=float)
    if not len(v):
        return {"value": None, "n": 0, "ci": None, "status": "no pairs"}
    out = {"value": _r4(v.mean()), "n": int(len(v)), "ci": None, "status": "ok"}
    if len(v) < p["min_n"]:
        return {**out, "status": too_few(len(v), p["min_n"])}
    return {**out, "ci": _interval(boot_means(v, rng(), int(p["bootstrap"])), float(p["ci"]))}


def difference(a, b, p: dict, rng) -> dict:
    """mean(a) - mean(b) of two independent groups, each resampled on its own: {"value", "n": [na, nb], ...}."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not len(a) or not len(b):
        return {"value": None, "n": [int(len(a)), int(len(b))], "ci": None, "status": "no pairs in one group"}
    out = {"value": _r4(a.mean() - b.mean()), "n": [int(len(a)), int(len(b))], "ci": None, "status": "ok"}
    if min(len(a), len(b)) < p["min_n"]:
        return {**out, "status": too_few(min(len(a), len(b)), p["min_n"])}
    gen, b_ = rng(), int(p["bootstrap"])
    return {**out, "ci": _interval(boot_means(a, gen, b_) - boot_means(b, gen, b_), float(p["ci"]))}


def _groups(counted: list[tuple[dict, float]], key) -> dict[str, list[float]]:
    out: dict = defaultdict(list)
    for c, credit in counted:
        g = key(c)
        if g is not None:
            out[g].append(credit)
    return dict(out)


def profile_gain(mine: list[dict], none_rights: dict[str, bool], p: dict, rng) -> dict:
    """Right only with the profile, per pair: on the pairs this RM was scored on under both this strategy and
    `none`, how many it gets right only with the context and how many only without; the net share (right with
    minus right without, per pair: +1, 0 or -1) with its paired CI."""
    both = [(bool(c["right"]), none_rights[c["question_id"]]) for c in mine if c["question_id"] in none_rights]
    net = estimate([int(w) - int(wo) for w, wo in both], p, rng)
    return {"vs": NONE, "n": len(both), "right_only_with": sum(w and not wo for w, wo in both),
            "right_only_without": sum(wo and not w for w, wo in both), "net": net}


def figures(mine: list[dict], facts: dict[str, dict], none_rights: dict[str, bool] | None, p: dict, name) -> dict:
    """The analysis of one RM × strategy from its cells; `facts`: question id -> the pair's row (relation,
    category, profile bin); `none_rights`: the RM's right/wrong under `none`, for the gain (None: none itself)."""
    rng = lambda *what: lambda: stable_rng(*name, *what)  # noqa: E731 - one seeded stream per figure
    counted = [(c, c["credit"]) for c in mine if c["credit"] is not None]
    fact = lambda key: lambda c: facts[c["question_id"]][key]  # noqa: E731
    by_length = _groups(counted, fact("length_relation"))
    out = {"pairs": len(mine), "accuracy": estimate([x for _, x in counted], p, rng("accuracy")),
           "picked_longer": estimate([c["picked_longer"] for c in mine if c["picked_longer"] is not None], p,
                                     rng("picked_longer")),
           "accuracy_by_length": {g: estimate(by_length[g], p, rng("length", g)) for g in RELATIONS if g in by_length},
           "length_gap": difference(by_length.get(CHOSEN_LONGER, []), by_length.get(CHOSEN_SHORTER, []), p,
                                    rng("length_gap"))}
    for title, key in (("accuracy_by_category", "category"), ("accuracy_by_profile_length", "profile_bin")):
        out[title] = {g: estimate(v, p, rng(key, g)) for g, v in sorted(_groups(counted, fact(key)).items())}
    positions = _groups(counted, lambda c: c["chosen_position"] if c["chosen_position"] in ("A", "B") else None)
    if positions:   # pairwise judges shown one seeded order: accuracy with the chosen answer first and second
        out["accuracy_by_position"] = {g: estimate(v, p, rng("position", g)) for g, v in sorted(positions.items())}
    if none_rights is not None:
        out["profile_gain"] = profile_gain(mine, none_rights, p, rng("profile_gain"))
    return out


def strategy_order(s: str):
    return (STRATEGIES.index(s) if s in STRATEGIES else len(STRATEGIES.names()), s)


def outcome_counts(cells: list[dict], facts: dict[str, dict], strategies: list[str]) -> dict:
    """Per strategy, over the contestants (null baselines and positive controls are reference points): the
    pairs every contestant got wrong and the pairs they disagree on."""
    contestants = sorted({c["rm"] for c in cells if c["role"] == CONTESTANT})
    rights = by_pair(cells)
    out = {}
    for s in strategies:
        seen = [pair_outcomes(r, contestants, [s], facts[q]["length_relation"]) for q, r in rights.items()
                if any((rm, s) in r for rm in contestants)]
        out[s] = {"contestants": len(contestants), "pairs": len(seen),
                  "every_contestant_wrong": sum(EVERY_WRONG in o for o in seen),
                  "contestants_disagree": sum(DISAGREE in o for o in seen)}
    return out


def analyse(cells: list[dict], pair_rows: list[dict], p: dict, seed: int, kinds: dict | None = None) -> dict:
    """metrics/explain.json: the pairs' facts, the outcome counts, and per RM (its role and kind, `kinds`: rm ->
    its scoring.rms kind) × strategy its figures."""
    facts = {r["question_id"]: r for r in pair_rows}
    groups: dict = defaultdict(list)
    for c in cells:
        groups[(c["rm"], c["strategy"])].append(c)
    strategies = sorted({s for _, s in groups}, key=strategy_order)
    roles = {c["rm"]: c["role"] for c in cells}
    rms: dict = {}
    for rm in sorted(roles):
        none_rights = {c["question_id"]: bool(c["right"]) for c in groups.get((rm, NONE), [])} or None
        entry = rms.setdefault(rm, {"role": roles[rm], "kind": (kinds or {}).get(rm), "strategies": {}})
        for s in strategies:
            if (rm, s) in groups:
                entry["strategies"][s] = figures(groups[(rm, s)], facts, none_rights if s != NONE else None, p,
                                                 (seed, "explain", rm, s))
    bins = sorted({(r["profile_posts"], r["profile_bin"]) for r in pair_rows if r["profile_bin"]})
    return {"tie_policy": p["tie_policy"], "ci": p["ci"], "bootstrap": p["bootstrap"], "min_n": p["min_n"],
            "split": p.get("split"), "benchmark": p.get("benchmark", "personalised"),
            "pairs": {"n": len(pair_rows), "length": dict(Counter(r["length_relation"] for r in pair_rows)),
                      "categories": dict(Counter(r["category"] for r in pair_rows)),
                      "profile_bins": list(dict.fromkeys(label for _, label in bins))},
            "strategies": strategies, "outcomes": outcome_counts(cells, facts, strategies), "rms": rms}
