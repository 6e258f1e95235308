"""The correlation stage's own rules (tasks/downstream/correlation/stage.py), each worked out by hand: every
params refusal's line and its boundary; a pairing's points and its "too few" row without numbers; one Holm
family over every exploratory p (a comparison's p too), and a per-pair family inside the comparisons; what
metrics/correlation.json says (its status, level, verdict count, who scored a benchmark, who was left out and
why: null baselines and positive controls by kind, RMs a downstream could not use); what the stage reads."""
from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from tasks.core.artifacts import read_table, write_table
from tasks.core.errors import ConfigError
from tasks.downstream.correlation import metrics as M
from tasks.downstream.correlation import stage
from tasks.downstream.correlation.sides import Side
from tests.test_correlation_stage import P, RMS, outs, write_bon, write_scores

QUICK = {**P, "bootstrap": 20, "permutations": 19}


def bad(**change):
    with pytest.raises(ConfigError) as exc:
        stage.check_params({**P, **change})
    return str(exc.value)


# --- params -----------------------------------------------------------------------------------------

def test_missing_keys_are_listed_in_the_order_the_stage_needs_them():
    assert str(pytest.raises(ConfigError, stage.check_params, {}).value) == (
        "correlation: missing key(s) strategy, split, benchmarks, tie_policy, downstream, bon_method, rbo_p, "
        "bootstrap, permutations, ci, min_rms in params")
    only_ci = {k: v for k, v in P.items() if k != "ci"}
    assert str(pytest.raises(ConfigError, stage.check_params, only_ci).value) == \
        "correlation: missing key(s) ci in params"


def test_a_good_params_block_is_returned_as_given():
    p = {**P, "tie_policy": "half", "rbo_p": 0.5, "bootstrap": 1, "permutations": 1, "min_rms": 3, "ci": 0.5,
         "downstream": ["bon", "rl"], "benchmarks": ["generic", "rb2:published"]}
    assert stage.check_params(p) is p
    for value in (1e-9, 0.999):
        stage.check_params({**P, "rbo_p": value, "ci": value})


@pytest.mark.parametrize("key, value, why", [
    ("tie_policy", "drop", "need strict or half (every question must count, so no 'drop')"),
    ("tie_policy", None, "need strict or half (every question must count, so no 'drop')"),
    ("rbo_p", 0, "need a persistence in (0, 1), e.g. 0.9"),
    ("rbo_p", 1, "need a persistence in (0, 1), e.g. 0.9"),
    ("rbo_p", "0.9", "need a persistence in (0, 1), e.g. 0.9"),
    ("bootstrap", 0, "need a positive number of resamples"),
    ("bootstrap", 2.5, "need a positive number of resamples"),
    ("permutations", 0, "need a positive number of resamples"),
    ("permutations", "99", "need a positive number of resamples"),
    ("min_rms", 2, "need an integer >= 3 (two RMs always correlate +-1)"),
    ("min_rms", True, "need an integer >= 3 (two RMs always correlate +-1)"),
    ("min_rms", 3.0, "need an integer >= 3 (two RMs always correlate +-1)"),
    ("ci", 0, "need a level in (0, 1), e.g. 0.95"),
    ("ci", 1, "need a level in (0, 1), e.g. 0.95"),
    ("ci", "0.95", "need a level in (0, 1), e.g. 0.95"),
])
def test_each_bad_value_is_one_line_naming_the_key_why_and_the_value(key, value, why):
    assert bad(**{key: value}) == f"correlation.{key}: {why}, got {value!r}"


def test_downstreams_benchmarks_and_comparisons_are_checked_by_name():
    assert bad(downstream=["bon", "dpo"]) == (
        "correlation.downstream: unknown downstream 'dpo'; valid: bon, rl (or list an external table under "
        "correlation.downstream_tables), got ['bon', 'dpo']")
    assert bad(benchmarks=["personalised", "rb2"]) == (
        "correlation.benchmarks: 'rb2': personalised, generic or <benchmarks entry>:published, "
        "got ['personalised', 'rb2']")
    why = "need pairs of two different benchmarks, e.g. [[personalised, generic]]"
    for pairs in ([["personalised", "personalised"]], [["personalised", "generic", "x"]], ["pg"],
                  [["personalised", "generic"], ["generic"]]):
        assert bad(comparisons=pairs) == f"correlation.comparisons: {why}, got {pairs!r}"
    stage.check_params({**P, "comparisons": [("generic", "personalised")]})
    stage.check_params({**P, "comparisons": None})


