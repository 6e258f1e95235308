"""The pre-registered primary test (`correlation.primary`): one benchmark × strategy × downstream method ×
statistic × alternative, tested once per run at level alpha; every other correlation is exploratory.

Test: a label-flip randomization test. H0: the benchmark's chosen/rejected labels carry no information on
which answer the RMs prefer (the benchmark ranks RMs by noise). Under H0, swapping chosen and rejected of
any subset of pairs leaves the joint distribution of the RMs' credits unchanged; flipping a pair turns
every RM's right into wrong and back (ties and invalid rows keep their credit). The statistic is the
correlation of the RMs' benchmark accuracy with their downstream score; p = the share of flips (the
observed labels counted) whose statistic is at least as extreme. Exact under H0 whatever the RMs are (a
designed ladder of RMs shares its questions and its trend, which an RM-permutation test would take for
signal). Enumerated when 2^pairs <= `permutations`, else that many seeded random flips.

Interval: Fisher z with the Bonett-Wright standard error (Spearman sqrt((1 + r^2/2)/(n - 3)), Kendall
sqrt(0.437/(n - 4)), Pearson 1/sqrt(n - 3)) over the n RMs: the correlation among RMs like these as
measured at this design. tests/test_primary_power.py checks its coverage by simulation. |r| = 1 has no
finite z: the interval is then not given and says why."""
from __future__ import annotations

import math

import numpy as np

from tasks.core.determinism import settled
from tasks.downstream.correlation import batch

STATISTICS = ("spearman", "kendall_tau_b", "pearson")
ALTERNATIVES = ("greater", "less", "two-sided")
_SE = {"spearman": lambda r, n: math.sqrt((1 + r * r / 2) / (n - 3)),
       "kendall_tau_b": lambda r, n: math.sqrt(0.437 / (n - 4)),
       "pearson": lambda r, n: 1 / math.sqrt(n - 3)}
MIN_N = {"spearman": 4, "kendall_tau_b": 5, "pearson": 4}


def statistic(acc: np.ndarray, down: np.ndarray, metric: str) -> np.ndarray:
    """The metric of every row of `acc` (rows × RMs) against the downstream scores (RMs)."""
    acc = np.atleast_2d(np.asarray(acc, dtype=float))
    n = acc.shape[1]
    ties = np.broadcast_to(np.arange(n), acc.shape)
    return batch.compute(acc, np.broadcast_to(np.asarray(down, dtype=float), acc.shape), ties, 0.9, (metric,))[metric]


MAX_ENUMERATED = 20


def flip_masks(n_pairs: int, b: int, rng) -> tuple[np.ndarray, bool]:
    """(masks × pairs of 0/1, exact): every subset when 2^pairs <= b and pairs <= MAX_ENUMERATED, else b random
    ones (2^21 masks of 21 pairs would take ~350 MB; a random p is as valid, only not exact)."""
    if n_pairs <= MAX_ENUMERATED and 2 ** n_pairs <= b:
        return ((np.arange(2 ** n_pairs)[:, None] >> np.arange(n_pairs)) & 1).astype(float), True
    return rng.integers(0, 2, size=(b, n_pairs)).astype(float), False


def extreme(null: np.ndarray, observed, alternative: str) -> np.ndarray:
    """Which null statistics are at least as extreme as the observed (NaN never is), comparing their
    difference rounded to DECISION_DECIMALS: a flip as extreme as the data counts whichever way its last
    bits fall. Works row-wise when `observed` has one value per row of `null`."""
    with np.errstate(invalid="ignore"):
        if alternative == "greater":
            out = settled(null - observed) >= 0
        elif alternative == "less":
            out = settled(null - observed) <= 0
        else:
            out = settled(np.abs(null) - np.abs(observed)) >= 0
    return out & np.isfinite(null)


