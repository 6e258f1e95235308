"""The correlation's downstream sides, by hand: Best-of-N reads the asked method at k = correlation.bon_k (null:
the largest k), RL the answers of the policies each RM trained, averaged over training seeds, never the untrained
baseline; a missing or non-finite score is missing, never a zero; a stage that has not run is one line naming it."""
from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.core import layout
from tasks.core.errors import ConfigError, DataError
from tasks.downstream.correlation import methods as M


def _write(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def _bon(rm, q, k, score, method="expected"):
    return {"rm": rm, "question_id": q, "k": k, "method": method, "judge_score": score}


def test_bon_reads_the_asked_method_at_the_asked_k_and_drops_missing_scores(tmp_path):
    path = _write(tmp_path / "bon.parquet", [
        _bon("a", "q1", 1, 0.1), _bon("a", "q1", 4, 0.4), _bon("a", "q2", 4, None), _bon("a", "q3", 4, math.nan),
        _bon("b", "q1", 4, 0.9, method="first_k"), _bon("b", "q2", 2, 0.2), _bon("b", "q2", 4, 2)])
    side = M.load_bon(path, {"bon_method": "expected", "bon_k": None})
    assert side.name == "bon" and side.source == f"{path}: expected at k=4"
    assert side.per_question == {"a": {"q1": 0.4}, "b": {"q2": 2.0}}
    assert isinstance(side.per_question["b"]["q2"], float)
    at_2 = M.load_bon(path, {"bon_method": "expected", "bon_k": 2})
    assert at_2.per_question == {"b": {"q2": 0.2}} and at_2.source.endswith("expected at k=2")
    assert M.load_bon(path, {"bon_method": "first_k", "bon_k": None}).per_question == {"b": {"q1": 0.9}}


def test_bon_without_rows_of_the_method_or_without_its_table_is_one_line(tmp_path):
    path = _write(tmp_path / "bon.parquet", [_bon("a", "q1", 1, 0.1)])
    with pytest.raises(ConfigError) as exc:
        M.load_bon(path, {"bon_method": "first_k", "bon_k": None})
    assert str(exc.value) == f"correlation.bon_method: no BoN rows with method 'first_k' in {path}"
    with pytest.raises(ConfigError) as exc:
        M.load_bon(str(tmp_path / "none.parquet"), {"bon_method": "expected", "bon_k": None})
    assert str(exc.value) == ("correlation.downstream: 'bon' needs data/bon/per_question.parquet "
                              "(run the bon_report stage first)")
    bad = _write(tmp_path / "bad.parquet", [{"rm": "a", "question_id": "q", "k": 1, "method": "expected"}])
    with pytest.raises(DataError, match="judge_score"):
        M.load_bon(bad, {"bon_method": "expected", "bon_k": None})


def _rl(rm, q, score, baseline=False):
    return {"rm": rm, "baseline": baseline, "question_id": q, "score": score}


def test_rl_is_each_rms_policies_mean_over_seeds_without_the_baseline(tmp_path):
    path = _write(tmp_path / "answers.parquet", [
        _rl("a", "q1", 1.0), _rl("a", "q1", 2.0), _rl("a", "q2", 4.0), _rl("a", "q2", None),
        _rl("b", "q1", math.inf), _rl("b", "q2", 3), _rl("untrained", "q1", 5.0, baseline=True)])
    side = M.load_rl(path, {})
    assert side.name == "rl"
    assert side.source == (f"{path}: the answer of the policy trained with each RM (rl.eval's decoding; the mean "
                           "over its training seeds' policies)")
    assert side.per_question == {"a": {"q1": 1.5, "q2": 4.0}, "b": {"q2": 3.0}}
    with pytest.raises(ConfigError) as exc:
        M.load_rl(None)
    assert str(exc.value) == "correlation.downstream: 'rl' needs data/rl/answers.parquet (run the rl_eval stage first)"


def test_each_method_is_registered_with_its_layout_entry():
    assert [m.name for m in M.methods()] == sorted(layout.DOWNSTREAM)
    for m in M.methods():
        entry = layout.DOWNSTREAM[m.name]
        assert (m.per_question, m.stage, m.report) == (entry["per_question"], entry["stage"], entry["report"])
    assert (M.DOWNSTREAM["bon"].title, M.DOWNSTREAM["rl"].title) == ("Best-of-N", "RL")
    assert (M.DOWNSTREAM["bon"].load, M.DOWNSTREAM["rl"].load) == (M.load_bon, M.load_rl)
    made = M.declared("rl", "T", M.load_rl)
    assert (made.name, made.title, made.load, made.stage) == ("rl", "T", M.load_rl, "rl_eval")


# --- the correlation table as the flow log and the Prefect UI print it ---------------------------------------

def _row(**kw):
    base = {"benchmark": "personalised", "predictor": "accuracy", "downstream": "bon", "n_rms": 6,
            "metric": "pearson", "value": 0.5, "ci_low": 0.1, "ci_high": 0.8, "ci_low_questions": 0.2,
            "ci_high_questions": 0.7, "null_random": 0.0, "null_reversed": -0.5, "p_value": 0.01, "p_holm": 0.03,
            "status": "ok"}
    return {**base, **kw}


def test_the_correlation_table_printed_by_hand():
    from tasks.downstream.correlation.table import format_table

    rows = [_row(),
            _row(predictor=None, downstream="rl", metric="ndcg", value=0.91234, p_value=0.2, p_holm=None,
                 ci_low_questions=None, null_random=None),
            _row(benchmark="generic", n_rms=3, value=None, ci_low=None, ci_high=None, p_value=None, p_holm=None,
                 status="too few RMs (n=3 < 4)")]
    assert format_table(rows, level=0.05).splitlines() == [
        "benchmark     predictor  downstream  n  metric   value  CI (RMs+questions)  CI (questions)  random  reversed"
        "  p       p (Holm)  verdict",
        "personalised  accuracy   bon         6  pearson  0.500  [0.100, 0.800]      [0.200, 0.700]  0.000   -0.500"
        "    0.0100  0.0300    significant",
        "personalised  accuracy   rl          6  ndcg     0.912  [0.100, 0.800]      -               -       -0.500"
        "    0.2000  -         not significant",
        "generic       accuracy   bon         3  pearson  -      -                   [0.200, 0.700]  0.000   -0.500"
        "    -       -         too few RMs (n=3 < 4)"]
    assert format_table([_row(p_holm=0.03)], level=0.02).splitlines()[1].endswith("not significant")
    assert format_table([]) == "  ".join(["benchmark", "predictor", "downstream", "n", "metric", "value",
                                          "CI (RMs+questions)", "CI (questions)", "random", "reversed", "p",
                                          "p (Holm)", "verdict"])


def test_the_table_reads_p_holm_at_005_by_default_and_names_each_predictor():
    from tasks.downstream.correlation.table import format_table

    lines = format_table([_row(p_holm=0.04), _row(p_holm=0.06, predictor="worst_domain")]).splitlines()
    assert lines[1].endswith("  significant") and lines[2].endswith("not significant")
    assert lines[1].split()[1] == "accuracy" and lines[2].split()[1] == "worst_domain"


def test_the_scatter_shows_the_accuracy_predictor_only_and_says_when_nothing_pairs(tmp_path, figures):
    from tasks.downstream.correlation.table import plot

    def point(rm, acc, score, predictor=None, in_distribution=False):
        return {"benchmark": "personalised", "downstream": "bon", "rm": rm, "accuracy": acc, "downstream_score": score,
                "predictor": predictor, "in_distribution": in_distribution}

    rows = [_row(metric=m, predictor=p, value=0.5 if p != "worst_domain" else -0.3)
            for m in ("pearson", "spearman", "ndcg") for p in (None, "worst_domain")]
    points = [point("a", 0.6, 0.7), point("b", 0.5, 0.4, "accuracy"), point("a", 0.2, 0.7, "worst_domain"),
              point("mine", 0.9, 0.9, in_distribution=True)]
    plot(points, rows, 4, tmp_path / "c.png")
    (ax,) = figures["c.png"]
    assert sorted(ax["points"]) == [[0.5, 0.4], [0.6, 0.7], [0.9, 0.9]]
    assert sorted(ax["texts"]) == ["a", "b", "mine (in-distribution)"]
    assert ax["title"].startswith("personalised vs bon (6 RMs): r 0.50 [0.100, 0.800]")
    plot([], [], 4, tmp_path / "none.png")
    assert figures["none.png"][0]["texts"] == ["no benchmark x downstream pairing"]