def test_the_primary_tests_method_must_be_a_listed_downstream_unless_an_external_table_gives_it():
    primary = {"method": "rl", "strategy": "none"}
    assert bad(primary=primary) == "correlation.primary.method: 'rl' is not in correlation.downstream (bon)"
    assert bad(primary={**primary, "method": "x"}, downstream=["bon", "rl"]) == \
        "correlation.primary.method: 'x' is not in correlation.downstream (bon, rl)"
    stage.check_params({**P, "primary": primary, "downstream_tables": ["ppo.csv"]})
    stage.check_params({**P, "primary": primary, "downstream": []})
    stage.check_params({**P, "primary": {**primary, "method": "bon"}})
    valid = "unknown name 'nope' (did you mean 'none'?); valid: none, oracle, planner, raw_profile"
    assert bad(primary={"method": "bon", "strategy": "nope"}) == f"correlation.primary.strategy[0]: {valid}"
    assert bad(strategy="nope") == f"correlation.strategy[0]: {valid}"


# --- one pairing --------------------------------------------------------------------------------------

def fixed(name, values, source="table.csv"):
    return Side(name, source, fixed=dict(zip("abcdef", values)))


def test_a_pairing_uses_the_rms_both_sides_have_less_the_excluded_and_lists_its_points():
    bench = fixed("personalised", [0.9, 0.7, 0.8, 0.1, 0.5])            # a b c d e
    down = Side("bon", "bon", fixed={"a": 0.3, "b": 0.1, "c": 0.2, "e": 0.4, "z": 0.9})
    labels = {"a": {"shares_llm_with": "bon.judge", "shares_encoder_with": "retrieval", "in_distribution": True}}
    head, points = stage.pairing(bench, down, "accuracy", {"e"}, {**QUICK, "min_rms": 3}, 1, labels)
    assert (head["status"], head["n_rms"], head["rms"], head["predictor"]) == ("ok", 3, ["a", "b", "c"], "accuracy")
    assert head["spearman"]["value"] == pytest.approx(1.0) and set(M.METRICS) <= set(head)
    assert points == [
        {"rm": "a", "benchmark": "personalised", "predictor": "accuracy", "accuracy": 0.9, "benchmark_rank": 1,
         "downstream": "bon", "downstream_score": 0.3, "downstream_rank": 1, "shares_llm_with": "bon.judge",
         "shares_encoder_with": "retrieval", "in_distribution": True},
        {"rm": "b", "benchmark": "personalised", "predictor": "accuracy", "accuracy": 0.7, "benchmark_rank": 3,
         "downstream": "bon", "downstream_score": 0.1, "downstream_rank": 3, "shares_llm_with": "",
         "shares_encoder_with": "", "in_distribution": False},
        {"rm": "c", "benchmark": "personalised", "predictor": "accuracy", "accuracy": 0.8, "benchmark_rank": 2,
         "downstream": "bon", "downstream_score": 0.2, "downstream_rank": 2, "shares_llm_with": "",
         "shares_encoder_with": "", "in_distribution": False}]
    assert all(type(p["benchmark_rank"]) is int and type(p["accuracy"]) is float for p in points)


