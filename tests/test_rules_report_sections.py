"""The report's sections as the page states them (tasks/ops/report/downstream.py), worked out by hand and fast
(no page, no browser): pair validity per source and domain; humans and the LLM proxy side by side; the
Best-of-N curve's table and chart, and above the per-RM limit the null baselines as one range; the RL rows in
their order with the baseline first; the correlation table's verdicts at the run's level, its scatters, its
paired comparisons; the pre-registered test in one sentence; the data card."""
from __future__ import annotations

import pytest

from tasks.ops.report import board, charts, downstream as D
from tasks.ops.report.fmt import DASH

BLOCK = {"pairs": 12, "unusable": 1, "validity_rate": 0.91667, "judge_chosen_mean": 4.5, "judge_rejected_mean": 2.25,
         "length_ratio": {"mean": 1.02, "within_15pct_share": 0.75}}
ROW = {"pairs": "12", "unusable": "1", "validity": "91.7%", "chosen": "4.500", "rejected": "2.250",
       "length_ratio": "1.020", "within_15pct": "75.0%"}
EMPTY_ROW = dict.fromkeys(ROW, DASH)


# --- pair validity ------------------------------------------------------------------------------------------

def test_validity_lists_each_pair_source_overall_then_by_domain_and_the_generic_baseline_after():
    pairs = {"judge": "qwen", "keep_invalid": False, "scalar": 3, "broken": {"per_domain": {}},
             "reference": {"overall": BLOCK, "per_domain": {"law": {}, "art": BLOCK}},
             "generate": {"overall": {}}}
    got = D.validity(pairs, {"reference": {"overall": BLOCK}, "judge": "qwen", "n": 3},
                     {"pairs": {"source": "reference"}})
    assert got == {"judge": "qwen", "scored_source": "reference", "keep_invalid": False, "sources": [
        {"name": "generate", "rows": [{"label": "all", **EMPTY_ROW}]},
        {"name": "reference", "rows": [{"label": "all", **ROW}, {"label": "art", **ROW}, {"label": "law", **EMPTY_ROW}]},
        {"name": "generic (reference)", "rows": [{"label": "all", **ROW}]}]}
    assert D.validity(None, {"x": {"overall": BLOCK}}, {})["sources"][0]["name"] == "generic (x)"
    assert D.validity(None, {"x": {"overall": BLOCK}}, {})["judge"] is None
    assert D.validity({"judge": "j", "x": {"no": 1}}, None, {}) is None, "no source with an overall block: no section"
    assert D.validity(None, None, {}) is None


# --- the human evaluation -----------------------------------------------------------------------------------

def summary(verdict="parity holds"):
    per_dim = {d: {"all": {"chosen": {"mean": 4.0 + i / 8}, "rejected": {"mean": 3.0}}}
               for i, d in enumerate(D.DIMENSIONS)}
    return {"annotators": 3, "items": 20, "ratings": 120, "invalid_ratings": 2,
            "parity": {"verdict": verdict, "holds": True, "general_gap": 0.123, "personal_gap": 1.0,
                       "thresholds": {"general": 0.5}},
            "wilcoxon": {"helpfulness": {"n": 20, "statistic": 12.25, "p_value": 0.0004, "p_holm": 0.0321,
                                         "rank_biserial": 0.555}},
            "agreement": {"helpfulness": {"alpha_ordinal": 0.6789, "annotators": 3}},
            "per_dimension": per_dim}


