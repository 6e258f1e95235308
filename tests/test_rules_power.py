"""The power of the primary test as `prbench power` and the page state it (tasks/downstream/correlation/power.py),
each piece against the model written plainly: the expected best-of-k over every subset, each simulated run's
credits and its label-flip p as docstring and docs/statistics.md describe them, power = share of runs with
p < α, its Monte Carlo error, the size at no effect, the smallest detectable effect as the smallest 0.01 step
reaching 80%, the cap on pairs and questions, and the cache keyed on everything the result depends on."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from tasks.downstream.correlation import power as PW
from tasks.downstream.correlation import primary as P
from tasks.core.determinism import stable_rng

SMALL = PW.Design(weights=(0.0, 0.3, 0.6, 0.9, 1.0), pairs=6, questions=3, n=4, k=2, statistic="pearson")


def _best_of_k_by_subsets(y, scores, k):
    n = len(y)
    k = min(k, n)
    picks = [y[max(s, key=lambda i: scores[i])] for s in itertools.combinations(range(n), k)]
    return sum(picks) / len(picks)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 9])
def test_best_of_k_is_the_mean_pick_over_every_subset(k):
    rng = np.random.default_rng(k)
    y, scores = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 3, 5))
    got = PW._best_of_k(y, scores, k)
    assert got.shape == (2, 3)
    for i, j in np.ndindex(2, 3):
        assert got[i, j] == pytest.approx(_best_of_k_by_subsets(y[i, j], scores[i, j], k))


def _credits(d, effect, draws):
    """Each RM's credit on each pair, as the module docstring states the model."""
    delta = norm.ppf(min(max(effect, 1e-9), 1 - 1e-9))
    sims, pairs = draws["eps"].shape
    credit = np.zeros((sims, len(d.weights), pairs))
    for s, r, p in np.ndindex(credit.shape):
        w = d.weights[r]
        credit[s, r, p] = w * (delta + draws["eps"][s, p]) + (1 - w) * draws["eta"][s, r, p] > 0
    return credit


def _p_by_loop(d, credit, down, masks, exact):
    out = []
    for s in range(len(credit)):
        obs = P.statistic(credit[s].mean(axis=1)[None], down[s][None], d.statistic)[0]
        null = [P.statistic((np.where(m == 1, 1 - credit[s], credit[s])).mean(axis=1)[None], down[s][None],
                            d.statistic)[0] for m in masks]
        hits = sum(bool(P.extreme(np.array([x]), obs, d.alternative)[0]) for x in null) if np.isfinite(obs) \
            else len(masks)
        out.append(hits / len(masks) if exact else (1 + hits) / (1 + len(masks)))
    return np.array(out)


@pytest.mark.parametrize("pairs, flips, effect, alternative", [(6, 64, 0.8, "greater"), (6, 99, 0.6, "two-sided"),
                                                               (9, 49, 0.7, "greater"), (9, 49, 0.5, "less")])
def test_each_simulated_run_gets_its_label_flip_p_exactly_or_plus_one(pairs, flips, effect, alternative):
    d = PW.Design(**{**SMALL.__dict__, "pairs": pairs, "alternative": alternative})
    draws = PW._draws(d, 12, seed=4)
    down = PW._downstream(d, draws)
    masks, exact = P.flip_masks(d.pairs, flips, stable_rng(0, "power", "flips"))
    assert exact == (2 ** pairs <= flips)
    p, obs = PW.p_values(d, effect, draws, down, flips)
    credit = _credits(d, effect, draws)
    assert obs == pytest.approx(P.statistic(credit.mean(axis=2), down, d.statistic))
    assert p == pytest.approx(_p_by_loop(d, credit, down, masks, exact))
    assert ((p >= (1 / len(masks) if exact else 1 / (1 + len(masks)))) & (p <= 1)).all()


def test_the_downstream_score_is_the_expected_best_of_k_judge_score_per_rm():
    d = SMALL
    draws = PW._draws(d, 3, seed=2)
    down = PW._downstream(d, draws)
    assert down.shape == (3, len(d.weights))
    for s, r in np.ndindex(down.shape):
        w = d.weights[r]
        per_q = [_best_of_k_by_subsets(draws["y"][s, 0, q], w * draws["y"][s, 0, q] + (1 - w) * draws["nu"][s, r, q], d.k)
                 for q in range(d.questions)]
        assert down[s, r] == pytest.approx(np.mean(per_q))