def test_below_min_rms_a_pairing_claims_no_value_ci_or_p_but_still_draws_its_points():
    bench, down = fixed("generic", [0.9, 0.7, 0.8]), fixed("bon", [0.3, 0.1, 0.2], "bon")
    head, points = stage.pairing(bench, down, "accuracy", set(), {**QUICK, "min_rms": 4}, 1, {})
    status = "too few RMs (n=3 < 4)"
    assert {k: head[k] for k in ("status", "n_rms", "rms")} == {"status": status, "n_rms": 3, "rms": ["a", "b", "c"]}
    for m in M.METRICS:
        assert head[m] == {**dict.fromkeys(stage.FIELDS), "status": status}
    assert len(points) == 3
    assert stage.pairing(bench, down, "accuracy", set(), {**QUICK, "min_rms": 3}, 1, {})[0]["status"] == "ok"


# --- multiplicity ---------------------------------------------------------------------------------------

def holm_by_hand(ps: list[float]) -> list[float]:
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def test_every_exploratory_p_is_adjusted_in_one_holm_family_with_the_comparisons():
    ps = iter([0.001, 0.2, 0.03, 0.5, 0.004, 0.9, 0.01, 0.02, 0.3, 0.04, 0.06, 0.07,
               0.002, 0.8, 0.05, 0.6, 0.011, 0.4])
    results = {k: {m: {"p_value": next(ps)} for m in M.METRICS} for k in (("p", "accuracy", "bon"),
                                                                         ("g", "accuracy", "bon"))}
    compared = {("p", "g", "bon", "accuracy"): {"cells": {m: {"p_value": next(ps)} for m in M.METRICS}}}
    results[("g", "accuracy", "bon")]["rbo"]["p_value"] = None    # not computed: not counted in the family
    stage.holm_one_family(results, compared)
    cells = [*(r[m] for r in results.values() for m in M.METRICS), *(compared[k]["cells"][m]
                                                                   for k in compared for m in M.METRICS)]
    ran = [c for c in cells if c["p_value"] is not None]
    assert len(ran) == 17
    assert [c["p_holm"] for c in ran] == pytest.approx(holm_by_hand([c["p_value"] for c in ran]))
    assert results[("g", "accuracy", "bon")]["rbo"]["p_holm"] is None
    assert results[("p", "accuracy", "bon")]["pearson"]["p_holm"] == pytest.approx(17 * 0.001)


def test_comparisons_skip_a_benchmark_not_scored_and_adjust_each_pair_on_its_own(monkeypatch):
    got = iter([0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.5, 0.001, 0.9, 0.2, 0.3, 0.4] * 4)
    calls = []

    def compare(x, y, down, rms, predictor, p, seed):
        calls.append((x.name, y.name, down.name, tuple(rms), predictor, seed))
        return {m: {**dict.fromkeys(stage.COMPARE_FIELDS), "p_value": next(got)} for m in M.METRICS}

    monkeypatch.setattr(stage.paired, "compare", compare)
    two = Side("personalised", "scores", per_question={rm: {"q1": 1.0, "q2": 0.0} for rm in "abcd"},
               domains={"q1": "art", "q2": "law"})
    benches = {"personalised": two, "generic": fixed("generic", [0.1, 0.2, 0.3, 0.4]),
               "prism": fixed("prism", [0.1, 0.2, 0.3, 0.4])}
    downs = {"bon": fixed("bon", [0.1, 0.2, 0.3, 0.4, 0.5], "bon")}
    p = {**QUICK, "min_rms": 3, "comparisons": [["personalised", "generic"], ["personalised", "absent"],
                                                ["absent", "generic"], ["prism", "generic"]]}
    out = stage.comparisons(benches, downs, {"d"}, p, 7)
    assert list(out) == [("personalised", "generic", "bon", "accuracy"), ("prism", "generic", "bon", "accuracy")], \
        "worst_domain only where both benchmarks have it; a benchmark this run did not score is skipped"
    assert calls[0] == ("personalised", "generic", "bon", ("a", "b", "c"), "accuracy", 7)
    assert {k: (r["status"], r["n_rms"]) for k, r in out.items()} == {k: ("ok", 3) for k in out}
    for key in out:   # each pair is its own family of six
        cells = [out[key]["cells"][m] for m in M.METRICS]
        assert [c["p_holm"] for c in cells] == pytest.approx(holm_by_hand([c["p_value"] for c in cells]))
    assert out[("prism", "generic", "bon", "accuracy")]["cells"]["spearman"]["p_holm"] == pytest.approx(0.006)
    few = stage.comparisons(benches, downs, {"c", "d"}, p, 7)
    assert {k: (r["status"], r["n_rms"]) for k, r in few.items()} == {k: ("too few RMs (n=2 < 3)", 2) for k in few}
    assert all(c == dict.fromkeys(stage.COMPARE_FIELDS) for r in few.values() for c in r["cells"].values())
    assert len(calls) == 2, "no test run below the minimum"


