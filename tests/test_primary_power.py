"""The pre-registered primary test (tasks/downstream/correlation/primary.py) and its power
(power.py, `prbench power`): seeded simulations at the default design of params.yaml."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tasks.downstream.correlation import power as PW
from tasks.downstream.correlation import primary as P
from tasks.ops.params import load_params

SIMS = 400
MC = 2 * math.sqrt(0.05 * 0.95 / SIMS)   # two Monte Carlo standard errors at a 5% rate


@pytest.fixture(scope="module")
def default():
    params = load_params("params.yaml")
    return params, P.design(params)


def test_the_default_design_is_the_ladder_in_params(default):
    params, d = default
    assert len(d.weights) == 12 and d.weights[0] == 0 and d.weights[-1] == 1 and list(d.weights) == sorted(d.weights)
    assert (d.pairs, d.questions, d.n, d.k) == (15, 15, params["bon"]["n"], params["correlation"]["bon_k"])
    assert (d.statistic, d.alternative, d.alpha) == ("pearson", "greater", 0.05)


def test_the_primary_test_rejects_under_the_assumed_effect_and_holds_its_level_under_none(default):
    params, d = default
    effect = params["correlation"]["power"]["effect"]
    p = PW.simulate(d, [0.5, effect], sims=SIMS, flips=199, seed=7)
    assert np.mean(p[effect] < d.alpha) >= 0.8, "power below 80% at the assumed effect"
    assert np.mean(p[0.5] < d.alpha) <= d.alpha + MC, "rejects too often when the labels say nothing"


def test_an_rm_permutation_test_would_not_hold_its_level_on_a_ladder(default):
    """Why the primary test flips labels: the ladder's RMs share their questions, so with no effect their
    accuracies still trend with the weight, and permuting RMs takes that trend for signal."""
    _, d = default
    rng, reps = np.random.default_rng(3), 1000
    w = np.asarray(d.weights)[None, :, None]
    acc = (w * rng.standard_normal((reps, 1, d.pairs)) + (1 - w) * rng.standard_normal((reps, len(d.weights), d.pairs))
           > 0).mean(axis=2)
    down = PW._downstream(d, PW._draws(d, reps, 5))
    r = P.statistic(acc, down, "pearson")
    order = np.argsort(rng.random((reps, 99, len(d.weights))), axis=2)
    perm = P.statistic(np.take_along_axis(np.repeat(acc[:, None], 99, 1), order, 2).reshape(-1, len(d.weights)),
                       np.repeat(down, 99, axis=0), "pearson").reshape(reps, 99)
    rate = np.mean((1 + (perm >= r[:, None]).sum(axis=1)) / 100 < 0.05)
    assert rate > 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps), rate   # beyond Monte Carlo error


@pytest.mark.parametrize("metric, truth_of", [("pearson", lambda rho: rho),
                                              ("spearman", lambda rho: 6 / math.pi * math.asin(rho / 2))])
@pytest.mark.parametrize("rho", [0.0, 0.5, 0.85])
def test_the_interval_covers_within_5_points_of_nominal(default, metric, truth_of, rho):
    """Known truth: RMs drawn from a population whose true benchmark accuracy and downstream score
    correlate rho, each measured with noise (reliability 0.8 and 0.9); the interval targets the
    correlation of the measured values among such RMs, attenuated: rho * sqrt(0.8 * 0.9)."""
    _, d = default
    n, rng, covered, reps = len(d.weights), np.random.default_rng(11), 0, 2000
    measured = rho * math.sqrt(0.8 * 0.9)
    truth = truth_of(measured)
    for _ in range(reps):
        a, b = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n).T
        a, b = a + rng.normal(0, math.sqrt(0.25), n), b + rng.normal(0, math.sqrt(1 / 9), n)
        r = float(P.statistic(a, b, metric)[0])
        ci, why = P.interval(r, n, metric, 0.95)
        assert ci is not None, why
        covered += ci[0] <= truth <= ci[1]
    assert abs(covered / reps - 0.95) <= 0.05


def test_no_zero_width_interval_without_its_reason():
    ci, why = P.interval(1.0, 12, "pearson", 0.95)
    assert ci is None and "same order" in why
    ci, why = P.interval(0.5, 3, "spearman", 0.95)
    assert ci is None and "too few" in why
    ci, _ = P.interval(0.999, 12, "spearman", 0.95)
    assert ci[1] - ci[0] > 0


def test_the_flip_test_is_exact_on_few_pairs():
    """Enumerated when 2^pairs <= the budget: p = the share of the 2^pairs label flips at least as good."""
    credit = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1], [1, 1, 1]], dtype=float)
    flipped = 1 - credit
    down = np.array([0.7, 0.4, 0.1, 0.9])
    obs, p = P.flip_test(credit, flipped, down, "pearson", "greater", 9999, np.random.default_rng(0))
    flips = [[(i >> j) & 1 for j in range(3)] for i in range(8)]
    null = [np.corrcoef(np.where(np.array(f, bool), flipped, credit).mean(axis=1), down)[0, 1] for f in flips]
    assert obs == pytest.approx(null[0])
    assert p == pytest.approx(np.mean([x >= obs - 1e-12 for x in null]))


def test_prbench_power_prints_the_design_the_effect_and_a_power_of_at_least_80(default, capsys, tmp_path):
    from flows.cli import main

    params, _ = default
    assert main(["power"]) == 0
    out = capsys.readouterr().out
    assert "12 RMs (the positive-control ladder" in out and "assumed effect: 0.9" in out
    power = float(out.split("power: ")[1].split()[0])
    assert power >= 0.8
    from tasks.ops.power_cli import warning

    assert warning(params) is None
    small = {**params, "correlation": {**params["correlation"],
                                       "power": {**params["correlation"]["power"], "pairs": 6}}}
    line = warning(small)
    assert line.startswith("prbench: warning: the primary test has power") and "\n" not in line


def test_the_correlation_stage_writes_the_primary_test_apart_from_the_exploratory_ones(tmp_path):
    """metrics/correlation.json `primary`: estimate, CI, p, power, the design and `significant`; the
    positive-control RMs (kind mixture) are left out of the exploratory correlations."""
    import json

    from tests.test_correlation_stage import P as CP, RMS, outs, write_bon, write_scores
    from tasks.downstream.correlation import stage

    weights = dict(zip(RMS, [1.0, 0.8, 0.6, 0.4, 0.2, 0.0]))
    params = {"common": {"seed": 2604, "cache_dir": str(tmp_path / "cache")}, "bon": {"n": 4, "max_k": 4},
              "scoring": {"rms": {rm: {"kind": "mixture", "weight": w} for rm, w in weights.items()}},
              "correlation": {**CP, "bon_k": 4,
                              "primary": {"benchmark": "personalised", "strategy": "none", "method": "bon",
                                          "statistic": "pearson", "alternative": "greater", "alpha": 0.05,
                                          "rms": ["*"]},
                              "power": {"effect": 0.9, "pairs": 10, "questions": 10, "simulations": 100,
                                        "flips": 99}}}
    inputs = {"scores": write_scores(tmp_path, RMS), "bon": write_bon(tmp_path, RMS)}
    stage.run(params, inputs, outs(tmp_path))
    m = json.loads((tmp_path / "out/correlation.json").read_text())
    pr = m["primary"]
    assert {"benchmark", "strategy", "method", "statistic", "alternative", "alpha", "estimate", "ci", "p", "power",
            "n_rms", "n_questions", "significant"} <= set(pr)
    assert (pr["n_rms"], pr["n_questions"], pr["n_pairs"]) == (6, 10, 10) and pr["positive_control"]
    assert pr["estimate"] == pytest.approx(1.0) and pr["ci"] is None and "same order" in pr["ci_note"]
    assert pr["p"] < 0.05 and pr["significant"] and 0 <= pr["power"] <= 1
    assert m["positive_controls"] == RMS and m["correlations"]["personalised"]["bon"]["n_rms"] == 0
    # the same data tested the other way round: not significant, and said so
    params["correlation"]["primary"]["alternative"] = "less"
    stage.run(params, inputs, outs(tmp_path))
    pr = json.loads((tmp_path / "out/correlation.json").read_text())["primary"]
    assert pr["p"] > 0.5 and not pr["significant"]


def test_a_mixture_rm_blends_the_gold_rubric_signal_with_its_own_noise(tmp_path):
    from tasks.core.artifacts import write_table
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm

    q = {"id": "q1", "question": "How do I start running?", "domain": "Lifestyle", "split": "test",
         "rubric_aspects": [{"aspect": "gradual mileage increase", "evidence": "e", "reason": "r"}],
         "narrative": "n", "category": "fitness"}
    path = write_table([q], tmp_path / "questions.parquet", "questions")
    res = Resources({"common": {"seed": 1, "cache_dir": str(tmp_path / "cache")}})
    good, bad = "Increase your mileage gradually, about ten percent a week.", "Buy expensive shoes first."
    rm = lambda name, w: make_rm(name, {"kind": "mixture", "weight": w, "questions": str(path)}, res)  # noqa: E731
    items = [(q["question"], "", good), (q["question"], "", bad)]
    pure = rm("ladder-11", 1.0).score_answers(items)
    assert pure[0].score > pure[1].score, "weight 1: the gold-rubric cosine alone"
    noise_a, noise_b = rm("ladder-00", 0.0).score_answers(items), rm("ladder-01", 0.0).score_answers(items)
    assert [s.score for s in noise_a] != [s.score for s in noise_b], "each rung its own noise"
    assert [s.score for s in noise_a] == [s.score for s in rm("ladder-00", 0.0).score_answers(items)], "seeded"


def test_an_rm_entry_may_score_more_pairs_than_scoring_per_domain_limit(monkeypatch):
    """The ladder has no LLM: it scores every benchmark pair (its own per_domain_limit: null), the LLM judge
    keeps scoring.per_domain_limit."""
    from tasks.models import chunks
    from tasks.stages import score

    pairs = [{"question_id": f"{d}{i}", "domain": d, "split": "test"} for d in ("Art", "Society") for i in range(5)]
    monkeypatch.setattr(chunks, "rows", lambda path, schema: pairs)
    params = {"scoring": {"splits": ["test"], "per_domain_limit": 2,
                          "rms": {"judge": {"kind": "random"}, "ladder-00": {"kind": "mixture", "weight": 0.0,
                                                                             "per_domain_limit": None}}}}
    inputs = {"selected_pairs": "x"}
    assert len(score.benchmark_pairs(params, "personalised", inputs, "judge")) == 4
    assert len(score.benchmark_pairs(params, "personalised", inputs, "ladder-00")) == 10


def test_the_report_states_the_primary_test_its_verdict_and_its_power():
    from tasks.ops.report.downstream import primary_line

    pr = {"benchmark": "personalised", "strategy": "raw_profile", "method": "bon", "statistic": "pearson",
          "alternative": "greater", "alpha": 0.05, "n_rms": 12, "n_pairs": 15, "n_questions": 15, "status": "ok",
          "estimate": 0.41, "ci": [-0.2, 0.79], "p": 0.6, "significant": False, "power": 0.84, "effect": 0.9,
          "min_detectable_effect": 0.89, "observed_signal_accuracy": 0.73}
    line = primary_line(pr)
    assert "not significant at alpha 0.05" in line and "power 0.84 at the assumed effect 0.9" in line
    assert "[-0.200, 0.790]" in line and "73.0%" in line
    line = primary_line({**pr, "estimate": 1.0, "ci": None, "ci_note": "every RM in the same order", "p": 0.001,
                         "significant": True})
    assert ": significant at alpha" in line and "no interval: every RM in the same order" in line


def test_prbench_run_says_first_when_the_design_is_below_80_percent(monkeypatch, capsys):
    """One warning line at the start of every run, read from the cached simulation (here: a stub)."""
    import subprocess

    from flows.cli import main
    from tasks.ops import power_cli

    monkeypatch.setattr(power_cli, "report", lambda params: ([], {"power": 0.41}))
    monkeypatch.setattr(subprocess, "call", lambda *a, **k: 0)   # dvc status: every stage up to date
    assert main(["run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("prbench: warning: the primary test has power 0.41 < 0.80")
    monkeypatch.setattr(power_cli, "report", lambda params: ([], {"power": 0.84}))
    assert main(["run"]) == 0
    assert "warning" not in capsys.readouterr().out


def test_the_ladder_is_labelled_a_positive_control_and_never_the_best_rm():
    from tasks.ops.report import board, headline

    acc = lambda a: {"accuracy": a, "ci": [a - 0.1, a]}  # noqa: E731
    metrics = {"rms": {rm: {"raw_profile": {"micro": acc(a), "macro": acc(a), "pairs": 10}}
                       for rm, a in (("ladder-11", 0.9), ("similarity", 0.6))}, "tie_policy": "strict", "ci": 0.95}
    rms = {"ladder-11": {"kind": "mixture", "weight": 1.0}, "similarity": {"kind": "similarity"}}
    lb = board.leaderboard([], [], metrics, {"ladder-11"})
    names = {r["rm"]: r["cells"][0]["text"] for r in lb["rows"]}
    assert names == {"ladder-11": "ladder-11 (positive control)", "similarity": "similarity"}
    assert [b["rms"] for b in headline.headline(lb, rms)["best"]] == [["similarity"]]


def test_a_primary_method_the_run_does_not_compute_is_one_clear_error():
    from tasks.core.errors import ConfigError
    from tasks.downstream.correlation import stage
    from tests.test_correlation_stage import P as CP

    p = {**CP, "primary": {"benchmark": "personalised", "strategy": "raw_profile", "method": "rl",
                           "statistic": "pearson", "alternative": "greater", "alpha": 0.05, "rms": ["*"]}}
    with pytest.raises(ConfigError, match=r"^correlation.primary.method: 'rl' is not in correlation.downstream"):
        stage.check_params(p)