def test_an_effect_of_one_or_zero_stays_a_finite_margin():
    """At effect 1 the good signal's margin is large but finite, so an RM of weight 0 still flips coins."""
    d = PW.Design(**{**SMALL.__dict__, "pairs": 40})
    draws = PW._draws(d, 20, seed=1)
    down = PW._downstream(d, draws)
    _, obs = PW.p_values(d, 1.0, draws, down, 19)
    credit = _credits(d, 1.0, draws)
    assert 0.3 < credit[:, 0].mean() < 0.7 and credit[:, -1].mean() == 1.0
    assert obs == pytest.approx(P.statistic(credit.mean(axis=2), down, d.statistic))
    _, obs0 = PW.p_values(d, 0.0, draws, down, 19)
    assert obs0 == pytest.approx(P.statistic(_credits(d, 0.0, draws).mean(axis=2), down, d.statistic))


def test_simulate_draws_fresh_runs_per_chunk_and_per_seed_and_shares_them_across_effects():
    d = SMALL
    sims = PW.CHUNK + 30
    got = PW.simulate(d, [0.5, 0.8], sims=sims, flips=19, seed=5)
    want = {e: [] for e in (0.5, 0.8)}
    for chunk, start in enumerate(range(0, sims, PW.CHUNK)):
        draws = PW._draws(d, min(PW.CHUNK, sims - start), 5, chunk)
        down = PW._downstream(d, draws)
        for e in want:
            want[e].append(PW.p_values(d, e, draws, down, 19)[0])
    for e in want:
        assert got[e].shape == (sims,) and got[e] == pytest.approx(np.concatenate(want[e]))
    first, second = PW._draws(d, 5, 5, 0), PW._draws(d, 5, 5, 1)
    assert not np.allclose(first["eps"], second["eps"]), "each chunk its own runs"
    assert not np.allclose(PW.simulate(d, [0.8], 30, 19, seed=6)[0.8], got[0.8][:30])


def test_power_is_the_share_of_runs_below_alpha_with_every_argument_passed_on():
    d = PW.Design(**{**SMALL.__dict__, "alpha": 0.2})
    p = PW.simulate(d, [0.75], sims=60, flips=9, seed=3)[0.75]
    assert PW.power_at(d, 0.75, sims=60, flips=9, seed=3) == pytest.approx(np.mean(p < 0.2))
    assert 0 < np.mean(p < 0.2) < 1, "a case where the threshold matters"
    assert PW.power_at(d, 0.75) == pytest.approx(np.mean(PW.simulate(d, [0.75])[0.75] < 0.2))


def _grid_mde(d, sims, flips, seed):
    for step in range(50, 100):
        if PW.power_at(d, step / 100, sims, flips, seed) >= PW.TARGET:
            return step / 100
    return None


def test_analyse_states_power_size_error_and_the_smallest_detectable_effect():
    d = PW.Design(weights=tuple(np.linspace(0, 1, 10)), pairs=20, questions=30, n=4, k=2, statistic="pearson",
                  alpha=0.1)
    out = PW.analyse(d, 0.7, sims=60, flips=39, seed=2)
    p = PW.simulate(d, [0.5, 0.7, 0.99], 60, 39, 2)
    assert out["power"] == round(float(np.mean(p[0.7] < 0.1)), 3)
    assert out["size"] == round(float(np.mean(p[0.5] < 0.1)), 3)
    assert out["mc_error"] == round(math.sqrt(out["power"] * (1 - out["power"]) / 60), 3)
    assert out["min_detectable_effect"] == _grid_mde(d, 60, 39, 2)
    assert 0.5 < out["min_detectable_effect"] < 0.99
    assert (out["effect"], out["simulations"], out["flips"], out["seed"], out["target"]) == (0.7, 60, 39, 2, 0.8)
    assert out["design"] == d.__dict__ | {"weights": d.weights} and out["capped"] is False
    assert "0.5 = the labels carry nothing" in out["effect_meaning"]


def test_power_counts_p_strictly_below_alpha():
    d = PW.Design(weights=(0.0, 0.25, 0.5, 0.75, 1.0), pairs=3, questions=3, n=3, k=2, alpha=0.25)
    out = PW.analyse(d, 0.9, sims=40, flips=8, seed=0)   # exact p on 8 orders: a p of exactly 0.25 is common
    p = PW.simulate(d, [0.9], 40, 8, 0)[0.9]
    assert (p == 0.25).any() and out["power"] == round(float(np.mean(p < 0.25)), 3)


def test_no_detectable_effect_when_even_the_largest_falls_short_and_a_zero_power_has_an_error():
    d = PW.Design(weights=(0.0, 0.0, 0.0), pairs=3, questions=2, n=2, k=1, alpha=0.01)
    out = PW.analyse(d, 0.9, sims=20, flips=9, seed=0)
    assert out["min_detectable_effect"] is None and out["power"] == 0.0
    assert out["mc_error"] == round(math.sqrt(1e-9 / 20), 3)