def test_positive_controls_are_found_by_kind_never_by_name():
    params = {"scoring": {"rms": {"ladder_1": {"kind": "mixture"}, "mixture": {"kind": "random"}, "x": None}}}
    assert stage.positive_controls(params) == {"ladder_1"}
    assert stage.positive_controls({}) == set() == stage.positive_controls({"scoring": {"rms": None}})


# --- metrics/correlation.json ------------------------------------------------------------------------------

def cell(p_value, p_holm, value=0.5):
    return {"value": value, "ci_low": 0.123456, "ci_high": 0.9, "ci_low_questions": None, "ci_high_questions": None,
            "p_value": p_value, "p_holm": p_holm, "null_random": 0.1, "null_reversed": -1.0}


def test_the_metrics_say_the_status_level_verdicts_and_who_scored_each_side():
    p = {**QUICK, "primary": {"alpha": 0.01}}
    ok = {"status": "ok", "n_rms": 5, "rms": list("abcde"),
          **{m: cell(0.001, 0.004 if m == "pearson" else 0.02) for m in M.METRICS}}
    few = {"status": "too few RMs (n=2 < 5)", "n_rms": 2, "rms": ["a", "b"],
           **{m: {**dict.fromkeys(stage.FIELDS), "status": "too few"} for m in M.METRICS}}
    bench = Side("personalised", "scores", per_question={"a": {"q": 1.0}, "b": {"q": 0.0}})
    listed = Side("rb2", "bench_scores", fixed={"a": 0.123456})
    pub = Side("prism", "published", fixed={"b": 0.5}, rule="acc")
    down = Side("bon", "bon", fixed={"a": 0.25, "b": 0.75})
    versus = {("personalised", "rb2", "bon", "worst_domain"): {
        "status": "ok", "n_rms": 5, "cells": {m: {"difference": 0.2, "ci_low": -0.1, "ci_high": 0.3, "p_value": 0.001,
                                                  "p_holm": 0.009} for m in M.METRICS}}}
    results = {("personalised", "accuracy", "bon"): ok, ("rb2", "worst_domain", "bon"): few}
    m = stage.build_metrics(p, {"personalised": bench, "rb2": listed, "prism": pub}, {"bon": down}, results, versus,
                            {"z", "y"})
    assert m["status"] == "ok" and m["alpha"] == 0.01 and m["excluded_rms"] == ["y", "z"] and m["min_rms"] == 5
    assert {k: m[k] for k in ("strategy", "split", "tie_policy", "rbo_p", "bootstrap", "permutations", "ci")} == \
        {k: p[k] for k in ("strategy", "split", "tie_policy", "rbo_p", "bootstrap", "permutations", "ci")}
    mine = m["correlations"]["personalised"]["bon"]
    assert mine["pearson"]["verdict"] == M.SIGNIFICANT and mine["spearman"]["verdict"] == M.NOT_SIGNIFICANT, \
        "read at the primary's alpha, on the Holm-adjusted p"
    assert mine["pearson"]["ci_low"] == 0.1235 and (mine["n_rms"], mine["rms"]) == (5, list("abcde"))
    assert m["correlations"]["rb2:worst_domain"]["bon"]["spearman"]["verdict"] == "too few RMs (n=2 < 5)"
    assert m["significant"] == 1
    assert m["comparisons"] == {"personalised vs rb2:worst_domain": {"bon": {
        "status": "ok", "n_rms": 5, **{k: {"difference": 0.2, "ci_low": -0.1, "ci_high": 0.3, "p_value": 0.001,
                                            "p_holm": 0.009, "verdict": M.SIGNIFICANT} for k in M.METRICS}}}}
    assert m["benchmarks"] == {
        "personalised": {"source": "scores", "accuracy": {"a": 1.0, "b": 0.0}},
        "rb2": {"source": "bench_scores", "scored_by": stage.published.label(listed), "accuracy": {"a": 0.1235}},
        "prism": {"source": "published", "scored_by": "published: acc", "accuracy": {"b": 0.5}}}
    assert m["downstream"] == {"bon": {"source": "bon", "score": {"a": 0.25, "b": 0.75}}}
    assert m["ci_method"] == stage.METHOD == m["conventions"]["ci"]
    assert m["conventions"]["comparisons"] == ("X vs Y: correlation of X minus that of Y with the same downstream, "
                                               "same resamples of RMs and questions; p one-sided (H1: X predicts better)")
    assert (mine["status"], m["correlations"]["rb2:worst_domain"]["bon"]["status"]) == ("ok", "too few RMs (n=2 < 5)")