def test_humans_and_the_proxy_stand_side_by_side_each_dimension_in_order():
    m = {"source": "annotations/", "human": summary(), "annotations": {"human_ratings": 40, "files": ["a", "b"],
                                                                       "quarantined_rows": 2}, "paper": {"n": 5}}
    got = D.human_eval(m)
    assert {k: got[k] for k in ("source", "proxy", "proxy_llm", "human_ratings", "files", "quarantined", "paper")} == \
        {"source": "annotations/", "proxy": None, "proxy_llm": None, "human_ratings": 40, "files": 2,
         "quarantined": 2, "paper": {"n": 5}}
    h = got["human"]
    assert {k: h[k] for k in ("annotators", "items", "ratings", "invalid_ratings", "verdict", "holds", "general_gap",
                              "personal_gap", "thresholds")} == {
        "annotators": 3, "items": 20, "ratings": 120, "invalid_ratings": 2, "verdict": "parity holds", "holds": True,
        "general_gap": "0.12", "personal_gap": "1.00", "thresholds": {"general": 0.5}}
    assert [d["dimension"] for d in h["dimensions"]] == ["factuality", "relevance", "helpfulness", "personal fit"]
    assert [(d["chosen"], d["rejected"]) for d in h["dimensions"]] == [("4.00", "3.00"), ("4.12", "3.00"),
                                                                       ("4.25", "3.00"), ("4.38", "3.00")]
    assert h["dimensions"][2] == {"dimension": "helpfulness", "chosen": "4.25", "rejected": "3.00", "n": "20",
                                  "statistic": "12.2", "p": "< 0.001", "p_holm": "0.032", "rank_biserial": "0.56",
                                  "alpha": "0.68", "annotators": "3"}
    assert h["dimensions"][0] == {"dimension": "factuality", "chosen": "4.00", "rejected": "3.00", **dict.fromkeys(
        ("n", "statistic", "p", "p_holm", "rank_biserial", "alpha", "annotators"), DASH)}


def test_no_parity_block_reads_insufficient_data_and_the_proxy_names_its_llm():
    got = D.human_eval({"llm-proxy": {**summary(), "parity": None, "llm": "qwen"}})
    assert got["human"] is None and got["proxy_llm"] == "qwen"
    assert (got["proxy"]["verdict"], got["proxy"]["holds"], got["proxy"]["general_gap"]) == \
        ("insufficient data", None, DASH)
    assert (got["human_ratings"], got["files"], got["quarantined"], got["paper"]) == (0, 0, 0, {})
    assert D.human_eval(None) is None


# --- Best-of-N -----------------------------------------------------------------------------------------------

def bon_row(rm, k, score, method="expected", domain="all", lo=None, hi=None, gain=None, n=10):
    return {"rm": rm, "k": k, "method": method, "domain": domain, "judge_score": score,
            "ci_low": score - 0.1 if lo is None else lo, "ci_high": score + 0.1 if hi is None else hi,
            "gain_over_k1": gain, "n_questions": n}


def test_the_bon_table_reads_the_reported_method_in_all_domains_reference_lines_last():
    curve = [bon_row("b", 1, 0.5, gain=0.0), bon_row("b", 4, 0.7, gain=0.2), bon_row("a", 1, 0.4, lo=0.4, hi=0.4),
             bon_row("(oracle)", 4, 0.9), bon_row("(random)", 1, 0.3), bon_row("a", 4, 0.95, domain="art"),
             bon_row("a", 4, 0.0, method="first_k")]
    got = D.bon(curve, {"judge": "qwen", "skipped_k": [16]})
    assert got["ks"] == [1, 4] and (got["judge"], got["skipped"]) == ("qwen", [16])
    assert [(r["rm"], r["reference"]) for r in got["table"]] == [("a", False), ("b", False), ("(oracle)", True),
                                                                 ("(random)", True)]
    a, b = got["table"][0]["cells"], got["table"][1]["cells"]
    assert a == [{"score": "0.400", "ci": "[0.400, 0.400] (n = 10; zero width: every resample gave the same value)",
                  "gain": DASH, "n": 10}, None], "k = 4 only in another domain and method: no cell"
    assert b[1] == {"score": "0.700", "ci": "[0.600, 0.800]", "gain": "+0.200", "n": 10}
    assert (got["nulls"], got["left_out"], got["drawn"]) == (0, 0, 2)
    series = {s["name"]: s for s in got["chart"]["series"]}
    assert set(series) == {"a", "b", "(oracle)", "(random)"}
    assert series["(oracle)"]["dash"] and not series["b"]["dash"]
    band = [tuple(map(float, xy.split(","))) for xy in series["b"]["band"].split()]
    assert [x for x, _ in band] == [56.0, 490.0, 490.0, 56.0], "upper bounds at k = 1, 4, then lower bounds back"
    assert band[0][1] < band[3][1] and band[1][1] < band[2][1], "the upper bound drawn above the lower"
    assert [p["title"] for p in series["b"]["points"]] == ["b, k = 1: 0.500 [0.400, 0.600]",
                                                          "b, k = 4: 0.700 [0.600, 0.800]"]
    assert [t["label"] for t in got["chart"]["xticks"]] == ["1", "4"]
    assert (got["chart"]["x_label"], got["chart"]["y_label"]) == ("k (best of k samples)", "judge score")
    first = D.bon(curve, {"reported_method": "first_k", "skipped_ks": [8]})
    assert first["ks"] == [4] and [r["rm"] for r in first["table"]] == ["a"] and first["skipped"] == [8]
    assert D.bon([], {}) is None and D.bon(None, None) is None


