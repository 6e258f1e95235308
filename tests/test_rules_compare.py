"""The compare page's rules (tasks/ops/report/compare.py), by hand and fast: a change reads signed, in pp for
accuracies, "added"/"removed" where one side has none, nothing where nothing moved; competition ranks and the
places moved; version B's interval and whether A's value lies outside it; the leaderboard, correlation,
Best-of-N, data and human-evaluation tables picked from `dvc metrics diff`'s keys; the summary counts."""
from __future__ import annotations

from tasks.core import layout
from tasks.ops.report import compare as C
from tasks.ops.report.fmt import DASH

LB, CORR, BON = layout.LEADERBOARD["metrics"], layout.CORRELATION["metrics"], layout.BON_REPORT["metrics"]


def ov(old, new):
    return {"old": old, "new": new}


def test_a_change_is_signed_better_or_worse_and_nothing_when_nothing_moved():
    assert C.delta(0.5, 0.7) == {"v": 0.7 - 0.5, "text": "+0.200", "cls": "up"}
    assert C.delta(0.7, 0.5) == {"v": 0.5 - 0.7, "text": "-0.200", "cls": "down"}
    assert C.delta(0.7, 0.5, higher_is_better=False)["cls"] == "up"
    assert C.delta(0.5, 0.75, percent=True)["text"] == "+25.0 pp"
    assert C.delta(1, 3)["text"] == "+2.000" and C.delta(1, 3, digits=1)["text"] == "+2.0"
    assert C.delta(0.5, 0.5) == {"v": 0.0, "text": "", "cls": ""}
    assert C.delta(None, 0.5) == {"v": "", "text": "added", "cls": ""}
    assert C.delta(0.5, None) == {"v": "", "text": "removed", "cls": ""}
    assert C.delta(None, None)["text"] == "" and C.delta(True, False)["text"] == "" and C.delta("a", "b")["text"] == ""


def test_ranks_are_competition_ranks_over_known_accuracies():
    assert C.ranks({"a": 0.9, "b": 0.8, "c": 0.9, "d": None, "e": True, "f": 0.1}) == {"a": 1, "c": 1, "b": 3, "f": 4}
    assert C.ranks({}) == {}


def test_a_rank_change_counts_places_up_or_down():
    assert C.rank_change(3, 1) == {"v": 2, "text": "▲2", "cls": "up"}
    assert C.rank_change(1, 4) == {"v": -3, "text": "▼3", "cls": "down"}
    assert C.rank_change(2, 2) == {"v": 0, "text": "", "cls": ""}
    assert C.rank_change(None, 2)["text"] == "added" and C.rank_change(2, None)["text"] == "removed"
    assert C.rank_change(None, None) == {"v": "", "text": "", "cls": ""}


def test_noise_shows_bs_interval_and_whether_as_value_is_outside_it():
    assert C.noise(0.5, 0.6, [0.55, 0.7]) == [{"v": 0.55, "text": "[0.550, 0.700]", "cls": ""},
                                              {"v": 1, "text": "yes", "cls": "changed"}]
    assert C.noise(0.6, 0.7, [0.5, 0.8])[1] == {"v": 0, "text": "no", "cls": ""}
    assert C.noise(0.55, 0.7, [0.55, 0.8])[1]["text"] == "no", "on the bound is inside"
    assert C.noise(0.6, 0.6, [0.0, 0.1])[1] == {"v": -1, "text": DASH, "cls": ""}, "unchanged: no verdict"
    assert C.noise(0.6, 0.7, None) == [{"v": "", "text": DASH, "cls": ""}, {"v": -1, "text": DASH, "cls": ""}]
    assert C.noise(0.5, 0.6, [0.55, 0.7], percent=True)[0]["text"] == "[55.0%, 70.0%]"