def flip_test(credit: np.ndarray, flipped: np.ndarray, down: np.ndarray, metric: str, alternative: str,
              b: int, rng) -> tuple[float | None, float | None]:
    """(observed statistic, p). credit, flipped: RMs × pairs credits under the labels and under the swapped
    labels; down: the RMs' downstream scores."""
    credit, flipped = np.asarray(credit, dtype=float), np.asarray(flipped, dtype=float)
    n = credit.shape[1]
    observed = float(statistic(credit.sum(axis=1) / n, down, metric)[0])
    if not math.isfinite(observed):
        return None, None
    masks, exact = flip_masks(n, b, rng)
    # sums of half-credits are exact in floats: equal accuracies stay equal (ties rank as ties), as in the
    # enumeration; a mean plus a correction would leave last-bit differences that break ties at random
    acc = (credit.sum(axis=1)[None, :] + masks @ (flipped - credit).T) / n
    hits = int(extreme(statistic(acc, down, metric), observed, alternative).sum())
    return observed, (hits / len(masks) if exact else (1 + hits) / (1 + len(masks)))


def interval(r: float | None, n: int, metric: str, level: float) -> tuple[list | None, str]:
    """(Fisher-z interval [lo, hi] or None, why none)."""
    if r is None:
        return None, "no statistic (constant scores)"
    if n < MIN_N[metric]:
        return None, f"too few RMs for an interval (n={n} < {MIN_N[metric]})"
    if abs(r) >= 1:
        return None, f"every RM in the same order on both sides (r = {r:+.0f}): Fisher z has no finite interval"
    from scipy.stats import norm

    z, half = math.atanh(r), norm.ppf((1 + level) / 2) * _SE[metric](r, n)
    return [math.tanh(z - half), math.tanh(z + half)], ""


# --- the primary test in the correlation stage, and its design for `prbench power` --------------------

def primary_rms(params: dict, available) -> list[str]:
    """correlation.primary.rms (names or fnmatch patterns) over scoring.rms, less correlation.exclude_rms,
    kept where `available` (None: every entry)."""
    from fnmatch import fnmatch

    c = params["correlation"]
    pats, skip = c["primary"]["rms"], set(c.get("exclude_rms") or [])
    return sorted(rm for rm in params["scoring"]["rms"] if any(fnmatch(rm, pat) for pat in pats)
                  and rm not in skip and (available is None or rm in available))


def bon_k(params: dict) -> int:
    """The k the correlation reads: correlation.bon_k, else the largest power of 2 <= bon.max_k and bon.n."""
    b = params["bon"]
    return int(params["correlation"].get("bon_k") or 1 << (min(int(b["max_k"]), int(b["n"])).bit_length() - 1))


def design(params: dict, rms: list[str] | None = None, pairs: int | None = None, questions: int | None = None):
    """The power.Design of the params (the planned pairs and questions of correlation.power unless given).
    A mixture RM's weight is its known signal share; other RMs are spread evenly over [0, 1]."""
    from tasks.downstream.correlation.power import Design

    c = params["correlation"]
    rms = primary_rms(params, None) if rms is None else rms
    entries = params["scoring"]["rms"]
    even = np.linspace(0, 1, max(len(rms), 2))
    weights = tuple(float(entries[rm]["weight"]) if entries[rm].get("kind") == "mixture" else float(even[i])
                    for i, rm in enumerate(rms))
    pr = c["primary"]
    return Design(weights, int(pairs or c["power"]["pairs"]), int(questions or c["power"]["questions"]),
                  int(params["bon"]["n"]), bon_k(params), pr["statistic"], pr["alternative"], float(pr["alpha"]))


def power_of(params: dict, d) -> dict:
    """The simulated power of design d at correlation.power.effect (cached under common.cache_dir/power)."""
    from tasks.downstream.correlation.power import cached

    pw = params["correlation"]["power"]
    if params["correlation"]["primary"]["method"] != "bon" or len(d.weights) < MIN_N[d.statistic]:
        return {"power": None, "why": "simulated for the bon method with enough RMs only"}
    return cached(d, float(pw["effect"]), int(pw["simulations"]), int(pw["flips"]), int(params["common"]["seed"]),
                  params["common"].get("cache_dir"))


