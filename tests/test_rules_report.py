"""The report's claims, rule by rule: a star on a benchmark × downstream cell only where that correlation is
significant and its paired test against the runner-up holds after Holm over the columns shown; "best RM"
only where the adjacent test against the runner-up holds; `prbench diff`'s headline leads with the primary
correlation, then the changes beyond noise, largest first. Properties over generated metrics files."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.downstream.correlation import headline as H
from tasks.ops.report import benchmarks as RB
from tasks.stages.human_eval.analysis import holm

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
METRIC = RB.MATRIX_METRIC


def _cell(value, p_value, p_holm, status="ok"):
    return {"status": status, "n_rms": 6, METRIC: {"value": value, "ci_low": None if value is None else value - 0.1,
                                                   "ci_high": None if value is None else value + 0.1,
                                                   "p_value": p_value, "p_holm": p_holm}}


@st.composite
def correlation_metrics(draw):
    benches = draw(st.lists(st.sampled_from(["personalised", "generic", "rb2", "prism"]), min_size=1, max_size=4,
                            unique=True))
    downs = draw(st.lists(st.sampled_from(["bon", "rl", "arena"]), min_size=1, max_size=3, unique=True))
    p = st.one_of(st.none(), st.floats(0, 1))
    corr = {}
    for b in benches:
        corr[b] = {}
        for d in downs:
            if draw(st.booleans()) or len(benches) == 1:
                status = draw(st.sampled_from(["ok", "ok", "ok", "too few RMs (n=3 < 5)"]))
                value = draw(st.sampled_from([None, 0.2, 0.5, 0.5, 0.8, 0.9]))
                corr[b][d] = _cell(value, draw(p), draw(p), status)
    comparisons = {}
    for x in benches:
        for y in benches:
            if x != y and draw(st.booleans()):
                comparisons[f"{x} vs {y}"] = {d: {METRIC: {"p_value": draw(p), "difference": 0.1, "ci_low": 0.0,
                                                           "ci_high": 0.2}, "status": "ok"} for d in downs
                                              if draw(st.booleans())}
    level = draw(st.sampled_from([0.05, 0.1]))
    return {"alpha": level, "correlations": corr, "comparisons": comparisons,
            "benchmarks": {b: {"source": "scores"} for b in benches}}


def _reference_stars(m: dict) -> dict:
    """The rule as docs/statistics.md words it, written out plainly."""
    level, corr = m["alpha"], m["correlations"]
    downs = sorted({d for cells in corr.values() for d in cells})
    tops, raw = {}, {}
    for d in downs:
        ranked = sorted((c[METRIC]["value"], b) for b, cells in corr.items() for dd, c in cells.items()
                        if dd == d and c["status"] == "ok" and c[METRIC]["value"] is not None)
        ranked.sort(key=lambda x: (-x[0], x[1]))
        if not ranked:
            continue
        top = ranked[0][1]
        runner = ranked[1][1] if len(ranked) > 1 else None
        cell = corr[top][d][METRIC]
        p_own = cell["p_holm"] if cell["p_holm"] is not None else cell["p_value"]
        own = p_own is not None and math.isfinite(p_own) and p_own < level
        pair = (m["comparisons"].get(f"{top} vs {runner}") or {}).get(d) if runner else None
        tops[d] = (top, own)
        raw[d] = pair[METRIC]["p_value"] if pair else None
    adjusted = holm(raw)
    return {(top, d): own and adjusted[d] is not None and adjusted[d] < level for d, (top, own) in tops.items()}


@FAST
@given(correlation_metrics())
def test_a_star_only_where_the_correlation_and_its_paired_test_against_the_runner_up_hold(m):
    got = RB.matrix(m)
    want = _reference_stars(m)
    for row in got["rows"]:
        for d, cell in zip(got["downstreams"], row["cells"]):
            assert cell["best"] == want.get((row["benchmark"], d), False), (row["benchmark"], d, cell)
            if cell["best"]:
                assert cell["why"] == ""
            elif (row["benchmark"], d) in want:
                assert cell["why"], "a top benchmark not starred says why"
    assert got["starred"] == any(want.values())


def test_a_star_needs_the_paired_p_below_alpha_after_holm_over_the_columns():
    corr = {"personalised": {"bon": _cell(0.9, 0.001, 0.01), "rl": _cell(0.9, 0.001, 0.01)},
            "generic": {"bon": _cell(0.5, 0.3, 0.3), "rl": _cell(0.5, 0.3, 0.3)}}
    vs = {"personalised vs generic": {"bon": {METRIC: {"p_value": 0.03}, "status": "ok"},
                                      "rl": {METRIC: {"p_value": 0.02}, "status": "ok"}}}
    m = {"alpha": 0.05, "correlations": corr, "comparisons": vs, "benchmarks": {}}
    lead = RB.leaders(m, corr, ["bon", "rl"], METRIC)
    # Holm over the two columns: 0.02 -> 0.04, 0.03 -> max(0.04, 0.03) = 0.04: both hold
    assert lead["bon"]["holds"] and lead["rl"]["holds"]
    vs["personalised vs generic"]["bon"][METRIC]["p_value"] = 0.026   # 2 * 0.02 = 0.04, then 0.04 vs 0.026: holds
    assert RB.leaders(m, corr, ["bon", "rl"], METRIC)["bon"]["holds"]
    vs["personalised vs generic"]["rl"][METRIC]["p_value"] = 0.03     # 2 * 0.026 = 0.052 >= 0.05: neither
    lead = RB.leaders(m, corr, ["bon", "rl"], METRIC)
    assert not lead["bon"]["holds"] and not lead["rl"]["holds"]
    assert "not shown to beat generic" in lead["bon"]["why"]
    # its own correlation not significant: no star whatever the paired test says
    corr["personalised"]["bon"] = _cell(0.9, 0.001, 0.05)
    vs["personalised vs generic"] = {"bon": {METRIC: {"p_value": 0.0001}, "status": "ok"}}
    lead = RB.leaders(m, corr, ["bon"], METRIC)
    assert not lead["bon"]["holds"] and "correlation not significant" in lead["bon"]["why"]


def test_the_level_is_the_runs_alpha():
    assert RB.level_of({"alpha": 0.1, "primary": {"alpha": 0.01}}) == 0.1
    assert RB.level_of({"primary": {"alpha": 0.01}}) == 0.01
    assert RB.level_of({}) == 0.05


# --- the leaderboard's headline: "best" only where the adjacent test holds --------------------------------

def _board(rows, adjacent, kinds=None, chance=None):
    from tasks.ops.report import headline as HL

    out = []
    for rm, strategy, acc in rows:
        out.append({"rm": rm, "strategy": strategy, "evaluation_only": strategy == "oracle",
                    "cells": [{"text": rm}, {"text": strategy}, {"text": f"{acc}", "v": acc, "ci": "[x]"}]})
    above = {"above_chance": True, "right": 11, "wrong": 1, "p_holm": 0.01}
    chance = chance if chance is not None else {(rm, s): above for rm, s, _ in rows}
    board = {"rows": out, "adjacent": adjacent, "labels": {}, "tie_policy": "half", "ci": 0.95, "alpha": 0.05,
             "chance": chance, "chance_family": {}}
    return HL.headline(board, {rm: {"kind": (kinds or {}).get(rm, "seq-cls")} for rm, _, _ in rows})


def test_best_only_where_the_test_against_the_runner_up_is_significant():
    rows = [("a", "none", 0.9), ("b", "none", 0.7), ("c", "none", 0.5)]
    test = {"rm": "a", "next": "b", "significant": True, "p_holm": 0.01, "pairs": 12, "difference": 0.2}
    got = _board(rows, {("a", "none"): test})["best"][0]
    assert got["rms"] == ["a"] and got["holds"] and got["others"] == 2
    got = _board(rows, {("a", "none"): {**test, "significant": False, "p_holm": 0.2}})["best"][0]
    assert not got["holds"] and "not significantly above b" in got["runner_up"]
    got = _board(rows, {})["best"][0]
    assert not got["holds"] and got["runner_up"] == "no runner-up to test against"
    tied = [("a", "none", 0.9), ("b", "none", 0.9)]
    got = _board(tied, {("a", "none"): test})["best"][0]
    assert got["rms"] == ["a", "b"] and not got["holds"] and got["runner_up"] == "tied"


def test_best_also_needs_the_test_against_chance():
    rows = [("a", "none", 0.9), ("b", "none", 0.7)]
    test = {"rm": "a", "next": "b", "significant": True, "p_holm": 0.01, "pairs": 12, "difference": 0.2}
    below = {"above_chance": False, "right": 5, "wrong": 1, "p_holm": 0.2}
    got = _board(rows, {("a", "none"): test}, chance={("a", "none"): below})["best"][0]
    assert got["above_runner_up"] and not got["above_chance"] and not got["holds"]
    assert got["vs_chance"].startswith("not above chance: 5 of 6 right")
    got = _board(rows, {("a", "none"): test}, chance={})["best"][0]
    assert not got["holds"] and got["vs_chance"] == "no test against chance in these metrics"


def test_a_positive_control_is_never_a_contestant_and_the_oracle_is_the_upper_bound():
    rows = [("ladder-11", "none", 1.0), ("a", "none", 0.6), ("a", "oracle", 0.95)]
    got = _board(rows, {}, kinds={"ladder-11": "mixture"})
    assert [b["rms"] for b in got["best"]] == [["a"]]
    assert [o["rms"] for o in got["oracle"]] == [["a"]]


def test_a_strategy_without_contestants_is_skipped_not_the_end_of_the_cards():
    from tasks.ops.report.board import strategy_order

    assert strategy_order("none") < strategy_order("raw_profile")
    got = _board([("coin", "none", 0.9), ("a", "raw_profile", 0.6)], {}, kinds={"coin": "random"})
    assert [(b["strategy"], b["rms"]) for b in got["best"]] == [("raw_profile", ["a"])]


def test_a_strategy_the_rows_mark_evaluation_only_is_an_oracle_card_labelled_so():
    from tasks.ops.report import headline as HL
    from tasks.ops.report.board import strategy_label

    row = {"rm": "a", "strategy": "custom", "evaluation_only": True,
           "cells": [{"text": "a"}, {"text": "custom"}, {"text": "0.9", "v": 0.9, "ci": "[x]"}]}
    coin = {**row, "rm": "coin"}
    got = HL.headline({"rows": [row, coin], "tie_policy": "half", "ci": 0.95},
                      {"a": {"kind": "seq-cls"}, "coin": {"kind": "random"}})
    assert got["best"] == [] and [o["strategy"] for o in got["oracle"]] == [strategy_label("custom", True)]
    assert [r["strategy"] for r in got["nulls"]["ranges"]] == [strategy_label("custom", True)], "the nulls' too"
    assert strategy_label("custom", True) != "custom"


def test_the_null_baselines_summary_counts_kinds_and_names_up_to_the_limit():
    from tasks.ops.report import headline as HL

    def nulls(n_random, n_length=1):
        names = [f"r{i}" for i in range(n_random)] + [f"l{i}" for i in range(n_length)]
        rows = [("a", "none", 0.7)] + [(rm, "none", 0.5) for rm in names]
        kinds = {rm: "random" if rm.startswith("r") else "length-longer" for rm in names}
        return _board(rows, {}, kinds=kinds)["nulls"]
    two = nulls(2)
    assert two["count"] == 3 and two["kinds"] == "length-longer, random × 2"
    assert two["names"] == ["l0", "r0", "r1"]
    assert nulls(1)["kinds"] == "length-longer, random"
    assert nulls(HL.NAMES_SHOWN - 1)["names"] != [] and len(nulls(HL.NAMES_SHOWN - 1)["names"]) == HL.NAMES_SHOWN
    assert nulls(HL.NAMES_SHOWN)["names"] == [], "more than NAMES_SHOWN: the count and kinds, no list"


# --- prbench diff: the headline's order ------------------------------------------------------------------

def test_diff_leads_with_the_primary_then_beyond_noise_then_the_largest_change(tmp_path):
    import json

    old = {"rms": {rm: {"none": {"micro": {"accuracy": a, "ci": [a - 0.05, a + 0.05]}}}
                   for rm, a in (("a", 0.5), ("b", 0.5), ("c", 0.5), ("d", 0.5), ("same", 0.6))}}
    new = {"rms": {"a": {"none": {"micro": {"accuracy": 0.52, "ci": [0.45, 0.6]}}},      # +0.02, within: no
                   "b": {"none": {"micro": {"accuracy": 0.7, "ci": [0.6, 0.8]}}},        # +0.20, beyond
                   "c": {"none": {"micro": {"accuracy": 0.4, "ci": [0.1, 0.7]}}},        # -0.10, within
                   "d": {"none": {"micro": {"accuracy": 0.4, "ci": [0.35, 0.45]}}},      # -0.10, beyond
                   "same": {"none": {"micro": {"accuracy": 0.6, "ci": [0.5, 0.7]}}}}}
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics/leaderboard.json").write_text(json.dumps(new))
    (tmp_path / "metrics/correlation.json").write_text(json.dumps(
        {"primary": {"estimate": 0.6, "ci": [0.2, 0.9], "p": 0.01, "benchmark": "personalised",
                     "strategy": "raw_profile", "method": "bon", "statistic": "pearson"}}))
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "metrics/leaderboard.json").write_text(json.dumps(old))
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "old"], cwd=tmp_path, check=True)
    (tmp_path / "metrics/leaderboard.json").write_text(json.dumps(new))
    rows = H.headline_rows("HEAD", None, cwd=tmp_path)
    assert rows[0]["what"].startswith("primary: personalised/raw_profile vs bon pearson")
    assert rows[0]["note"] == "p=0.01"
    assert [r["what"] for r in rows[1:]] == ["b · none", "d · none", "c · none", "a · none"]
    assert [r["beyond"] for r in rows[1:]] == [True, True, False, False]
    assert rows[1]["change"] == pytest.approx(0.2) and rows[2]["change"] == pytest.approx(-0.1)


def test_beyond_noise_is_the_old_value_outside_the_new_interval():
    assert H.beyond_noise(0.5, [0.6, 0.8]) is True
    assert H.beyond_noise(0.9, [0.6, 0.8]) is True
    assert H.beyond_noise(0.6, [0.6, 0.8]) is False, "the interval's ends are inside"
    assert H.beyond_noise(0.8, [0.6, 0.8]) is False
    assert H.beyond_noise(None, [0.6, 0.8]) is None and H.beyond_noise(0.5, [None, 0.8]) is None
    assert H.beyond_noise(0.5, None) is None


def test_the_headline_fits_its_line_budget_and_points_at_the_rest():
    rows = [H._row(f"rm{i:02d} · none", 0.5, 0.6, [0.55, 0.65]) for i in range(60)]
    text = H.format_headline(rows, "v1", None, others=7)
    lines = text.splitlines()
    assert len(lines) <= 40, "docs/releases.md: at most 40 lines"
    assert lines[-1] == f"{60 - (H.MAX_LINES - 4)} more headline row(s), 7 other changed metric(s): `prbench diff v1 --all`"
    assert H.format_headline([], "v1", "v2", 0).splitlines()[1] == "no leaderboard accuracy and no primary correlation changed"


def test_the_headline_of_a_small_board_by_hand():
    """Every field of the cards, on a board small enough to work out by hand: strategies in the documented order
    (not alphabetical), a tie of seven shown as five names and "and 2 more", the in-distribution label, the oracle
    as the upper bound, a null baseline and a positive control never crowned, the null range per strategy."""
    from tasks.ops.report import headline as HL

    def row(rm, s, acc, text=None):
        return {"rm": rm, "strategy": s, "evaluation_only": s == "oracle",
                "cells": [{"text": rm}, {"text": s}, {"text": text or f"{acc:.0%}", "v": acc, "ci": f"ci-{rm}-{s}"}]}

    tied = [f"t{i}" for i in range(7)]
    rows = ([row("lenny", "planner", 0.7), row("a", "planner", 0.6), row("b", "planner", 0.55)]
            + [row(t, "raw_profile", 0.5) for t in tied] + [row("ctl", "raw_profile", 0.9, "90%")]
            + [row("a", "none", 0.8), row("b", "none", 0.4), row("lenny", "none", 0.3), row("coin", "none", 0.45)]
            + [row("a", "oracle", 0.95), row("b", "oracle", 0.9)])
    kinds = {"lenny": "length-longer", "coin": "random", "ctl": "mixture"}
    rms = {r["rm"]: {"kind": kinds.get(r["rm"], "seq-cls")} for r in rows}
    chance = {("a", "planner"): {"above_chance": True, "right": 9, "wrong": 3, "p_holm": 0.04},
              ("a", "none"): {"above_chance": False, "right": 5, "wrong": 1, "p_holm": 0.2, "left_out": 2}}
    adjacent = {("a", "planner"): {"next": "b", "significant": True, "p_holm": 0.0004, "pairs": 30},
                ("a", "none"): {"next": "b", "significant": False, "p_holm": 0.31, "pairs": 6}}
    board = {"rows": rows, "adjacent": adjacent, "chance": chance, "labels": {"a": {"in_distribution": True}},
             "chance_family": {"none": {"contestants": 2, "min_pairs": 7}, "planner": {"contestants": 1}},
             "tie_policy": "half", "ci": 0.9, "alpha": 0.1, "chance_method": "exact binomial", "chance_ties": "left out"}
    got = HL.headline(board, rms)
    assert [c["strategy"] for c in got["best"]] == ["none", "raw_profile", "planner"], "the documented order"
    none, raw, planner = got["best"]
    assert none == {"strategy": "none", "rms": ["a"], "labelled": ["a (in-distribution)"], "accuracy": "80%",
                    "ci": "ci-a-none", "others": 1, "contestants": 2, "above_chance": False, "above_runner_up": False,
                    "vs_chance": "too few pairs to beat chance: 5 of 6 right, 2 ties left out, p (Holm over 2 "
                                 "contestants) 0.200; even all 6 right could not, picked from 2: that takes 7 tested pairs",
                    "runner_up": "not significantly above b: p (Holm) 0.310, paired on 6 pairs", "holds": False}
    assert raw["rms"] == tied and raw["labelled"] == tied[:5] + ["and 2 more"] and raw["others"] == 0
    assert raw["contestants"] == 7 and raw["runner_up"] == "tied" and not raw["holds"], "the control is no contestant"
    assert raw["vs_chance"] == "no test against chance in these metrics"
    assert planner["rms"] == ["a"] and planner["holds"] and planner["others"] == 1 and planner["accuracy"] == "60%"
    assert planner["vs_chance"] == "above chance: 9 of 12 right, p (Holm over 1 contestant) 0.040"
    assert planner["runner_up"] == "above b: p (Holm) < 0.001, paired on 30 pairs"
    assert [(c["strategy"], c["rms"], c["others"]) for c in got["oracle"]] == [("oracle (upper bound)", ["a"], 1)]
    rest = {k: v for k, v in got.items() if k not in ("best", "oracle")}
    assert rest == {"chance": "50.0%", "rms": 12, "tie_policy": "half", "ci": 0.9, "alpha": 0.1,
                    "chance_method": "exact binomial", "chance_ties": "left out",
                    "nulls": {"count": 2, "kinds": "length-longer, random", "names": ["coin", "lenny"],
                              "ranges": [{"strategy": "none", "value": "none", "rms": 2, "text": "30.0–45.0%",
                                          "title": "lowest lenny 30%, highest coin 45%"},
                                         {"strategy": "planner", "value": "planner", "rms": 1, "text": "70.0%",
                                          "title": "lenny 70%"}]}}
    assert HL.headline({**board, "alpha": None}, rms)["alpha"] == "–", "no level in the metrics: a dash"
    five = [row(t, "none", 0.5) for t in tied[:5]] + [row(f"n{i}", "none", 0.1 * i) for i in range(6)]
    many = HL.headline({**board, "rows": five}, {**{t: {"kind": "seq-cls"} for t in tied[:5]},
                                                 **{f"n{i}": {"kind": "random"} for i in range(6)}})
    assert many["best"][0]["labelled"] == tied[:5], "five names shown whole"
    assert many["nulls"]["count"] == 6 and many["nulls"]["names"] == [], "more than five: counted, not listed"


# --- the other-benchmarks section: the matrix's cells and each benchmark's own board, by hand ------------------

def _matrix_metrics():
    corr = {"rb2": {"bon": _cell(0.5, 0.2, 0.3), "rl": {**_cell(None, None, None, "too few RMs (n=3 < 5)"), "n_rms": 3}},
            "personalised": {"bon": _cell(0.9, 0.001, 0.004)},
            "personalised:worst_domain": {"bon": _cell(0.95, 0.001, 0.001)}}
    vs = {"personalised vs rb2": {"bon": {METRIC: {"p_value": 0.01, "difference": 0.4, "ci_low": 0.1, "ci_high": 0.7},
                                          "status": "ok"}}}
    return {"alpha": 0.05, "correlations": corr, "comparisons": vs,
            "benchmarks": {"rb2": {"source": "bench_scores"}, "personalised": {"source": "scores"}}}


def test_the_matrix_cells_by_hand():
    got = RB.matrix(_matrix_metrics())
    assert got["metric"] == METRIC and got["downstreams"] == ["bon", "rl"]
    assert [r["benchmark"] for r in got["rows"]] == ["personalised", "rb2"], "ours first; no worst_domain row"
    assert [r["source"] for r in got["rows"]] == ["scores", "bench_scores"]
    ours, rb2 = got["rows"]
    assert ours["cells"][0] == {"text": "0.900", "ci": "[0.800, 1.000]", "best": True, "why": "", "vs": "",
                                "verdict": "significant", "n_rms": 6}
    assert ours["cells"][1] == {"text": "-", "ci": "", "best": False, "vs": "", "verdict": "", "why": ""}
    assert rb2["cells"][0] == {"text": "0.500", "ci": "[0.400, 0.600]", "best": False, "why": "",
                               "vs": "ours - this: 0.400 [0.100, 0.700]", "verdict": "not significant", "n_rms": 6}
    assert rb2["cells"][1] == {"text": "too few RMs (n=3 < 5)", "ci": "", "best": False, "why": "", "vs": "",
                               "verdict": "", "n_rms": 3}
    assert got["starred"] is True


def test_the_matrix_verdict_reads_the_raw_p_where_no_holm_and_a_failed_comparison_shows_no_difference():
    m = _matrix_metrics()
    m["correlations"]["rb2"]["bon"] = _cell(0.5, 0.01, None)
    m["comparisons"]["personalised vs rb2"]["bon"]["status"] = "too few RMs"
    rb2 = RB.matrix(m)["rows"][1]
    assert rb2["cells"][0]["verdict"] == "significant" and rb2["cells"][0]["vs"] == ""
    m["correlations"]["rb2"]["bon"] = _cell(0.5, 0.01, 0.2)   # the Holm p decides where there is one
    assert RB.matrix(m)["rows"][1]["cells"][0]["verdict"] == "not significant"


def test_ours_leads_the_matrix_and_a_missing_cell_does_not_end_its_row():
    m = _matrix_metrics()
    m["correlations"]["arena"] = {"rl": _cell(0.4, 0.5, 0.5)}
    got = RB.matrix(m)
    assert [r["benchmark"] for r in got["rows"]] == ["personalised", "arena", "rb2"]
    assert got["rows"][1]["source"] == "", "a benchmark the metrics do not describe has no source shown"
    arena = got["rows"][1]["cells"]
    assert arena[0]["text"] == "-" and arena[1]["text"] == "0.400" and arena[1]["verdict"] == "not significant"


def test_no_matrix_without_correlations():
    assert RB.matrix(None) is None and RB.matrix({}) is None and RB.matrix({"correlations": {}}) is None


def test_a_top_benchmark_without_a_runner_up_is_not_starred_and_says_why():
    m = {"alpha": 0.05, "correlations": {"personalised": {"bon": _cell(0.9, 0.001, 0.001)}}, "benchmarks": {}}
    cell = RB.matrix(m)["rows"][0]["cells"][0]
    assert cell["best"] is False and cell["why"] == "no paired test against None"
    lead = RB.leaders(m, m["correlations"], ["bon"], METRIC)["bon"]
    assert (lead["top"], lead["runner_up"], lead["own"], lead["holds"]) == ("personalised", None, "significant", False)


def test_a_paired_p_at_the_level_is_not_below_it():
    corr = {"personalised": {"bon": _cell(0.9, 0.001, 0.01)}, "generic": {"bon": _cell(0.5, 0.3, 0.3)}}
    m = {"alpha": 0.05, "correlations": corr, "benchmarks": {},
         "comparisons": {"personalised vs generic": {"bon": {METRIC: {"p_value": 0.05}, "status": "ok"}}}}
    lead = RB.leaders(m, corr, ["bon"], METRIC)["bon"]
    assert lead["holds"] is False and lead["why"] == "not shown to beat generic: paired p (Holm) 0.050"
    corr["personalised"]["bon"] = _cell(0.9, 0.001, None)   # no family adjusted: the raw p decides
    assert RB.leaders(m, corr, ["bon"], METRIC)["bon"]["own"] == "significant"


def _bench_entry(acc, lo=None, hi=None, chance=0.25, **extra):
    return {"accuracy": acc, "ci": [lo, hi], "chance": chance, "n": 8, "ties": 1, "invalid": 0,
            "method": ["pointwise"], **extra}


def test_each_benchmark_board_by_hand():
    metrics = {"rb2": {"source": "rewardbench2", "items": 8, "rms": {
        "a": {"strategies": {"none": _bench_entry(0.25, 0.1, 0.4, published={"rule": "r", "score": 0.3,
                                                                           "subsets": {"x": 1}, "ties": 2})}},
        "b": {"strategies": {"none": _bench_entry(0.75, 0.5, 0.9, method=["pointwise", "pairwise-each"]),
                             "raw_profile": _bench_entry(None)}},
        "c": {"strategies": {"none": _bench_entry(0.5, 0.3, 0.7)}}}},
        "aa": {"source": "generic", "items": 2, "rms": {}}}
    boards = RB.leaderboards(metrics)
    assert [(b["name"], b["source"], b["items"]) for b in boards] == [("aa", "generic", 2), ("rb2", "rewardbench2", 8)]
    rows = boards[1]["rows"]
    assert [(r["rm"], r["strategy"]) for r in rows] == [("b", "none"), ("c", "none"), ("a", "none"), ("b", "raw_profile")]
    b, c, a, unscored = rows
    assert b == {"rm": "b", "strategy": "none", "accuracy": "0.750", "ci": "[0.500, 0.900]", "chance": "0.250", "n": 8,
                 "ties": 1, "invalid": 0, "below_chance": False, "method": "pointwise, pairwise-each", "published": ""}
    assert a["below_chance"] is True, "at chance counts as not above it"
    assert a["published"] == "score 0.3, ties 2"
    assert (unscored["accuracy"], unscored["ci"], unscored["below_chance"]) == ("-", "", False)
    assert c["below_chance"] is False


def test_an_unscored_strategy_sorts_after_a_scored_zero():
    metrics = {"b": {"source": "s", "items": 1, "rms": {"x": {"strategies": {"none": _bench_entry(None)}},
                                                        "y": {"strategies": {"none": _bench_entry(0.0)}}}}}
    assert [r["rm"] for r in RB.leaderboards(metrics)[0]["rows"]] == ["y", "x"]


def test_the_diff_headline_writes_a_missing_value_as_a_dash_and_numbers_to_four_places():
    assert H._num(None) == "-" and H._num(True) == "True" and H._num("n/a") == "n/a"
    assert (H._num(0.5), H._num(3), H._num(0.25, True), H._num(-0.25, True)) == ("0.5000", "3.0000", "+0.2500", "-0.2500")


def test_the_primary_row_of_the_diff_by_hand():
    new = {"primary": {"benchmark": "personalised", "strategy": "none", "method": "bon", "statistic": "pearson",
                       "estimate": 0.6, "ci": [0.2, 0.9], "p": 0.0123}}
    row = H.primary_row({"primary": {"estimate": 0.1}}, new)
    assert row["what"] == "primary: personalised/none vs bon pearson" and (row["old"], row["new"]) == (0.1, 0.6)
    assert row["change"] == pytest.approx(0.5) and row["ci"] == [0.2, 0.9] and row["beyond"] is True
    assert row["note"] == "p=0.0123"
    del new["primary"]["p"]
    assert H.primary_row(None, new)["note"] == "" and H.primary_row(None, new)["old"] is None
    assert H.primary_row(None, {}) is None


def test_the_diff_reads_the_workspace_by_default_and_a_missing_file_as_nothing(tmp_path, monkeypatch):
    import json
    (tmp_path / "metrics").mkdir()
    (tmp_path / H.CORRELATION).write_text(json.dumps({"primary": {"estimate": 0.3, "ci": [0.1, 0.5], "p": 0.2}}))
    monkeypatch.chdir(tmp_path)
    assert H.read_at(None, H.CORRELATION)["primary"]["estimate"] == 0.3
    assert H.read_at(None, H.LEADERBOARD) is None and H.read_at(None, H.LEADERBOARD, cwd=str(tmp_path)) is None
    (row,) = H.headline_rows(None, None)
    assert (row["old"], row["new"], row["change"], row["beyond"]) == (0.3, 0.3, 0.0, False)
    monkeypatch.chdir(tmp_path / "metrics")   # elsewhere, the project named by cwd
    assert H.headline_rows(None, None, cwd=str(tmp_path)) == [row] and H.headline_rows(None, None) == []


def _commit(repo, message):
    import subprocess

    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", message], cwd=repo, check=True)


def test_the_diff_between_two_revisions_reads_both_from_git_not_the_workspace(tmp_path):
    """`prbench diff A B`: each side at its revision; the workspace (a third value) plays no part; a metrics file
    a revision lacks reads as nothing (its rows came or went), not as an error."""
    import json
    import subprocess

    def board(a):
        return {"rms": {"x": {"none": {"micro": {"accuracy": a, "ci": [a - 0.01, a + 0.01]}}}}}

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "metrics").mkdir()
    (tmp_path / H.LEADERBOARD).write_text(json.dumps(board(0.5)))
    _commit(tmp_path, "a")                                   # no correlation.json at A
    (tmp_path / H.LEADERBOARD).write_text(json.dumps(board(0.7)))
    (tmp_path / H.CORRELATION).write_text(json.dumps({"primary": {"estimate": 0.4, "ci": [0.1, 0.6], "p": 0.03}}))
    _commit(tmp_path, "b")
    (tmp_path / H.LEADERBOARD).write_text(json.dumps(board(0.9)))   # the workspace: neither side
    (tmp_path / H.CORRELATION).write_text(json.dumps({"primary": {"estimate": 0.9, "ci": [0.8, 1.0], "p": 0.5}}))
    assert H.read_at("HEAD~1", H.CORRELATION, tmp_path) is None
    primary, row = H.headline_rows("HEAD~1", "HEAD", cwd=tmp_path)
    assert (primary["old"], primary["new"], primary["note"]) == (None, 0.4, "p=0.03")
    assert (row["what"], row["old"], row["new"]) == ("x · none", 0.5, 0.7)
    assert row["change"] == pytest.approx(0.2) and row["beyond"] is True


def test_an_rm_that_came_or_went_is_a_row_and_sorts_after_the_changes_of_its_class():
    """An RM × strategy on one side only (or without a micro entry) is a change from or to nothing; with no
    change to size it comes after the measured changes of its class, not before them."""
    old = {"rms": {"kept": {"none": {"micro": {"accuracy": 0.5, "ci": [0.4, 0.6]}}},
                   "gone": {"none": {"micro": {"accuracy": 0.6, "ci": [0.5, 0.7]}}},
                   "bare": {"none": {}}}}
    new = {"rms": {"kept": {"none": {"micro": {"accuracy": 0.55, "ci": [0.45, 0.65]}}},
                   "came": {"none": {"micro": {"accuracy": 0.8, "ci": [0.7, 0.9]}}},
                   "bare": {"none": {"micro": {"accuracy": 0.3, "ci": [0.2, 0.4]}}}}}
    rows = {r["what"]: r for r in H.leaderboard_rows(old, new)}
    assert sorted(rows) == ["bare · none", "came · none", "gone · none", "kept · none"]
    assert (rows["came · none"]["old"], rows["came · none"]["change"], rows["came · none"]["beyond"]) == (None, None, None)
    assert (rows["gone · none"]["new"], rows["gone · none"]["ci"]) == (None, None)
    assert rows["bare · none"]["old"] is None and rows["bare · none"]["new"] == 0.3


def test_a_row_without_a_change_sorts_after_the_measured_changes(tmp_path):
    import json
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "metrics").mkdir()
    (tmp_path / H.LEADERBOARD).write_text(json.dumps(
        {"rms": {"small": {"none": {"micro": {"accuracy": 0.5, "ci": [0.4, 0.6]}}}}}))
    _commit(tmp_path, "a")
    (tmp_path / H.LEADERBOARD).write_text(json.dumps(
        {"rms": {"small": {"none": {"micro": {"accuracy": 0.55, "ci": [0.45, 0.65]}}},        # +0.05, within
                 "new": {"none": {"micro": {"accuracy": 0.9, "ci": [0.8, 1.0]}}}}}))          # came: no change
    assert [r["what"] for r in H.headline_rows("HEAD", None, cwd=tmp_path)] == ["small · none", "new · none"]


def test_the_diff_headline_printed_by_hand():
    rows = [{**H._row("primary: p/none vs bon pearson", 0.1, 0.6, [0.2, 0.9]), "note": "p=0.0123"},
            H._row("b · none", 0.5, 0.25, [0.3, 0.35]),
            H._row("came · none", None, 0.8, None)]
    assert H.format_headline(rows, "v1", "v2", others=0).splitlines() == [
        "headline (v1 -> v2): accuracy per RM · strategy, the primary correlation; beyond noise: the old value is "
        "outside the new 95% CI",
        "                                old     new     change   new 95% CI        beyond noise",
        "primary: p/none vs bon pearson  0.1000  0.6000  +0.5000  [0.2000, 0.9000]  yes  p=0.0123",
        "b · none                        0.5000  0.2500  -0.2500  [0.3000, 0.3500]  yes",
        "came · none                     -       0.8000  -        -                 -"]
    many = [H._row(f"r{i:02d}", 0.5, 0.6, [0.55, 0.65]) for i in range(H.MAX_LINES - 3)]
    text = H.format_headline(many, "v1", None, others=0)
    assert text.splitlines()[0].startswith("headline (v1 -> workspace): ")
    assert text.splitlines()[-1] == "1 more headline row(s): `prbench diff v1 --all`"
    assert H.format_headline(many[:2], "v1", "v2", others=3).splitlines()[-1] == \
        "3 other changed metric(s): `prbench diff v1 v2 --all`"
    assert "other changed" not in H.format_headline(many[:2], "v1", "v2", others=0)


def test_headline_metrics_keeps_the_primary_fields_and_a_null_range_without_numbers():
    board = {"rms": {"n1": {"none": {"micro": {"accuracy": None, "ci": None}}},
                     "n2": {"none": {"micro": {"accuracy": None, "ci": None}}}}}
    corr = {"null_baselines": ["n1", "n2"], "primary": {"estimate": 0.5, "ci": [0.1, 0.8], "p": 0.02,
                                                        "significant": True, "power": 0.81, "statistic": "pearson"}}
    out = H.headline_metrics(board, corr)
    assert out["null_baselines"] == {"none": {"rms": 2, "min": None, "max": None}}
    assert out["primary"] == {"estimate": 0.5, "ci": [0.1, 0.8], "p": 0.02, "significant": True, "power": 0.81}


def test_a_chance_test_without_its_family_is_one_contestants():
    from tasks.ops.report import fmt, headline as HL

    t = {"right": 6, "wrong": 0, "p_holm": 0.015625, "above_chance": True}
    assert HL.vs_chance(t, {}) == f"above chance: 6 of 6 right, p (Holm over 1 contestant) {fmt.p_value(0.015625)}"
    assert HL.vs_chance({**t, "above_chance": False}, {"contestants": 2}).startswith(
        "not above chance: 6 of 6 right, p (Holm over 2 contestants)")