def test_without_an_ok_pairing_the_status_is_that_of_the_widest_one():
    p = dict(QUICK)
    rows = {("a", "accuracy", "bon"): {"status": "too few RMs (n=2 < 5)", "n_rms": 2, "rms": []},
            ("b", "accuracy", "bon"): {"status": "too few RMs (n=4 < 5)", "n_rms": 4, "rms": []}}
    for r in rows.values():
        r.update({m: {**dict.fromkeys(stage.FIELDS), "status": r["status"]} for m in M.METRICS})
    assert stage.build_metrics(p, {}, {}, rows, {}, set())["status"] == "too few RMs (n=4 < 5)"
    assert stage.build_metrics(p, {}, {}, {}, {}, set())["status"] == "no pairings"
    assert stage.build_metrics(p, {}, {}, {}, {}, set())["alpha"] == 0.05, "1 - ci without a primary"


def test_helpers_round_to_four_places_and_key_a_predictor_after_its_benchmark():
    assert stage._r4(None) is None and stage._r4(0.123456) == 0.1235 and type(stage._r4(1)) is float
    assert stage._key("generic", "accuracy") == "generic" and stage._key("generic", "worst_domain") == \
        "generic:worst_domain"


# --- the stage, end to end on small tables --------------------------------------------------------------

def run(tmp_path, rms=RMS, extra=("random",), scoring=None, kinds=None, **change):
    scores = write_scores(tmp_path, rms, extra)
    for rm, kind in (kinds or {}).items():   # the kind the scores table states, as the score stage writes it
        rows = [{**r, "rm_kind": kind} for r in read_table(scores[rm], "scores").to_pylist()]
        write_table(rows, scores[rm], "scores")
    inputs = {"scores": scores, "bon": write_bon(tmp_path, rms), "bench_scores": {}}
    params = {"common": {"seed": 3}, "correlation": {**QUICK, "exclude_rms": [], **change},
              "scoring": {"rms": scoring or {rm: {"kind": "test"} for rm in [*rms, *extra]}}}
    return stage.run(params, inputs, outs(tmp_path))


def test_null_baselines_and_positive_controls_are_left_out_by_kind(tmp_path):
    scoring = {**{rm: {"kind": "test"} for rm in RMS}, "random": {"kind": "test"}, "f": {"kind": "mixture"},
               "unscored": {"kind": "length-longer"}}
    m = run(tmp_path, scoring=scoring, kinds={"random": "random"})
    assert m["null_baselines"] == ["random", "unscored"] and m["positive_controls"] == ["f"], \
        "the kind the scores state; the params' for an RM without scores"
    assert m["excluded_rms"] == ["f", "random", "unscored"] and m["include_null_baselines"] is False
    assert m["correlations"]["personalised"]["bon"]["rms"] == ["a", "b", "c", "d", "e"]
    m = run(tmp_path, scoring=scoring, kinds={"random": "random"}, include_null_baselines=True)
    assert m["excluded_rms"] == ["f"] and m["include_null_baselines"] is True
    assert m["correlations"]["personalised"]["bon"]["rms"] == ["a", "b", "c", "d", "e", "random"]
    m = run(tmp_path, scoring={**scoring, "random": {"kind": "random"}}, exclude_rms=["a"])
    assert m["null_baselines"] == ["unscored"], "the scores say `test`: the scores' kind wins"
    assert m["correlations"]["personalised"]["bon"]["rms"] == ["b", "c", "d", "e", "random"]
    assert m["primary"] == {"status": "none pre-registered (correlation.primary)"} and m["exploratory"] is True