def test_above_the_per_rm_limit_nulls_are_one_range_and_the_chart_draws_the_best(monkeypatch):
    monkeypatch.setattr(board, "MAX_RMS_SHOWN", 3)
    scores = {"a": (0.5, 0.6), "b": (0.5, 0.9), "c": (0.5, 0.7), "d": (0.5, 0.7), "e": (0.5, None),
              "n1": (0.2, 0.3), "n2": (0.4, 0.1), "n3": (None, 0.5)}
    gains = {"n1": 0.1, "n2": -0.3, "n3": None}
    curve = [bon_row(rm, k, s, gain=gains.get(rm)) for rm, ss in scores.items() for k, s in zip((1, 4), ss)
             if s is not None] + [bon_row("(oracle)", 4, 0.95)]
    got = D.bon(curve, {}, nulls={"n1", "n2", "n3"})
    assert [r["rm"] for r in got["table"]] == ["a", "b", "c", "d", "e", "(oracle)", "null baselines (3)"]
    drawn = [s["name"] for s in got["chart"]["series"]]
    assert sorted(drawn) == sorted(["b", "c", "d", "(oracle)", "null baselines (3)"]), \
        "the 3 best at k = 4 (a tie broken by name; no score at k = 4 last)"
    assert (got["nulls"], got["left_out"], got["drawn"]) == (3, 2, 3)
    nulls = got["table"][-1]
    assert nulls == {"rm": "null baselines (3)", "reference": True, "cells": [
        {"score": "0.200–0.400", "ci": "range of 2 RMs, median 0.300", "gain": "median -0.100", "n": None},
        {"score": "0.100–0.500", "ci": "range of 3 RMs, median 0.300", "gain": "median -0.100", "n": None}]}
    line = next(s for s in got["chart"]["series"] if s["name"] == "null baselines (3)")
    assert line["dash"] and [p["title"] for p in line["points"]] == [
        "null baselines (3), k = 1: median 0.300, range 0.200–0.400",
        "null baselines (3), k = 4: median 0.300, range 0.100–0.500"]


def test_a_null_range_without_scores_at_a_k_leaves_that_cell_empty():
    at = {("n1", 1): bon_row("n1", 1, 0.2), ("n1", 4): {**bon_row("n1", 4, 0.0), "judge_score": None}}
    line, row = D._null_range(["n1"], at, [1, 4])
    assert row["cells"][1] is None and row["cells"][0]["gain"] == DASH and row["cells"][0]["ci"] == \
        "range of 1 RMs, median 0.200"
    assert [p["x"] for p in line["points"]] == [1] and line["points"][0] == {
        "x": 1, "y": 0.2, "lo": 0.2, "hi": 0.2, "title": "null baselines (1), k = 1: median 0.200, range 0.200–0.200"}
    assert line["reference"] and row["reference"] and line["name"] == row["rm"] == "null baselines (1)"