def test_pairs_and_questions_above_the_cap_are_simulated_at_it_and_say_so():
    d = PW.Design(weights=(0.0, 1.0, 0.5), pairs=PW.CAP + 50, questions=PW.CAP + 1, n=2, k=1)
    out = PW.analyse(d, 0.9, sims=5, flips=3, seed=0)
    assert out["capped"] is True and out["design"]["pairs"] == PW.CAP + 50 and out["design"]["questions"] == PW.CAP + 1
    capped = PW.Design(weights=(0.0, 1.0, 0.5), pairs=PW.CAP, questions=PW.CAP, n=2, k=1)
    assert out["power"] == PW.analyse(capped, 0.9, sims=5, flips=3, seed=0)["power"]
    assert PW.analyse(capped, 0.9, sims=5, flips=3, seed=0)["capped"] is False


def test_the_cache_reads_back_and_is_keyed_on_everything_the_result_depends_on(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(PW, "analyse", lambda *a: calls.append(a) or {"args": repr(a)})
    d = SMALL
    first = PW.cached(d, 0.8, 10, 9, 1, str(tmp_path))
    assert PW.cached(d, 0.8, 10, 9, 1, str(tmp_path)) == first and len(calls) == 1
    (path,) = (tmp_path / "power").glob("*.json")
    assert json.loads(path.read_text()) == first
    for args in [(PW.Design(**{**d.__dict__, "k": 3}), 0.8, 10, 9, 1), (d, 0.7, 10, 9, 1), (d, 0.8, 11, 9, 1),
                 (d, 0.8, 10, 8, 1), (d, 0.8, 10, 9, 2)]:
        PW.cached(*args, str(tmp_path))
    assert len(calls) == 6 and calls[-1] == (d, 0.8, 10, 9, 2)
    monkeypatch.chdir(tmp_path)
    PW.cached(d, 0.8, 10, 9, 1, None)
    assert len(list((tmp_path / ".prbench-cache" / "power").glob("*.json"))) == 1


def _fake_simulate(calls, share_below):
    """simulate() whose runs at effect e have p < α in the share share_below(e) (of `sims`), recording its calls."""
    def simulate(d, effects, sims=400, flips=199, seed=0):
        calls.append((d, tuple(effects), sims, flips, seed))
        return {e: np.array([0.0] * round(share_below(e) * sims) + [1.0] * (sims - round(share_below(e) * sims)))
                for e in effects}
    return simulate


def test_the_smallest_detectable_effect_is_found_by_bisection_to_the_first_step_reaching_80_percent(monkeypatch):
    calls = []
    monkeypatch.setattr(PW, "simulate", _fake_simulate(calls, lambda e: 0.8 if e >= 0.73 else 3 / 7 if e > 0.5 else 1 / 7))
    out = PW.analyse(SMALL, 0.6, sims=7, flips=19, seed=3)
    assert out["min_detectable_effect"] == 0.73, "power at 0.99 exactly at the target still searches"
    assert (out["power"], out["size"]) == (0.429, 0.143)
    assert out["mc_error"] == round(math.sqrt(3 / 7 * 4 / 7 / 7), 3)
    assert calls[0][1:] == ((0.5, 0.6, 0.99), 7, 19, 3) and all(c[2:] == (7, 19, 3) for c in calls)
    monkeypatch.setattr(PW, "simulate", _fake_simulate(calls, lambda e: 0.8 if e >= 0.99 else 0.1))
    assert PW.analyse(SMALL, 0.6, sims=10)["min_detectable_effect"] == 0.99
    monkeypatch.setattr(PW, "simulate", _fake_simulate(calls, lambda e: 0.7))
    assert PW.analyse(SMALL, 0.6, sims=10)["min_detectable_effect"] is None


def test_analyse_runs_the_capped_design_with_the_defaults_of_power_at(monkeypatch):
    calls = []
    monkeypatch.setattr(PW, "simulate", _fake_simulate(calls, lambda e: 0.0))
    out = PW.analyse(PW.Design(weights=(0.0, 1.0, 0.5), pairs=PW.CAP + 50, questions=7, n=2, k=1), 0.9)
    assert (calls[-1][0].pairs, calls[-1][0].questions, calls[-1][2:]) == (PW.CAP, 7, (400, 199, 0))
    assert out["capped"] is True and out["design"]["pairs"] == PW.CAP + 50
    PW.analyse(PW.Design(weights=(0.0, 1.0, 0.5), pairs=9, questions=PW.CAP + 1, n=2, k=1), 0.9)
    assert (calls[-1][0].pairs, calls[-1][0].questions) == (9, PW.CAP)
    assert out["effect_meaning"] == ("share of benchmark pairs on which the good signal alone prefers the chosen answer "
                                     "(0.5 = the labels carry nothing)")


def test_every_entry_point_has_the_same_defaults():
    import inspect

    defaults = [{k: v.default for k, v in inspect.signature(f).parameters.items() if k in ("sims", "flips", "seed")}
                for f in (PW.simulate, PW.power_at, PW.analyse)]
    assert defaults == [{"sims": 400, "flips": 199, "seed": 0}] * 3