def credit_matrices(score_paths: dict, rms: list[str], pr: dict, c: dict) -> tuple[np.ndarray, np.ndarray, list]:
    """RMs × pairs credits under the labels and under the swapped labels, over the pairs every RM scored."""
    from tasks.core.artifacts import read_table
    from tasks.stages.leaderboard import _invalid, _tie, credits

    per = {}
    for rm in rms:
        rows = [r for r in read_table(score_paths[rm], "scores").to_pylist()
                if r["benchmark"] == pr["benchmark"] and r["strategy"] == pr["strategy"]
                and c["split"] in (None, r["split"])]
        per[rm] = {r["question_id"]: r for r in rows}
    common = sorted(set.intersection(*(set(v) for v in per.values()))) if per else []
    swap = lambda r: r if _invalid(r) or _tie(r) else {**r, "correct": not r["correct"]}  # noqa: E731
    credit = np.array([credits([per[rm][q] for q in common], c["tie_policy"]) for rm in rms])
    flipped = np.array([credits([swap(per[rm][q]) for q in common], c["tie_policy"]) for rm in rms])
    return credit.reshape(len(rms), len(common)), flipped.reshape(len(rms), len(common)), common


def run_primary(params: dict, score_paths: dict, downs: dict) -> dict:
    """metrics/correlation.json `primary`: the pre-registered test, run once."""
    from tasks.core.determinism import stable_rng
    from tasks.downstream.correlation.metrics import num

    c = params["correlation"]
    pr = c.get("primary")
    if not pr:
        return {"status": "none pre-registered (correlation.primary)"}
    head = {k: pr[k] for k in ("benchmark", "strategy", "method", "statistic", "alternative", "alpha")}
    down = downs.get(pr["method"])
    rms = primary_rms(params, set(score_paths) & (down.rms() if down else set()))
    out = {**head, "rms": rms, "n_rms": len(rms), "estimate": None, "ci": None, "p": None, "power": None,
           "significant": False, "n_questions": 0, "n_pairs": 0,
           "test": "label-flip randomization (H0: the benchmark's labels carry nothing); one-sided unless two-sided",
           "ci_method": "Fisher z, Bonett-Wright standard error, over the RMs", "positive_control": all(
               params["scoring"]["rms"][rm].get("kind") == "mixture" for rm in rms) and bool(rms)}
    if down is None or len(rms) < MIN_N[pr["statistic"]]:
        return {**out, "status": f"too few RMs (n={len(rms)} < {MIN_N[pr['statistic']]})" if down else
                f"downstream method '{pr['method']}' not in this run"}
    credit, flipped, pairs = credit_matrices(score_paths, rms, pr, c)
    if not pairs:
        return {**out, "status": f"no {pr['benchmark']} pair scored by every RM of the test under {pr['strategy']}"}
    d = np.array([down.value(rm) for rm in rms])
    questions = {q for rm in rms for q in down.per_question.get(rm, {})}
    rng = stable_rng(int(params["common"]["seed"]), "correlation", "primary")
    estimate, p = flip_test(credit, flipped, d, pr["statistic"], pr["alternative"], int(c["permutations"]), rng)
    ci, why = interval(estimate, len(rms), pr["statistic"], float(c["ci"]))
    sim = power_of(params, design(params, rms, len(pairs), len(questions)))
    top = [rm for rm in rms if params["scoring"]["rms"][rm].get("weight") == 1]
    return {**out, "estimate": num(estimate), "ci": ci, "ci_note": why or None, "p": num(p),
            "significant": bool(p is not None and p < pr["alpha"]), "n_pairs": len(pairs),
            "n_questions": len(questions), "power": sim.get("power"), "effect": c["power"]["effect"],
            "min_detectable_effect": sim.get("min_detectable_effect"),
            "observed_signal_accuracy": num(float(credit[rms.index(top[0])].mean())) if top and len(pairs) else None,
            "status": "ok"}