def test_at_the_limit_every_rm_is_listed_and_drawn(monkeypatch):
    monkeypatch.setattr(board, "MAX_RMS_SHOWN", 3)
    curve = [bon_row(rm, 1, 0.5) for rm in ("a", "b", "n1", "(oracle)")]
    got = D.bon(curve, None, nulls={"n1"})
    assert [r["rm"] for r in got["table"]] == ["a", "b", "n1", "(oracle)"] and got["nulls"] == 0
    assert D._bon_shown(["a", "b", "c", "d"], {}, [], set()) == (["a", "b", "c", "d"],) * 2 + ([],)


# --- RL ------------------------------------------------------------------------------------------------------

def test_rl_rows_put_the_baseline_first_then_the_best_policy_with_its_gain_and_seeds():
    rows = [{"rm": "a", "algorithm": "ppo", "mean_score": 0.5, "ci_low": 0.4, "ci_high": 0.6, "questions": 10,
             "seeds": 3, "seed_sd": 0.05, "seed_range": 0.1, "scored": 30, "invalid_answers": 1,
             "unparseable_verdicts": 0, "gain_over_baseline": 0.2, "gain_ci_low": 0.1, "gain_ci_high": 0.3,
             "reward_failures": 2},
            {"rm": "b", "mean_score": 0.7, "questions": 10},
            {"rm": "c", "mean_score": None},
            {"rm": "base", "baseline": True, "mean_score": 0.3, "questions": 10, "gain_over_baseline": 0.0,
             "gain_ci_low": 0.0, "gain_ci_high": 0.0}]
    got = D.rl(rows, {"status": "ok", "decoding": "greedy", "judge": "qwen", "invalid_score": 0,
                      "seed_spread": 0.1})
    assert [r["rm"] for r in got["rows"]] == ["base", "b", "a", "c"]
    base, b, a, c = got["rows"]
    assert (base["baseline"], base["gain"], base["gain_ci"], base["seeds"]) == (True, DASH, "", DASH)
    assert a == {"rm": "a", "algorithm": "ppo", "baseline": False, "score": "0.500", "ci": "[0.400, 0.600]",
                 "questions": "30", "scored": "30", "seeds": "3 (sd 0.050, range 0.100)", "invalid": "1",
                 "unparseable": "0", "gain": "+0.200", "gain_ci": "[0.100, 0.300]", "reward_failures": "2"}
    assert (b["seeds"], b["questions"], b["gain"], b["ci"]) == ("one seed", "10", DASH, "")
    assert (c["questions"], c["score"]) == ("0", DASH)
    assert [x["label"] for x in got["chart"]["bars"]] == ["base (baseline)", "b", "a"], "no score: no bar"
    assert [x["reference"] for x in got["chart"]["bars"]] == [True, False, False]
    assert got["chart"]["x_label"] == "judge score"
    assert [(x["title"], x["whisker"] is None) for x in got["chart"]["bars"]] == [
        ("base (baseline): 0.300", True), ("b: 0.700", True), ("a: 0.500", False)]
    assert {k: got[k] for k in ("status", "decoding", "judge", "invalid_score", "seed_spread")} == {
        "status": "ok", "decoding": "greedy", "judge": "qwen", "invalid_score": 0, "seed_spread": 0.1}
    assert D.rl(None, {}) is None and D.rl([], None)["rows"] == []


# --- the correlation section ------------------------------------------------------------------------------

def corr_row(bench, metric, p, p_holm, predictor="accuracy", down="bon", status="ok", value=0.5, n=6):
    return {"benchmark": bench, "predictor": predictor, "downstream": down, "metric": metric, "value": value,
            "ci_low": 0.1, "ci_high": 0.9, "ci_low_questions": 0.2, "ci_high_questions": 0.8, "null_random": 0.01,
            "null_reversed": -1.0, "p_value": p, "p_holm": p_holm, "status": status, "n_rms": n}


