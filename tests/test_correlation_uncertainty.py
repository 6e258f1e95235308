"""Honest uncertainty for "the benchmark predicts downstream": CIs that resample the RMs as well as the
questions, the values a random and a reversed ranking get beside NDCG and RBO, "too few RMs" below
correlation.min_rms, Holm over the family, and the paired test "X predicts better than Y"."""
import numpy as np
import pyarrow.parquet as pq
import pytest

from tasks.downstream.correlation import paired, stage
from tasks.downstream.correlation.sides import Side
from tests.test_correlation_stage import P, outs, score, write_bon

RMS5 = ["a", "b", "c", "d", "e"]


def _side(name, means: dict, n_q: int, rng, kind="credit") -> Side:
    """Per-question values around each RM's mean over two domains: 0/1 credits or judge scores."""
    side = Side(name, "test")
    for rm, mu in means.items():
        values = rng.random(n_q) < mu if kind == "credit" else np.clip(mu + rng.normal(0, 0.15, n_q), 0, 1)
        side.per_question[rm] = {f"q{i}": float(v) for i, v in enumerate(values)}
    side.domains = {f"q{i}": "Art" if i % 2 else "Society" for i in range(n_q)}
    return side


def test_rm_resampled_ci_contains_the_value_and_is_wider_than_questions_only():
    """5 RMs over 400 questions: the question-only CI is narrow although 5 RMs say little; resampling
    which RMs were chosen widens it, and it still holds the observed value."""
    rng = np.random.default_rng(7)
    bench = _side("personalised", dict(zip(RMS5, [0.80, 0.70, 0.66, 0.60, 0.52])), 400, rng)
    down = _side("bon", dict(zip(RMS5, [0.45, 0.38, 0.41, 0.33, 0.30])), 400, rng, kind="score")
    got = paired.correlate(bench, down, RMS5, "accuracy", {**P, "bootstrap": 400, "permutations": 999}, 2604)
    for m in ("pearson", "spearman", "kendall_tau_b"):
        c = got[m]
        assert c["ci_low"] <= c["value"] <= c["ci_high"], (m, c)
        assert c["ci_high"] - c["ci_low"] > 1.5 * (c["ci_high_questions"] - c["ci_low_questions"]), (m, c)
    assert got["spearman"]["p_value"] > 0.01, "5 RMs: no permutation p below 1/120"


def test_reversed_ranking_shows_ndcg_and_rbo_beside_their_nulls(tmp_path):
    """Judge scores within 0.30-0.35 and a benchmark ranking them exactly in reverse: NDCG stays near 1,
    so the row carries what a reversed and a random ranking get on the same data."""
    rms = list("abcdef")
    acc = dict(zip(rms, [4, 5, 6, 7, 8, 9]))
    bon = dict(zip(rms, [0.35, 0.34, 0.33, 0.32, 0.31, 0.30]))
    rows = [score(rm, f"q{i}", "right" if i < acc[rm] else "wrong") for rm in rms for i in range(10)]
    from tasks.core.artifacts import write_table

    scores = {rm: str(write_table([r for r in rows if r["rm"] == rm], tmp_path / f"{rm}.parquet", "scores"))
              for rm in rms}
    bon_path = write_bon(tmp_path, rms)
    t = pq.read_table(bon_path).to_pylist()
    pq.write_table(pq.read_table(bon_path).from_pylist([{**r, "judge_score": bon.get(r["rm"], 0.1)} for r in t],
                                                       schema=pq.read_schema(bon_path)), bon_path)
    stage.run({"common": {"seed": 1}, "correlation": {**P, "benchmarks": ["personalised"], "permutations": 999,
                                                      "bootstrap": 100}},
              {"scores": scores, "bon": bon_path}, outs(tmp_path))
    table = {r["metric"]: r for r in pq.read_table(outs(tmp_path)["correlation"]).to_pylist()}
    ndcg, rbo, rho = table["ndcg"], table["rbo"], table["spearman"]
    assert rho["value"] == pytest.approx(-1) and ndcg["value"] > 0.95, "reversed, yet NDCG looks excellent"
    assert ndcg["null_reversed"] == pytest.approx(ndcg["value"]) and rbo["null_reversed"] == pytest.approx(rbo["value"])
    assert ndcg["null_random"] > ndcg["value"] and rbo["null_random"] > rbo["value"]
    assert ndcg["p_value"] == pytest.approx(1.0) and ndcg["p_holm"] == pytest.approx(1.0)
    text = stage.format_table(list(table.values()))
    assert "random" in text.splitlines()[0] and f"{ndcg['null_random']:.3f}" in text