def test_rms_a_downstream_could_not_use_are_named_and_the_split_half_counted(tmp_path):
    inputs = {"scores": write_scores(tmp_path, RMS, ("g",)), "bon": write_bon(tmp_path, RMS), "bench_scores": {}}
    params = {"common": {"seed": 3}, "correlation": {**QUICK, "exclude_rms": ["a"]},
              "scoring": {"rms": {rm: {"kind": "test"} for rm in [*RMS, "g"]}}}
    m = stage.run(params, inputs, outs(tmp_path))
    assert m["not_bon_capable"] == ["g"] and m["not_capable"] == {"bon": ["g"]}, "scored, but no BoN answers"
    assert (m["benchmark_n"], m["downstream_n"], m["overlap"]) == (10, 10, 10)
    assert m["shares_llm_with"] == {} and m["in_distribution"] == []
    rows = pq.read_table(outs(tmp_path)["correlation"]).to_pylist()
    assert [(r["benchmark"], r["metric"]) for r in rows] == [(b, x) for b in ("personalised", "generic")
                                                             for x in M.METRICS]
    assert all(r["n_rms"] == 5 and r["predictor"] == "accuracy" for r in rows), "g has no BoN answers; a is excluded"
    points = pq.read_table(outs(tmp_path)["points"]).to_pylist()
    assert sorted((p["benchmark"], p["rm"]) for p in points) == sorted((b, rm) for b in ("personalised", "generic")
                                                                       for rm in "bcdef"), "every pairing's points"


def test_a_benchmarks_entry_named_like_a_scored_benchmark_is_refused(tmp_path, monkeypatch):
    clash = {"generic": Side("generic", "bench_scores", fixed={"a": 1.0})}
    monkeypatch.setattr(stage, "load_list_benchmarks", lambda folders, p: clash)
    with pytest.raises(ConfigError) as exc:
        run(tmp_path)
    assert str(exc.value) == "benchmarks.generic: the name of a scored benchmark; give the entry another name"


def test_every_other_benchmark_is_compared_with_ours(tmp_path, monkeypatch):
    others = {"rb2": Side("rb2", "bench_scores", fixed=dict(zip(RMS, [0.6, 0.5, 0.4, 0.3, 0.2, 0.1])))}
    monkeypatch.setattr(stage, "load_list_benchmarks", lambda folders, p: others)
    m = run(tmp_path, comparisons=[["personalised", "rb2"]])
    assert set(m["comparisons"]) == {"personalised vs rb2"}, "asked already: not twice"
    m = run(tmp_path)
    assert set(m["comparisons"]) == {"personalised vs generic", "personalised vs rb2"}
    assert m["benchmarks"]["rb2"]["scored_by"] == stage.published.label(others["rb2"])
    m = run(tmp_path, benchmarks=["generic"], comparisons=[])
    assert m["comparisons"] == {}, "ours not in the run: nothing to compare with"


# --- what the stage reads ------------------------------------------------------------------------------------

