"""The pre-registered primary test's rules that a referee would check, each against a case worked out by
hand or a plainly written reference loop (tasks/downstream/correlation/primary.py, docs/statistics.md "The
primary test and its power"): every flip enumerated when 2^pairs <= B, the run's own design (its RMs, pairs
and questions) simulated for the power, the power simulated only for the bon method with enough RMs and
cached under common.cache_dir/power, the even spread of non-mixture RMs, the weight-1 rung's observed
accuracy, and the least number of RMs the test runs on."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tasks.downstream.correlation import power as PW
from tasks.downstream.correlation import primary as P
from tasks.downstream.correlation.sides import Side


class _NoRng:
    """An rng that must not be drawn from: every flip is enumerated, none is random."""

    def integers(self, *a, **k):
        raise AssertionError("random flips drawn where every flip should be enumerated")


# --- the flips: every subset when 2^pairs <= B ------------------------------------------------------------

def test_every_flip_is_enumerated_once_when_2_to_the_pairs_is_at_most_b():
    masks, exact = P.flip_masks(3, 8, _NoRng())
    assert exact is True and masks.shape == (8, 3)
    assert sorted(map(tuple, masks.tolist())) == sorted(itertools.product([0.0, 1.0], repeat=3))
    masks, exact = P.flip_masks(3, 7, np.random.default_rng(0))
    assert exact is False and masks.shape == (7, 3) and set(np.unique(masks)) <= {0.0, 1.0}


def test_twenty_pairs_are_still_enumerated():
    """The documented rule at the largest count the code enumerates: 2^20 flips, each subset once."""
    masks, exact = P.flip_masks(20, 2 ** 20, _NoRng())
    assert exact is True and masks.shape == (2 ** 20, 20)
    code = masks @ (2.0 ** np.arange(20))                       # each row as the integer of its bits
    assert np.array_equal(np.sort(code), np.arange(2 ** 20, dtype=float))


def test_no_rms_no_pairs():
    pr = {"benchmark": "personalised", "strategy": "none"}
    credit, flipped, pairs = P.credit_matrices({}, [], pr, {"split": None, "tie_policy": "half"})
    assert credit.shape == flipped.shape == (0, 0) and pairs == []


# --- the power: bon only, enough RMs only, cached under common.cache_dir/power ----------------------------

def _power_params(tmp_path, method="bon"):
    return {"common": {"seed": 7, "cache_dir": str(tmp_path / "cache")},
            "correlation": {"primary": {"method": method}, "power": {"effect": 0.8, "simulations": 12, "flips": 19}}}


@pytest.fixture()
def analysed(monkeypatch, tmp_path):
    """power.analyse replaced by a recorder (no simulation); the working directory a scratch one, so a
    cache written anywhere but common.cache_dir lands where the test sees it and nowhere else."""
    calls = []

    def fake(d, effect, sims, flips, seed):
        calls.append((d, effect, sims, flips, seed))
        return {"power": 0.5, "min_detectable_effect": 0.9}

    monkeypatch.setattr(PW, "analyse", fake)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return calls


@pytest.mark.parametrize("statistic, least", [("pearson", 4), ("spearman", 4), ("kendall_tau_b", 5)])
def test_the_power_is_simulated_from_the_least_number_of_rms_up(analysed, tmp_path, statistic, least):
    params = _power_params(tmp_path)
    few = PW.Design(tuple(np.linspace(0, 1, least - 1)), 3, 2, 4, 2, statistic)
    got = P.power_of(params, few)
    assert got["power"] is None and got["why"] and analysed == []
    enough = PW.Design(tuple(np.linspace(0, 1, least)), 3, 2, 4, 2, statistic)
    assert P.power_of(params, enough) == {"power": 0.5, "min_detectable_effect": 0.9}
    assert analysed == [(enough, 0.8, 12, 19, 7)], "correlation.power's effect, simulations, flips; common.seed"
    assert len(list((tmp_path / "cache" / "power").glob("*.json"))) == 1, "cached under common.cache_dir/power"
    assert not (tmp_path / "cwd" / ".prbench-cache").exists()
    assert P.power_of(params, enough) == {"power": 0.5, "min_detectable_effect": 0.9} and len(analysed) == 1, \
        "the second time read back from the cache"


def test_the_power_is_simulated_for_the_bon_method_only(analysed, tmp_path):
    d = PW.Design(tuple(np.linspace(0, 1, 12)), 15, 15, 4, 2, "pearson")
    got = P.power_of(_power_params(tmp_path, method="rl"), d)
    assert got["power"] is None and got["why"] and analysed == []


# --- the design the power simulates -------------------------------------------------------------------------

def _design_params(entries):
    return {"scoring": {"rms": entries}, "bon": {"n": 8, "max_k": 4},
            "correlation": {"bon_k": None, "exclude_rms": [], "power": {"pairs": 15, "questions": 9},
                            "primary": {"rms": ["*"], "statistic": "spearman", "alternative": "less",
                                        "alpha": 0.01, "method": "bon"}}}


@pytest.mark.parametrize("n, weights", [(1, (0.0,)), (2, (0.0, 1.0)), (3, (0.0, 0.5, 1.0)),
                                        (4, (0.0, 1 / 3, 2 / 3, 1.0))])
def test_rms_other_than_mixtures_are_spread_evenly_over_0_to_1(n, weights):
    entries = {f"rm{i}": {"kind": "seq-cls"} for i in range(n)}
    d = P.design(_design_params(entries))
    assert d.weights == pytest.approx(weights)
    assert (d.pairs, d.questions, d.n, d.k) == (15, 9, 8, 4), "the planned pairs and questions, bon.n, bon_k"
    assert (d.statistic, d.alternative, d.alpha) == ("spearman", "less", 0.01)


def test_a_mixture_keeps_its_weight_and_the_others_their_place_on_the_spread():
    entries = {"a": {"kind": "mixture", "weight": 0.3}, "b": {"kind": "seq-cls"}, "c": {"kind": "judge"}}
    assert P.design(_design_params(entries)).weights == pytest.approx((0.3, 0.5, 1.0))


def test_the_design_is_over_the_rms_pairs_and_questions_given():
    entries = {f"rm{i}": {"kind": "seq-cls"} for i in range(4)}
    d = P.design(_design_params(entries), ["rm1", "rm3"], 6, 2)
    assert d.weights == pytest.approx((0.0, 1.0)) and (d.pairs, d.questions) == (6, 2)


# --- run_primary on a case by hand: its own design, the weight-1 rung, the least number of RMs --------------

CREDIT = {"ladder-00": [0, 0, 1], "ladder-01": [1, 0, 0], "ladder-02": [1, 1, 0], "ladder-03": [0, 1, 1],
          "ladder-04": [1, 0, 1], "ladder-05": [1, 1, 1]}


def _run(monkeypatch, weights, paths, down, statistic="pearson"):
    """run_primary with the credits above (flipped: 1 - credit) for the RMs it asks for, and the design
    it hands to the power simulation recorded."""
    seen = {}

    def credit_matrices(score_paths, rms, pr, c):
        credit = np.array([CREDIT[rm] for rm in rms], dtype=float)
        return credit, 1 - credit, ["p1", "p2", "p3"]

    def power_of(params, d):
        seen["design"] = d
        return {"power": 0.7, "min_detectable_effect": 0.85}

    monkeypatch.setattr(P, "credit_matrices", credit_matrices)
    monkeypatch.setattr(P, "power_of", power_of)
    rms = {f"ladder-{i:02d}": {"kind": "mixture", "weight": w} for i, w in enumerate(weights)}
    params = {"common": {"seed": 1}, "scoring": {"rms": rms}, "bon": {"n": 4, "max_k": 4},
              "correlation": {"split": None, "tie_policy": "half", "permutations": 9999, "ci": 0.9, "bon_k": 2,
                              "exclude_rms": [], "power": {"effect": 0.9, "pairs": 15, "questions": 15},
                              "primary": {"benchmark": "personalised", "strategy": "none", "method": "bon",
                                          "statistic": statistic, "alternative": "greater", "alpha": 0.05,
                                          "rms": ["ladder-*"]}}}
    return P.run_primary(params, {rm: "x" for rm in paths}, {"bon": down}), seen.get("design")


def _down():
    # ladder-03's questions (q4, q5) are not the test's: it has no scores. ladder-05 has one fixed number.
    per = {"ladder-00": {"q1": 0.1, "q2": 0.3}, "ladder-01": {"q2": 0.2, "q3": 0.4}, "ladder-02": {"q1": 0.5},
           "ladder-03": {"q4": 0.0, "q5": 0.1}, "ladder-04": {"q3": 0.6}}
    return Side("bon", "bon", per_question=per, fixed={"ladder-05": 0.95})


def test_the_run_simulates_its_own_rms_pairs_and_questions(monkeypatch):
    paths = ["ladder-00", "ladder-01", "ladder-02", "ladder-04", "ladder-05"]
    got, d = _run(monkeypatch, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], paths, _down())
    assert got["status"] == "ok" and got["rms"] == paths
    assert (got["n_pairs"], got["n_questions"]) == (3, 3), "q1, q2, q3: the scored RMs' questions only"
    assert d.weights == (0.0, 0.2, 0.4, 0.8, 1.0), "the RMs of the test, not every primary RM in params"
    assert (d.pairs, d.questions) == (3, 3), "the run's pairs and questions, not correlation.power's plan"
    assert got["observed_signal_accuracy"] == 1.0, "the weight-1 rung's share right (ladder-05: 3 of 3)"
    # the estimate and p by a plain loop over the 8 label flips
    credit = np.array([CREDIT[rm] for rm in paths], dtype=float)
    down = np.array([0.2, 0.3, 0.5, 0.6, 0.95])
    r = np.corrcoef(credit.mean(axis=1), down)[0, 1]
    hits = 0
    for f in itertools.product([False, True], repeat=3):
        acc = np.where(np.array(f)[None, :], 1 - credit, credit).mean(axis=1)
        hits += np.corrcoef(acc, down)[0, 1] >= r - 1e-12
    assert got["estimate"] == pytest.approx(r) and got["p"] == pytest.approx(hits / 8)
    assert got["significant"] is bool(hits / 8 < 0.05) and got["power"] == 0.7


def test_no_weight_1_rung_no_observed_signal_accuracy(monkeypatch):
    paths = ["ladder-00", "ladder-01", "ladder-02", "ladder-04"]
    got, _ = _run(monkeypatch, [0.0, 0.2, 0.4, 0.6, 0.8], paths, _down())
    assert got["status"] == "ok" and got["observed_signal_accuracy"] is None


@pytest.mark.parametrize("statistic, least", [("pearson", 4), ("spearman", 4), ("kendall_tau_b", 5)])
def test_the_test_runs_from_the_least_number_of_rms_up(monkeypatch, statistic, least):
    names = [f"ladder-{i:02d}" for i in range(6)]
    down = Side("bon", "bon", fixed={rm: 0.1 * i for i, rm in enumerate(names)})
    weights = [i / 5 for i in range(6)]
    got, d = _run(monkeypatch, weights, names[:least], down, statistic)
    assert got["status"] == "ok" and got["n_rms"] == least and len(d.weights) == least
    few, d = _run(monkeypatch, weights, names[:least - 1], down, statistic)
    assert few["status"] == f"too few RMs (n={least - 1} < {least})" and d is None
    assert (few["n_pairs"], few["n_questions"], few["p"], few["estimate"], few["ci"], few["power"]) == \
        (0, 0, None, None, None, None), "a test that did not run claims no design and no result"
    assert few["significant"] is False


def test_twenty_one_pairs_are_drawn_at_random_whatever_b():
    """Past MAX_ENUMERATED pairs the flips are drawn (2^21 masks would take ~350 MB), as docs/statistics.md says."""
    drawn = []

    class Rng:
        def integers(self, low, high, size):
            drawn.append((low, high, size))
            return np.zeros(size, dtype=int)

    masks, exact = P.flip_masks(21, 2 ** 21, Rng())
    assert exact is False and drawn == [(0, 2, (2 ** 21, 21))]


@pytest.mark.parametrize("n, max_k", [(256, 256), (300, 1024), (16, 16), (5, 64), (64, 5), (1, 1), (1000, 700)])
def test_bon_k_is_the_largest_k_the_bon_curve_has(n, max_k):
    """correlation.bon_k: null reads the largest k of the Best-of-N curve (bon/report.ks_for: powers of two up
    to bon.max_k that are <= bon.n), however many samples there are."""
    from tasks.downstream.bon.report import ks_for

    params = {"bon": {"n": n, "max_k": max_k}, "correlation": {"bon_k": None}}
    assert P.bon_k(params) == max(ks_for(n, max_k)[0])
    assert P.bon_k({**params, "correlation": {"bon_k": 4}}) == 4   # an explicit k stands