def test_too_few_rms_below_the_stated_minimum_claims_nothing():
    rng = np.random.default_rng(1)
    bench = _side("personalised", dict(zip(RMS5, [0.8, 0.7, 0.6, 0.5, 0.4])), 50, rng)
    down = _side("bon", dict(zip(RMS5, [0.5, 0.4, 0.3, 0.2, 0.1])), 50, rng, kind="score")
    res, points = stage.pairing(bench, down, "accuracy", set(), {**P, "min_rms": 6}, 1, {})
    assert res["status"] == "too few RMs (n=5 < 6)" and len(points) == 5, "the points are still shown"
    assert all(v is None for m in ("spearman", "ndcg") for k, v in res[m].items() if k != "status")
    res, _ = stage.pairing(bench, down, "accuracy", set(), {**P, "min_rms": 5, "bootstrap": 50}, 1, {})
    assert res["status"] == "ok" and res["spearman"]["ci_low"] is not None
    with pytest.raises(Exception, match="correlation.min_rms"):
        stage.check_params({**P, "min_rms": 2})


def test_paired_test_finds_the_benchmark_built_to_predict_better():
    """X orders 8 RMs as the downstream does (up to question noise), Y is unrelated: X - Y is positive
    with a CI above 0 and a small p; swapped, the CI lies at or below 0."""
    rms = [f"rm{i}" for i in range(8)]
    rng = np.random.default_rng(3)
    quality = np.linspace(0.7, 0.3, 8)
    down = _side("bon", dict(zip(rms, quality * 0.6)), 200, rng, kind="score")
    x = _side("x", dict(zip(rms, quality)), 200, rng)
    y = _side("y", dict(zip(rms, rng.permutation(quality))), 200, rng)
    p = {**P, "bootstrap": 300}
    better = paired.compare(x, y, down, rms, "accuracy", p, 5, metrics=("pearson", "spearman"))
    for m, c in better.items():
        assert c["difference"] > 0 and c["ci_low"] > 0 and c["p_value"] < 0.05, (m, c)
    same = paired.compare(x, x, down, rms, "accuracy", p, 5, metrics=("spearman",))["spearman"]
    assert (same["difference"], same["ci_low"], same["ci_high"]) == (0, 0, 0), "both sides on the same resamples"
    worse = paired.compare(y, x, down, rms, "accuracy", p, 5, metrics=("spearman",))["spearman"]
    assert worse["difference"] < 0 and worse["ci_high"] <= 0 and worse["p_value"] > 0.9


def test_worst_domain_accuracy_is_a_second_predictor():
    side = Side("personalised", "scores", per_question={"a": {"q0": 1.0, "q1": 0.0, "q2": 1.0, "q3": 1.0}},
                domains={"q0": "Art", "q1": "Art", "q2": "Society", "q3": "Society"})
    assert side.predictors() == ("accuracy", "worst_domain")
    assert side.value("a") == 0.75 and side.value("a", "worst_domain") == 0.5
    w = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 2.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    assert side.draws(["a"], ["q0", "q1", "q2", "q3"], w, "worst_domain")[:, 0].tolist() == [0.5, 0.0, 0.5]