def point(rm, bench="personalised", acc=0.5, score=0.4, predictor="accuracy", **labels):
    return {"rm": rm, "benchmark": bench, "predictor": predictor, "accuracy": acc, "benchmark_rank": 1,
            "downstream": "bon", "downstream_score": score, "downstream_rank": 2, **labels}


def test_the_correlation_table_keeps_the_stages_order_and_reads_verdicts_at_the_runs_level():
    rows = [corr_row("generic", "spearman", 0.01, 0.03), corr_row("personalised", "spearman", 0.001, 0.004),
            corr_row("generic", "ndcg", 0.02, None), corr_row("generic", "rbo", None, None, status="too few RMs"),
            corr_row("personalised", "spearman", 0.3, 0.6, predictor="worst_domain"),
            {**corr_row("personalised", "ndcg", 0.0004, 0.5, predictor=None), "ci_low": 0.7, "ci_high": 0.7,
             "ci_low_questions": 0.6, "ci_high_questions": 0.6}]
    m = {"alpha": 0.025, "strategy": "none", "status": "ok", "excluded_rms": ["random"], "min_rms": 5,
         "ci_method": "bootstrap", "conventions": {"z": 1, "a": 2}, "in_distribution": ["b"],
         "shares_llm_with": {"b": ["bon.judge", "pairs.judge"]}, "shares_encoder_with": {"a": ["retrieval"]}}
    got = D.correlation(rows, [], m)
    assert [(t["benchmark"], t["predictor"], t["metric"]) for t in got["table"]] == [
        ("generic", "accuracy", "spearman"), ("generic", "accuracy", "ndcg"), ("generic", "accuracy", "rbo"),
        ("personalised", "accuracy", "spearman"), ("personalised", "accuracy", "ndcg"),
        ("personalised", "worst_domain", "spearman")]
    assert [t["status"] for t in got["table"]] == ["not significant", "significant", "too few RMs", "significant",
                                                   "not significant", "not significant"], \
        "the Holm p at alpha 0.025 (0.03 is not); the raw p where no Holm p"
    assert got["table"][0] == {"benchmark": "generic", "predictor": "accuracy", "downstream": "bon",
                               "metric": "spearman", "value": "0.500", "ci": "[0.100, 0.900]",
                               "ci_questions": "[0.200, 0.800]", "random": "0.010", "reversed": "-1.000",
                               "p": "0.010", "p_holm": "0.030", "n_rms": 6, "status": "not significant"}
    assert (got["significant"], got["tested"], got["alpha"]) == (2, 5, 0.025)
    assert got["table"][4]["ci"] == "[0.700, 0.700] (n = 6; zero width: every resample gave the same value)"
    assert got["table"][4]["ci_questions"] == "[0.600, 0.600] (n = 6; zero width: every resample gave the same value)"
    assert got["conventions"] == [("a", 2), ("z", 1)] and got["excluded"] == ["random"]
    assert got["shared"] == ["a shares encoder with retrieval", "b shares LLM with bon.judge, pairs.judge"]
    assert {k: got[k] for k in ("strategy", "status", "min_rms", "ci_method", "in_distribution", "primary",
                                "positive_control")} == {
        "strategy": "none", "status": "ok", "min_rms": 5, "ci_method": "bootstrap", "in_distribution": ["b"],
        "primary": None, "positive_control": False}
    assert D.correlation(rows, None, {})["alpha"] == 0.05 and D.correlation(None, [], m) is None