def test_the_leaderboard_pairs_both_versions_per_rm_and_strategy_with_ranks_moved():
    raw = {LB: {"rms.b.none.micro.accuracy": ov(0.85, 0.6), "rms.a.none.micro.accuracy": ov(0.8, 0.9),
                "rms.a.none.macro.accuracy": ov(0.7, 0.7), "rms.a.none.ties": ov(0, 1), "rms.a.none.truncated": ov(2, 3),
                "rms.a.none.position_bias": ov(0.1, 0.2), "rms.a.raw_profile.micro.accuracy": ov(0.5, 0.5),
                "rms.c.none.ties": ov(1, 1), "rms.b.oracle.micro.accuracy": ov(None, 0.95),
                "rms.b.oracle.invalid": ov(2, 2), "rms.b.none.unknown_field": ov(1, 2), "status": ov("ok", "ok")},
           "metrics/other.json": {"rms.z.none.micro.accuracy": ov(0.1, 0.2)}}
    got = C.leaderboard(raw, {"rms.a.none.micro.accuracy": [0.85, 0.95], "rms.a.raw_profile.micro.accuracy": [0.6, 0.7]})
    assert [(r["rm"], r["strategy"]) for r in got["rows"]] == [
        ("a", "none"), ("b", "none"), ("c", "none"), ("a", "raw_profile"), ("b", "oracle")], \
        "by strategy in its order, then by RM"
    a, b, c, a_raw, b_oracle = ([(x["v"], x["text"], x["cls"]) for x in r["cells"]] for r in got["rows"])
    assert a == [("a", "a", ""), ("none", "none", ""), (0.8, "80.0%", ""), (0.9, "90.0%", ""),
                 (0.9 - 0.8, "+10.0 pp", "up"), (0.85, "[85.0%, 95.0%]", ""), (1, "yes", "changed"),
                 (0.7, "70.0%", ""), (0.7, "70.0%", ""), (0.0, "", ""), (2, "2", ""), (1, "1", ""), (1, "▲1", "up"),
                 (1, "0 → 1", "changed"), ("", DASH, ""), (3, "2 → 3", "changed"), (0.2, "10.0% → 20.0%", "changed")]
    assert [t for _, t, _ in b] == ["b", "none", "85.0%", "60.0%", "-25.0 pp", DASH, DASH, DASH, DASH, "", "1", "2",
                                    "▼1", DASH, DASH, DASH, DASH]
    assert [t for _, t, _ in c][2:13] == [DASH, DASH, "", DASH, DASH, DASH, DASH, "", DASH, DASH, ""]
    assert a_raw[5:7] == [(0.6, "[60.0%, 70.0%]", ""), (-1, DASH, "")], "unchanged: no verdict, even outside B's CI"
    assert [t for _, t, _ in b_oracle] == ["b", "oracle (upper bound)", DASH, "95.0%", "added", DASH, DASH, DASH, DASH,
                                           "", DASH, "1", "added", DASH, "2", DASH, DASH]
    assert [(r["changed"], r["moved"]) for r in got["rows"]] == [(True, True), (True, True), (False, False),
                                                                 (False, False), (False, False)]
    assert (got["changed"], got["rank_changes"]) == (2, 2)
    assert C.leaderboard({}) == {"rows": [], "changed": 0, "rank_changes": 0}


def test_an_evaluation_only_flag_marks_any_strategy_as_the_upper_bound():
    raw = {LB: {"rms.a.planner.micro.accuracy": ov(0.5, 0.5), "rms.a.planner.evaluation_only": ov(False, True)}}
    assert C.leaderboard(raw)["rows"][0]["cells"][1]["text"] == "planner (upper bound)"


def test_correlations_show_both_versions_with_intervals_p_and_the_status_moved():
    raw = {CORR: {"correlations.personalised.bon.spearman.value": ov(0.5, 0.8),
                  "correlations.personalised.bon.spearman.ci_low": ov(0.1, 0.6),
                  "correlations.personalised.bon.spearman.ci_high": ov(0.9, 0.95),
                  "correlations.personalised.bon.spearman.p_value": ov(0.2, 0.0004),
                  "correlations.personalised.bon.status": ov("too few RMs", "ok"),
                  "correlations.personalised.bon.n_rms": ov(4, 6),
                  "correlations.generic:worst_domain.bon.ndcg.value": ov(0.9, 0.9),
                  "correlations.generic:worst_domain.bon.ndcg.ci_low": ov(0.1, 0.95),
                  "correlations.generic:worst_domain.bon.ndcg.ci_high": ov(0.99, 0.99),
                  "correlations.generic:worst_domain.bon.n_rms": ov(6, 6),
                  "comparisons.personalised vs generic.bon.status": ov("ok", "ok")}}
    rows = C.correlation(raw)
    assert [(r["benchmark"], r["downstream"], r["metric"]) for r in rows] == [
        ("generic:worst_domain", "bon", "ndcg"), ("personalised", "bon", "spearman")]
    g, p = rows
    assert {k: v for k, v in p.items() if k not in ("delta", "beyond")} == {
        "benchmark": "personalised", "downstream": "bon", "metric": "spearman", "old": "0.500",
        "old_ci": "[0.100, 0.900]", "new": "0.800", "new_ci": "[0.600, 0.950]", "p_old": "0.200",
        "p_new": "< 0.001", "n_rms": "4 → 6", "status": "too few RMs → ok"}
    assert (p["delta"]["text"], p["delta"]["cls"], p["beyond"]["text"]) == ("+0.300", "up", "yes")
    assert (g["n_rms"], g["status"], g["delta"]["text"], g["beyond"]["text"], g["new_ci"]) == (
        "6", "", "", DASH, "[0.950, 0.990]"), "unchanged: no verdict, even outside B's interval"