def test_the_stage_reads_the_scored_rms_every_benchmark_folder_and_only_the_asked_downstreams(tmp_path, monkeypatch):
    from tasks.core import layout

    monkeypatch.chdir(tmp_path)
    for rm in ("a", "c"):
        path = tmp_path / layout.scores(rm)["scores"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    root = tmp_path / layout.BENCH_SCORES_DIR
    (root / "rb2").mkdir(parents=True)
    (root / "prism").mkdir()
    (root / "stray.txt").write_text("")
    params = {"scoring": {"rms": {"c": {}, "a": {}, "b": {}}}, "correlation": {"downstream": ["bon"]}}
    got = stage.stage_inputs(params, None, {"bon": "bon.parquet", "rl": "rl.parquet"})
    assert got == {"scores": {"a": layout.scores("a")["scores"], "c": layout.scores("c")["scores"]},
                   "bench_scores": {"prism": str(root.relative_to(tmp_path) / "prism"),
                                    "rb2": str(root.relative_to(tmp_path) / "rb2")},
                   "bon": "bon.parquet", "rl": None}
    os.rename(root, tmp_path / "elsewhere")
    assert stage.stage_inputs(params, None, {})["bench_scores"] == {}


def test_the_summary_is_the_table_at_the_runs_level(tmp_path):
    out = outs(tmp_path)
    m = run(tmp_path)
    rows = stage.stage_rows(out)
    assert rows == pq.read_table(out["correlation"]).to_pylist()
    assert stage.stage_summary(out, m) == stage.format_table(rows, m["alpha"])
    assert stage.stage_summary(out, {}) == stage.format_table(rows, 0.05)
    lenient, strict = stage.stage_summary(out, {"alpha": 1.0}), stage.stage_summary(out, {"alpha": 1e-9})
    assert lenient == stage.format_table(rows, 1.0) and lenient != strict, "read at the run's alpha"


def test_the_metrics_give_each_predictors_value_and_read_the_raw_p_where_no_holm_p():
    two = Side("personalised", "scores", per_question={"a": {"q1": 1.0, "q2": 0.0, "q3": 1.0}},
               domains={"q1": "art", "q2": "law", "q3": "law"})
    raw = {"status": "ok", "n_rms": 5, "rms": list("abcde"), **{m: cell(0.001, None) for m in M.METRICS}}
    m = stage.build_metrics(dict(QUICK), {"personalised": two}, {}, {("personalised", "accuracy", "bon"): raw}, {},
                            set())
    assert m["benchmarks"]["personalised"] == {"source": "scores", "accuracy": {"a": 0.6667},
                                               "worst_domain": {"a": 0.5}}
    assert {c["verdict"] for c in m["correlations"]["personalised"]["bon"].values() if isinstance(c, dict)} == \
        {M.SIGNIFICANT}, "no Holm p: the raw one decides"
    assert m["significant"] == len(M.METRICS)


def test_a_comparison_below_the_minimum_reads_as_its_status_not_as_a_missing_p():
    few = {("personalised", "generic", "bon", "accuracy"): {
        "status": "too few RMs (n=2 < 5)", "n_rms": 2, "cells": {m: dict.fromkeys(stage.COMPARE_FIELDS) for m in M.METRICS}}}
    m = stage.build_metrics(dict(QUICK), {}, {}, {}, few, set())
    cell = m["comparisons"]["personalised vs generic"]["bon"]
    assert cell["status"] == "too few RMs (n=2 < 5)" and cell["n_rms"] == 2
    assert {cell[x]["verdict"] for x in M.METRICS} == {"too few RMs (n=2 < 5)"}


def test_a_worst_domain_pairing_ranks_by_the_worst_domain():
    bench = Side("personalised", "scores", domains={"q1": "art", "q2": "law"},
                 per_question={"a": {"q1": 1.0, "q2": 0.0}, "b": {"q1": 0.4, "q2": 0.4}, "c": {"q1": 0.2, "q2": 0.2}})
    down = fixed("bon", [0.1, 0.3, 0.2], "bon")
    head, points = stage.pairing(bench, down, "worst_domain", set(), {**QUICK, "min_rms": 3}, 1, {})
    assert [(p["rm"], p["accuracy"], p["benchmark_rank"], p["predictor"]) for p in points] == [
        ("a", 0.0, 3, "worst_domain"), ("b", 0.4, 1, "worst_domain"), ("c", 0.2, 2, "worst_domain")]
    assert head["spearman"]["value"] == pytest.approx(1.0), "by accuracy (0.5, 0.4, 0.2) it would be -0.5"


def test_nothing_downstream_is_one_line_saying_what_to_list(tmp_path):
    with pytest.raises(ConfigError) as exc:
        stage.run({"common": {"seed": 1}, "correlation": {**QUICK, "downstream": []}}, {"scores": {}}, outs(tmp_path))
    assert str(exc.value) == ("correlation: nothing downstream to compare with: list 'bon' in correlation.downstream "
                              "or a file in correlation.downstream_tables")
    assert not (tmp_path / "out").exists(), "refused before any output"


def test_a_benchmark_asked_by_its_published_score_is_not_looked_for_in_our_scores(tmp_path, monkeypatch):
    seen = {}

    def published(names, folders, strategy):
        seen.update(names=names, strategy=strategy)
        return {n: Side(n, "published", fixed=dict(zip(RMS, [0.6, 0.5, 0.4, 0.3, 0.2, 0.1])), rule="r") for n in names}
    monkeypatch.setattr(stage.published, "load_published", published)
    m = run(tmp_path, benchmarks=["personalised", "rb2:published"], comparisons=[])
    assert (seen["names"], seen["strategy"]) == (["rb2"], "none") and set(m["correlations"]) == {"personalised", "rb2"}
    assert m["benchmarks"]["rb2"]["scored_by"] == "published: r"


def test_the_pre_registered_test_reads_the_same_scores_and_downstream_as_the_stage(tmp_path):
    weights = dict(zip(RMS, [1.0, 0.8, 0.6, 0.4, 0.2, 0.0]))
    params = {"common": {"seed": 2604, "cache_dir": str(tmp_path / "cache")}, "bon": {"n": 4, "max_k": 4},
              "scoring": {"rms": {rm: {"kind": "mixture", "weight": w} for rm, w in weights.items()}},
              "correlation": {**QUICK, "bon_k": 4, "primary": {
                  "benchmark": "personalised", "strategy": "none", "method": "bon", "statistic": "pearson",
                  "alternative": "greater", "alpha": 0.05, "rms": ["*"]},
                  "power": {"effect": 0.9, "pairs": 4, "questions": 4, "simulations": 10, "flips": 19}}}
    inputs = {"scores": write_scores(tmp_path, RMS), "bon": write_bon(tmp_path, RMS), "bench_scores": {}}
    pr = stage.run(params, inputs, outs(tmp_path))["primary"]
    assert (pr["status"], pr["rms"], pr["n_questions"], pr["n_pairs"]) == ("ok", RMS, 10, 10)
    assert pr["estimate"] == pytest.approx(1.0) and pr["positive_control"] is True


def test_what_an_rm_shares_with_the_judges_is_listed_per_role(tmp_path, monkeypatch):
    from tasks.core import rm_labels

    said = {rm: {"shares_llm_with": "", "shares_encoder_with": "", "in_distribution": False} for rm in RMS}
    said["a"] = {"shares_llm_with": "bon.judge, pairs.judge", "shares_encoder_with": "", "in_distribution": True}
    said["b"] = {"shares_llm_with": "", "shares_encoder_with": "retrieval", "in_distribution": False}
    monkeypatch.setattr(rm_labels, "labels", lambda params: said)
    m = run(tmp_path)
    assert m["shares_llm_with"] == {"a": ["bon.judge", "pairs.judge"]}
    assert m["shares_encoder_with"] == {"b": ["retrieval"]} and m["in_distribution"] == ["a"]


@pytest.mark.parametrize("ours, other", [("generic", "personalised"), ("personalised", "generic")])
def test_an_external_table_may_not_take_our_benchmarks_names_even_when_the_run_leaves_one_out(tmp_path, ours, other):
    from tasks.core.errors import DataErrors

    table = tmp_path / "ext.csv"
    table.write_text("rm,benchmark,accuracy\na," + other + ",0.5\n")
    with pytest.raises(DataErrors) as exc:
        run(tmp_path, benchmarks=[ours], comparisons=[], baselines=[str(table)])
    assert f"'{other}' is computed by the pipeline" in str(exc.value)