def test_one_scatter_per_accuracy_pairing_its_points_named_with_what_they_share():
    rows = [corr_row("personalised", "spearman", 0.01, 0.01),
            corr_row("personalised", "spearman", 0.01, 0.01, predictor="worst_domain"),
            corr_row("generic", "spearman", 0.01, 0.01)]
    points = [point("a", acc=0.9, score=0.8, in_distribution=True, shares_llm_with="bon.judge"),
              point("b", acc=0.1, score=0.2), point("a", predictor="worst_domain", acc=0.3),
              point("a", bench="generic", acc=0.7), point("b", bench="generic", acc=None),
              {**point("c"), "downstream": "rl"}]
    got = D.correlation(rows, points, {})
    assert [(s["benchmark"], s["downstream"], s["points"], s["in_distribution"]) for s in got["scatters"]] == [
        ("personalised", "bon", 2, ["a"]), ("generic", "bon", 2, [])]
    dots = {p["label"]: p for p in got["scatters"][0]["chart"]["points"]}
    assert set(dots) == {"a (in-distribution; shares LLM with bon.judge)", "b"}
    assert dots["b"]["title"] == "b: accuracy 10.0% (rank 1), bon 0.200 (rank 2)"
    assert float(dots["b"]["cx"]) < float(dots["a (in-distribution; shares LLM with bon.judge)"]["cx"])
    assert got["scatters"][1]["chart"]["x_label"] == "generic benchmark accuracy"
    assert got["scatters"][1]["chart"]["y_label"] == "bon downstream score"
    assert [p["label"] for p in got["scatters"][1]["chart"]["points"]] == ["a"], "an RM without a value: no dot"


def test_rm_labels_say_in_distribution_and_what_is_shared():
    assert D._rm_label("x", {}) == "x"
    assert D._rm_label("x", {"in_distribution": True, "shares_llm_with": "bon.judge",
                             "shares_encoder_with": "retrieval"}) == \
        "x (in-distribution; shares LLM with bon.judge; shares encoder with retrieval)"
    assert D._rm_label("x", {"shares_encoder_with": "r", "shares_llm_with": ""}) == "x (shares encoder with r)"


def test_paired_comparisons_are_listed_sorted_with_their_verdicts():
    cell = {"difference": 0.25, "ci_low": -0.1, "ci_high": 0.5, "p_value": 0.004, "p_holm": 0.02}
    m = {"alpha": 0.01, "comparisons": {
        "personalised vs rb2": {"rl": {"status": "ok", "n_rms": 6, "spearman": cell},
                                "bon": {"status": "ok", "n_rms": 6, "spearman": {**cell, "p_holm": None}}},
        "personalised vs generic": {"bon": {"status": "too few RMs (n=2 < 5)", "n_rms": 2,
                                            "spearman": dict.fromkeys(cell)}}}}
    got = D.correlation([], [], m)["comparisons"]
    assert [(c["pair"], c["downstream"]) for c in got] == [("personalised vs generic", "bon"),
                                                          ("personalised vs rb2", "bon"), ("personalised vs rb2", "rl")]
    assert got[0] == {"pair": "personalised vs generic", "downstream": "bon", "metric": "spearman", "n_rms": 2,
                      "status": "too few RMs (n=2 < 5)", "difference": DASH, "ci": "", "p": DASH, "p_holm": DASH}
    assert got[1]["status"] == "significant" and got[2]["status"] == "not significant", \
        "raw 0.004 where no Holm p; Holm 0.02 is above alpha 0.01"
    assert got[2] == {"pair": "personalised vs rb2", "downstream": "rl", "metric": "spearman", "n_rms": 6,
                      "status": "not significant", "difference": "+0.250", "ci": "[-0.100, 0.500]", "p": "0.004",
                      "p_holm": "0.020"}


# --- the pre-registered test ----------------------------------------------------------------------------------

PRIMARY = {"statistic": "spearman", "benchmark": "personalised", "strategy": "none", "method": "bon", "n_rms": 8,
           "n_pairs": 40, "n_questions": 30, "alternative": "greater", "status": "ok", "estimate": 0.61,
           "ci": [0.12, 0.87], "p": 0.0123, "significant": True, "alpha": 0.05, "power": 0.8123, "effect": 0.6,
           "min_detectable_effect": 0.55, "observed_signal_accuracy": 0.625}