def test_bon_rows_read_expected_scores_ordered_by_rm_then_k_as_a_number():
    raw = {BON: {"lines.a.expected.16.score": ov(0.5, 0.6), "lines.a.expected.4.score": ov(0.4, 0.4),
                 "lines.a.expected.4.n_questions": ov(10, 12), "lines.a.first_k.4.score": ov(0.1, 0.2),
                 "lines.(oracle).expected.1.score": ov(None, 0.9)}}
    rows = C.bon(raw)
    assert [(r["rm"], r["k"], r["old"], r["new"], r["delta"]["text"]) for r in rows] == [
        ("(oracle)", 1, DASH, "0.900", "added"), ("a", 4, "0.400", "0.400", ""), ("a", 16, "0.500", "0.600", "+0.100")]


def test_data_and_human_rows_side_by_side_changed_marked():
    raw = {layout.INGEST["metrics"]: {"per_domain_split.law/test.questions": ov(4, 5),
                                      "per_domain_split.law/test.pairs": ov(3, 3),
                                      "per_domain_split.art/test.questions": ov(None, 2), "questions": ov(6, 7)},
           layout.HUMAN_EVAL["metrics"]: {"human.parity.general_gap": ov(0.123, 0.5), "source": ov("a", "a"),
                                          "human.other": ov(1, 2)}}
    assert C.data(raw) == [
        {"domain_split": "art/test", "questions": {"old": DASH, "new": "2", "cls": "changed"},
         "pairs": {"old": DASH, "new": DASH, "cls": ""}},
        {"domain_split": "law/test", "questions": {"old": "4", "new": "5", "cls": "changed"},
         "pairs": {"old": "3", "new": "3", "cls": ""}}]
    assert C.human(raw) == [{"key": "source", "old": "a", "new": "a", "cls": ""},
                            {"key": "human.parity.general_gap", "old": "0.12", "new": "0.50", "cls": "changed"}]


def test_every_changed_metric_is_listed_in_diffs_order_with_bs_interval():
    raw = {LB: {"rms.a.none.micro.accuracy": ov(0.8, 0.9), "rms.a.none.pairs": ov(10, 10)},
           CORR: {"correlations.personalised.bon.spearman.value": ov(0.5, 0.4)},
           "metrics/ingest.json": {"revision": ov("abc", "def"), "questions": ov(True, False)}}
    cis = {LB: {"rms.a.none.micro.accuracy": [0.7, 0.95]}}
    rows = C.changed(raw, cis)
    assert [(r["kind"], r["metric"]) for r in rows] == [("revision", "revision"), ("accuracy", "rms.a.none.micro.accuracy"),
                                                        ("correlation", "correlations.personalised.bon.spearman.value"),
                                                        ("other", "questions")]
    acc = rows[1]
    assert (acc["file"], acc["old"], acc["new"], acc["change"]["text"]) == (LB, "0.8000", "0.9000", "+0.100")
    assert [c["text"] for c in acc["noise"]] == ["[0.700, 0.950]", "no"]
    assert (rows[0]["old"], rows[0]["new"], rows[3]["old"], rows[3]["new"]) == ("abc", "def", "yes", "no")
    assert [c["text"] for c in rows[2]["noise"]] == [DASH, DASH]


