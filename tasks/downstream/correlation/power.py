"""Power of the primary test (`prbench power`), by seeded simulation of the design in the params.

The model, in units of the good signal's spread. Each primary RM r blends the good signal (the gold-rubric
judge) with its own noise at weight w_r (a `mixture` RM's `weight`; other RMs are spread evenly over
[0, 1]): score = w_r * signal + (1 - w_r) * noise, noise ~ N(0, 1) per answer.
- Benchmark: `pairs` pairs; the signal's margin of chosen over rejected is delta + N(0, 1), where
  Phi(delta) = `effect`, the assumed share of pairs on which the good signal alone prefers the chosen
  answer (0.5 = no effect: the labels say nothing). An RM is right where its margin is > 0.
- Downstream: `questions` questions, `n` candidates each, judge score = the signal ~ N(0, 1); each RM's
  score is its expected best-of-k judge score (every size-k subset, as bon_report's `expected`).
- The test: primary.flip_test on the simulated credits, as the correlation stage runs it.
Power = the share of simulated runs with p < alpha; the smallest detectable effect = the smallest
`effect` on a grid of 0.01 with power >= 0.8 (the same draws at every effect, so power rises with it)."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from tasks.downstream.correlation import primary as P
from tasks.core.determinism import stable_rng

TARGET = 0.8
VERSION = 2   # bump when the model changes: cached results keyed on it


@dataclass(frozen=True)
class Design:
    weights: tuple[float, ...]   # the primary RMs' signal weights
    pairs: int                   # benchmark pairs per RM
    questions: int               # downstream questions
    n: int                       # BoN samples per question
    k: int                       # best-of-k
    statistic: str = "spearman"
    alternative: str = "greater"
    alpha: float = 0.05


def _best_of_k(y: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Expected judge score of the best-of-k pick: y (... × n), scores (... × n) without ties."""
    n = y.shape[-1]
    k = min(k, n)
    below = np.argsort(np.argsort(scores, axis=-1), axis=-1)   # candidates below each one
    prob = np.vectorize(lambda j: math.comb(int(j), k - 1))(np.arange(n)) / math.comb(n, k)
    return (prob[below] * y).sum(axis=-1)


CHUNK = 100   # simulated runs drawn at once (bounds memory at large designs)
CAP = 100     # pairs and questions simulated at most (a lower bound on power above it; keeps it under 60 s)


def _draws(d: Design, sims: int, seed: int, chunk: int = 0) -> dict:
    rng = stable_rng(seed, "power", "draws", str(chunk))
    r = len(d.weights)
    return {"eps": rng.standard_normal((sims, d.pairs)), "eta": rng.standard_normal((sims, r, d.pairs)),
            "y": rng.standard_normal((sims, 1, d.questions, d.n)),
            "nu": rng.standard_normal((sims, r, d.questions, d.n))}


def _downstream(d: Design, draws: dict) -> np.ndarray:
    w = np.asarray(d.weights, dtype=float)[None, :, None, None]
    scores = w * draws["y"] + (1 - w) * draws["nu"]
    return _best_of_k(np.broadcast_to(draws["y"], scores.shape), scores, d.k).mean(axis=-1)   # sims × RMs


def p_values(d: Design, effect: float, draws: dict, down: np.ndarray, flips: int) -> tuple[np.ndarray, np.ndarray]:
    """(p, observed statistic) of every simulated run at this effect."""
    from scipy.stats import norm

    delta = norm.ppf(min(max(effect, 1e-9), 1 - 1e-9))
    w = np.asarray(d.weights, dtype=float)[None, :, None]
    credit = (w * (delta + draws["eps"][:, None, :]) + (1 - w) * draws["eta"] > 0).astype(float)
    masks, exact = P.flip_masks(d.pairs, flips, stable_rng(0, "power", "flips"))   # the same flips at every effect
    acc = credit.sum(axis=2) / d.pairs                                           # sims × RMs
    obs = P.statistic(acc, down, d.statistic)
    null = (credit.sum(axis=2)[:, None, :] + np.einsum("bp,srp->sbr", masks, 1 - 2 * credit)) / d.pairs   # exact sums
    b = len(masks)
    null = P.statistic(null.reshape(-1, acc.shape[1]), np.repeat(down, b, axis=0), d.statistic).reshape(-1, b)
    hits = np.where(np.isfinite(obs), P.extreme(null, obs[:, None], d.alternative).sum(axis=1), b)
    return (hits / b if exact else (1 + hits) / (1 + b)), obs


def simulate(d: Design, effects, sims: int = 400, flips: int = 199, seed: int = 0) -> dict[float, np.ndarray]:
    """effect -> the p of every simulated run; the same draws at every effect (common random numbers)."""
    out = {e: [] for e in effects}
    for chunk, start in enumerate(range(0, sims, CHUNK)):
        draws = _draws(d, min(CHUNK, sims - start), seed, chunk)
        down = _downstream(d, draws)
        for e in effects:
            out[e].append(p_values(d, e, draws, down, flips)[0])
    return {e: np.concatenate(v) for e, v in out.items()}


def power_at(d: Design, effect: float, sims: int = 400, flips: int = 199, seed: int = 0) -> float:
    return float(np.mean(simulate(d, [effect], sims, flips, seed)[effect] < d.alpha))


def analyse(d: Design, effect: float, sims: int = 400, flips: int = 199, seed: int = 0) -> dict:
    """Power at the assumed effect and at none (the test's size), and the smallest effect detectable at 80%
    power, to 0.01 by bisection (None when even 0.99 falls short). Pairs and questions above CAP are
    simulated at CAP: power only rises with them, so the result is then a lower bound (`capped`)."""
    full = asdict(d)
    d = replace(d, pairs=min(d.pairs, CAP), questions=min(d.questions, CAP))
    power = {e: float(np.mean(v < d.alpha)) for e, v in simulate(d, [0.5, effect, 0.99], sims, flips, seed).items()}
    mde = None
    if power[0.99] >= TARGET:
        lo, hi = 0.5, 0.99
        while hi - lo > 0.01:
            mid = round((lo + hi) / 2, 3)
            lo, hi = (mid, hi) if power_at(d, mid, sims, flips, seed) < TARGET else (lo, mid)
        mde = round(hi, 2)
    at = power[effect]
    return {"design": full, "capped": asdict(d) != full, "effect": effect, "power": round(at, 3),
            "mc_error": round(math.sqrt(max(at * (1 - at), 1e-9) / sims), 3), "size": round(power[0.5], 3),
            "min_detectable_effect": mde, "target": TARGET, "simulations": sims, "flips": flips, "seed": seed,
            "effect_meaning": "share of benchmark pairs on which the good signal alone prefers the chosen answer "
                              "(0.5 = the labels carry nothing)"}


def cached(d: Design, effect: float, sims: int, flips: int, seed: int, cache_dir: str | None) -> dict:
    """analyse(), cached under cache_dir/power/ by a hash of everything it depends on (a run's start
    reads it back instead of simulating again)."""
    key = hashlib.sha256(json.dumps([VERSION, asdict(d), effect, sims, flips, seed], sort_keys=True)
                         .encode()).hexdigest()[:20]
    path = Path(cache_dir or ".prbench-cache") / "power" / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    out = analyse(d, effect, sims, flips, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, sort_keys=True))
    return out