WHAT = "spearman of personalised accuracy (none) with bon over 8 RMs, 40 benchmark pairs, 30 downstream questions, " \
       "H1 greater"


def test_the_primary_line_states_what_was_tested_the_estimate_p_verdict_and_power():
    assert D.primary_line(PRIMARY) == (
        f"{WHAT}: 0.610 [0.120, 0.870], p 0.012: significant at alpha 0.05 (power 0.81 at the assumed effect 0.6, "
        "smallest effect detectable at 80%: 0.55; the good signal alone picked the chosen answer on 62.5% of the pairs)")
    plain = {**PRIMARY, "ci": None, "ci_note": "n < 4", "significant": False, "power": None,
             "observed_signal_accuracy": None, "p": 0.0004}
    assert D.primary_line(plain) == (f"{WHAT}: 0.610 (no interval: n < 4), p < 0.001: not significant at alpha 0.05 "
                                     "(power not simulated)")
    assert "smallest effect detectable at 80%: none up to 0.99;" in D.primary_line(
        {**PRIMARY, "min_detectable_effect": None})
    assert D.primary_line({**PRIMARY, "status": "too few RMs (n=2 < 4)"}) == f"{WHAT}: too few RMs (n=2 < 4)"
    assert D.primary_line({k: v for k, v in PRIMARY.items() if k != "n_pairs"}).startswith(
        WHAT.replace("40 benchmark", "0 benchmark"))
    assert D.primary_line({"status": "none pre-registered"}) is None and D.primary_line(None) is None


def test_the_correlation_section_carries_the_primary_line_and_the_positive_control_flag():
    got = D.correlation([], [], {"primary": {**PRIMARY, "positive_control": True}})
    assert got["primary"] == D.primary_line(PRIMARY) and got["positive_control"] is True
    assert got["alpha"] == 0.05, "the primary's alpha where the run states none"


# --- the data card -----------------------------------------------------------------------------------------------

def test_the_data_card_lists_domains_and_splits_and_where_the_data_came_from():
    ingest = {"per_domain_split": {"law/test": {"questions": 4, "pairs": 3, "mean_aspects": 2.5,
                                                "mean_profile_items": 10.25},
                                   "art/train": {"questions": 2}},
              "files": ["a.json"], "questions": 6, "pairs": 3, "profile_items": 51, "quarantined_rows": 1}
    params = {"ingest": {"source": "hub", "hub_id": "org/lamp-qa", "path": "data/x", "layout": "hf"},
              "pairs": {"source": "reference"}, "scoring": {"per_domain_limit": 5, "splits": ["test"]}}
    got = D.data_card(ingest, params)
    assert got["rows"] == [
        {"domain": "art", "split": "train", "questions": "2", "users": "2", "pairs": DASH, "aspects": DASH,
         "posts": DASH},
        {"domain": "law", "split": "test", "questions": "4", "users": "4", "pairs": "3", "aspects": "2.50",
         "posts": "10.2"}]
    assert {k: v for k, v in got.items() if k != "rows"} == {
        "source": "hub", "where": "org/lamp-qa", "layout": "hf", "files": ["a.json"], "questions": 6, "pairs": 3,
        "profile_items": 51, "quarantined": 1, "pair_source": "reference", "per_domain_limit": 5, "splits": ["test"]}
    local = D.data_card({}, {"ingest": {"source": "sample", "path": "data/x"}})
    assert (local["where"], local["rows"], local["files"], local["quarantined"], local["pair_source"]) == \
        ("data/x", [], [], 0, None)
    assert D.data_card(None, params) is None
    bare = D.data_card({"questions": 1}, {})
    assert (bare["source"], bare["where"], bare["pair_source"], bare["splits"]) == (None, None, None, None)


def test_charts_are_drawn_only_with_something_to_draw():
    assert charts.line_chart([{"name": "a", "points": [{"x": 1, "y": None}]}], [1], "k", "s") is None
    assert charts.bars([{"label": "a", "value": None}], "s") is None
    assert charts.scatter([{"label": "a", "x": None, "y": 1.0}], "x", "y") is None