def test_the_page_context_names_both_versions_and_counts_the_changes():
    raw = {LB: {"rms.a.none.micro.accuracy": ov(0.8, 0.9), "rms.b.none.micro.accuracy": ov(0.85, 0.85)},
           CORR: {"correlations.personalised.bon.spearman.value": ov(0.5, 0.4),
                  "correlations.personalised.bon.ndcg.value": ov(0.5, 0.5)}}
    ctx = C.compare_context(raw, "v1", None, "t", {LB: {"rms.a.none.micro.accuracy": [0.85, 0.95]}})
    assert (ctx["title"], ctx["mode"], ctx["rev_a"], ctx["rev_b"]) == ("t", "compare", "v1", "workspace")
    assert ctx["summary"] == {"accuracies": 2, "ranks": 2, "correlations": 1, "metrics": 2}
    assert ctx["board"]["rows"][0]["cells"][6]["text"] == "yes", "B's interval reaches the leaderboard"
    assert C.compare_context(raw, "v1", "v2", "t")["rev_b"] == "v2"


def test_plain_cells_sort_by_their_value_and_side_by_side_cells_keep_three_decimals():
    assert C._plain(0.8, "80.0%") == {"v": 0.8, "text": "80.0%", "cls": ""}
    assert C._plain(None, DASH) == {"v": "", "text": DASH, "cls": ""}
    assert C._side_by_side(0.12345, 0.5) == {"old": "0.123", "new": "0.500", "cls": "changed"}
    assert C._side_by_side(0.12345, 0.5, digits=2)["old"] == "0.12"


def test_the_page_context_holds_every_table_and_bs_intervals_reach_the_changed_list():
    raw = {LB: {"rms.a.none.micro.accuracy": ov(0.8, 0.9)},
           CORR: {"correlations.personalised.bon.spearman.value": ov(0.5, 0.4)},
           BON: {"lines.a.expected.4.score": ov(0.4, 0.5)},
           layout.INGEST["metrics"]: {"per_domain_split.law/test.questions": ov(4, 5)},
           layout.HUMAN_EVAL["metrics"]: {"source": ov("a", "b")}}
    cis = {LB: {"rms.a.none.micro.accuracy": [0.85, 0.95]}}
    ctx = C.compare_context(raw, "v1", "v2", "t", cis)
    assert set(ctx) == {"title", "mode", "rev_a", "rev_b", "board", "correlation", "bon", "data", "human", "changed",
                        "summary"}
    assert (ctx["correlation"], ctx["bon"], ctx["data"], ctx["human"]) == (
        C.correlation(raw), C.bon(raw), C.data(raw), C.human(raw))
    acc = next(r for r in ctx["changed"] if r["metric"] == "rms.a.none.micro.accuracy")
    assert [c["text"] for c in acc["noise"]] == ["[0.850, 0.950]", "yes"]


def test_the_page_diffs_the_two_revisions_with_unchanged_metrics_and_bs_intervals(monkeypatch):
    from tasks.downstream.correlation import diff, headline
    from tasks.ops.report import build as B

    calls = {}
    raw = {LB: {"rms.a.none.micro.accuracy": ov(0.8, 0.9)}, "metrics/x.yaml": {}}

    def metrics_diff(rev_a, rev_b, cwd, unchanged):
        calls["diff"] = (rev_a, rev_b, cwd, unchanged)
        return raw

    def read_at(rev, path, cwd):
        calls.setdefault("read", []).append((rev, path, cwd))
        return {"rms": {"a": {"none": {"micro": {"accuracy": 0.9, "ci": [0.85, 0.95]}}}}}

    monkeypatch.setattr(diff, "metrics_diff", metrics_diff)
    monkeypatch.setattr(headline, "read_at", read_at)
    monkeypatch.setattr(B, "render", lambda template, ctx: calls.update(template=template, ctx=ctx) or "html")
    assert C.build("v1", "v2", cwd="/repo") == "html"
    assert calls["diff"] == ("v1", "v2", "/repo", True) and calls["read"] == [("v2", LB, "/repo")]
    assert calls["template"] == "compare.html.j2"
    assert calls["ctx"] == C.compare_context(raw, "v1", "v2", "prbench: two versions",
                                             {LB: {"rms.a.none.micro.accuracy": [0.85, 0.95]}})
    assert calls["ctx"]["board"]["rows"][0]["cells"][6]["text"] == "yes"
    C.build("v1", title="mine")
    assert calls["diff"] == ("v1", None, ".", True) and calls["ctx"]["title"] == "mine"