def test_the_chart_keeps_the_best_at_the_largest_k_a_zero_before_a_missing_score(monkeypatch):
    monkeypatch.setattr(board, "MAX_RMS_SHOWN", 3)

    def at(scores):
        return {(rm, k): {"judge_score": s} for rm, by_k in scores.items() for k, s in by_k.items()}
    ks = [1, 4, 16]
    x = {"b": {16: 0.9}, "c": {16: 0.7}, "e": {4: 0.95}, "f": {4: 0.99, 16: 0.0}, "n": {16: 1.0}}
    assert D._bon_shown([*x, "(oracle)"], at(x), ks, {"n"}) == (
        ["b", "c", "e", "f", "(oracle)"], ["b", "c", "f", "(oracle)"], ["n"]), "f's 0.0 at k = 16 beats e's none"
    y = {"a": {16: 0.6}, "b": {16: 0.9}, "c": {16: 0.7}, "f": {16: 0.0}}
    assert D._bon_shown(list(y), at(y), ks, set())[1] == ["a", "b", "c"], "a zero is a zero, not the best"


def test_a_k_without_null_scores_in_the_middle_is_an_empty_cell_and_the_line_goes_on():
    at = {("n1", 1): bon_row("n1", 1, 0.2), ("n1", 16): bon_row("n1", 16, 0.3)}
    line, row = D._null_range(["n1"], at, [1, 4, 16])
    assert [c and c["score"] for c in row["cells"]] == ["0.200–0.200", None, "0.300–0.300"]
    assert [p["x"] for p in line["points"]] == [1, 16]


def test_a_dimension_rated_on_one_side_only_shows_that_side():
    s = summary()
    s["per_dimension"]["relevance"] = {"all": {"chosen": {"mean": 4.5}}}
    s["per_dimension"]["factuality"] = {"all": None}
    dims = D.human_eval({"human": s})["human"]["dimensions"]
    assert [(d["chosen"], d["rejected"]) for d in dims[:2]] == [(DASH, DASH), ("4.50", DASH)]


def test_an_older_table_without_predictors_reads_as_accuracy():
    rows = [{k: v for k, v in corr_row("personalised", m, 0.01, 0.02).items() if k != "predictor"}
            for m in ("spearman", "ndcg")]
    points = [{k: v for k, v in point(rm, acc=a).items() if k != "predictor"} for rm, a in (("a", 0.9), ("b", 0.1))]
    got = D.correlation(rows, points, {})
    assert [(t["predictor"], t["metric"]) for t in got["table"]] == [("accuracy", "spearman"), ("accuracy", "ndcg")]
    assert [(s["benchmark"], s["points"]) for s in got["scatters"]] == [("personalised", 2)]


def test_rl_rows_of_equal_scores_go_by_name_and_a_zero_width_interval_says_its_n():
    rows = [{"rm": "b", "mean_score": 0.5, "ci_low": 0.5, "ci_high": 0.5, "questions": 8, "gain_over_baseline": 0.1,
             "gain_ci_low": 0.1, "gain_ci_high": 0.1},
            {"rm": "a", "mean_score": 0.5, "ci_low": 0.4, "ci_high": 0.6, "questions": 8}]
    got = D.rl(rows, None)
    assert [r["rm"] for r in got["rows"]] == ["a", "b"] and [x["label"] for x in got["chart"]["bars"]] == ["a", "b"]
    zero = "[0.500, 0.500] (n = 8; zero width: every resample gave the same value)"
    assert (got["rows"][1]["ci"], got["rows"][1]["gain_ci"]) == (
        zero, "[0.100, 0.100] (n = 8; zero width: every resample gave the same value)")
    assert got["chart"]["bars"][0]["whisker"] is not None and got["chart"]["bars"][1]["whisker"] is not None
