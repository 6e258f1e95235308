"""The leaderboard table and the heatmaps as the page states them (tasks/ops/report/board.py): one row per RM ×
strategy, per strategy best first with the unscored last, the positive controls and null baselines labelled, each
RM's test against the next one and against chance in words beside its p, the columns a stage adds shown as they
are; the heatmaps red below chance and blue above, cut to the best RMs with the null baselines as one range above
MAX_RMS_SHOWN. Small boards written by hand."""
from __future__ import annotations

import pytest

from tasks.ops.report import board


def _micro(rm, strategy, acc, lo=None, hi=None, n=10, domain="micro", **extra):
    return {"rm": rm, "strategy": strategy, "domain": domain, "accuracy": acc, "ci_low": lo, "ci_high": hi, "n": n,
            "evaluation_only": strategy == "oracle", **extra}


def _entry(acc, lo, hi, n, **extra):
    return {"micro": {"accuracy": acc, "ci": [lo, hi], "n": n}, "macro": {"accuracy": acc - 0.05, "ci": [lo - 0.1, hi], "n": n},
            "pairs": n, "ties": 1, "invalid": 0, "truncated": 2, **extra}


METRICS = {
    "rms": {"alpha": {"none": _entry(0.8, 0.7, 0.9, 40, position_bias=0.125, seed_note="kept", nested={"a": 1})},
            "beta": {"none": _entry(0.6, 0.5, 0.7, 40), "oracle": _entry(0.97, 0.9, 1.0, 40)},
            "coin": {"none": _entry(0.7, 0.55, 0.8, 40)},
            "gold": {"none": _entry(0.95, 0.9, 1.0, 40)}},
    "adjacent": {"method": "sign test", "alpha": 0.05,
                 "tests": {"none": [{"rm": "alpha", "next": "coin", "difference": 0.1, "p_holm": 0.0004,
                                     "significant": True},
                                    {"rm": "coin", "next": "beta", "difference": 0.1, "p_holm": 0.25,
                                     "significant": False}]}},
    "chance": {"method": "binomial", "ties": "left out",
               "tests": {"none": {"family": 3, "rms": {"alpha": {"right": 30, "wrong": 8, "p_holm": 0.0002,
                                                                 "above_chance": True},
                                                       "beta": {"right": 22, "wrong": 18, "p_holm": 0.3167,
                                                                "above_chance": False}}}}},
    "tie_policy": "half", "ci": 0.95, "bootstrap": 1000}


def _board():
    rows = [_micro("alpha", "none", 0.8, extra_flag=True), _micro("beta", "none", 0.6),
            _micro("alpha", "none", 0.7, domain="books"), _micro("late", "none", None)]
    return board.leaderboard(rows, list(rows[0]), METRICS, controls={"gold"}, nulls={"coin"})


def _row(lb, rm, strategy):
    (row,) = [r for r in lb["rows"] if (r["rm"], r["strategy"]) == (rm, strategy)]
    return {h["key"]: c for h, c in zip(lb["head"], row["cells"])} | {"_row": row}


def test_one_row_per_rm_and_strategy_best_first_within_a_strategy_unscored_last():
    lb = _board()
    assert [(r["rm"], r["strategy"]) for r in lb["rows"]] == [
        ("gold", "none"), ("alpha", "none"), ("coin", "none"), ("beta", "none"), ("late", "none"), ("beta", "oracle")]
    assert [s["value"] for s in lb["strategies"]] == ["none", "oracle"]
    assert [s["label"] for s in lb["strategies"]] == ["none", "oracle (upper bound)"]
    assert lb["page_size"] == board.PAGE_SIZE and lb["nulls"] == 1


def test_the_order_breaks_an_accuracy_tie_by_name_and_follows_the_strategy_registry():
    rows = [_micro(rm, s, 0.5) for rm, s in [("b", "planner"), ("a", "planner"), ("c", "none"), ("d", "raw_profile")]]
    lb = board.leaderboard(rows, [], {"rms": {rm: {s: _entry(0.5, 0.4, 0.6, 9)} for rm, s in
                                               [("b", "planner"), ("a", "planner"), ("c", "none"), ("d", "raw_profile")]}})
    assert [(r["rm"], r["strategy"]) for r in lb["rows"]] == [("c", "none"), ("d", "raw_profile"), ("a", "planner"),
                                                              ("b", "planner")]
    assert board.strategy_order("none") < board.strategy_order("oracle") < board.strategy_order("zzz-new")
    assert board.strategy_order("zzz-new") < board.strategy_order("zzz-newer")


def test_roles_are_labelled_and_a_row_says_its_numbers():
    lb = _board()
    gold, coin, alpha = _row(lb, "gold", "none"), _row(lb, "coin", "none"), _row(lb, "alpha", "none")
    assert gold["rm"]["text"] == "gold (positive control)" and gold["_row"]["role"] == "positive control"
    assert coin["rm"]["text"] == "coin (null baseline)" and coin["_row"]["role"] == "null baseline"
    assert alpha["rm"]["text"] == "alpha" and alpha["_row"]["role"] == ""
    assert alpha["micro"] == {"v": 0.8, "text": "80.0%", "ci": "[70.0, 90.0]", "lo": 0.7, "hi": 0.9, "n": 40}
    assert alpha["macro"]["text"] == "75.0%" and alpha["macro"]["ci"] == "[60.0, 90.0]"
    assert (alpha["pairs"]["text"], alpha["ties"]["text"], alpha["invalid"]["text"], alpha["truncated"]["text"]) == \
        ("40", "1", "0", "2")
    assert alpha["position_bias"]["text"] == "12.5%" and _row(lb, "beta", "none")["position_bias"]["text"] == "n/a"
    assert _row(lb, "beta", "oracle")["strategy"]["text"] == "oracle (upper bound)"
    late = _row(lb, "late", "none")
    assert late["micro"]["text"] == "–" and late["micro"]["ci"] == "" and late["pairs"]["text"] == "–"


def test_a_role_applies_to_both_sets_with_the_control_first():
    lb = board.leaderboard([_micro("x", "none", 0.9)], [], {}, controls={"x"}, nulls={"x"})
    assert lb["rows"][0]["cells"][0]["text"] == "x (positive control)"


def test_the_tests_against_the_next_rm_and_against_chance_read_as_words_beside_their_p():
    lb = _board()
    alpha, coin, beta = _row(lb, "alpha", "none"), _row(lb, "coin", "none"), _row(lb, "beta", "none")
    assert alpha["vs_next"]["text"] == "+10.0 pp vs coin, p < 0.001 (significant)"
    assert alpha["vs_next"]["significant"] is True and alpha["vs_next"]["v"] == 0.0004
    assert coin["vs_next"]["text"] == "+10.0 pp vs beta, p 0.250 (not significant)"
    assert coin["vs_next"]["significant"] is False
    assert beta["vs_next"]["text"] == "–" and "significant" not in beta["vs_next"]
    assert alpha["vs_chance"]["text"] == "30 of 38 right, p < 0.001 (above chance)"
    assert alpha["vs_chance"]["above_chance"] is True
    assert beta["vs_chance"]["text"] == "22 of 40 right, p 0.317 (not above chance)"
    assert beta["vs_chance"]["above_chance"] is False and beta["vs_chance"]["v"] == 0.3167
    assert coin["vs_chance"]["text"] == "not tested: null baseline"
    assert _row(lb, "gold", "none")["vs_chance"]["text"] == "not tested: positive control"
    assert _row(lb, "late", "none")["vs_chance"]["text"] == "–"
    assert lb["adjacent"][("alpha", "none")]["next"] == "coin" and lb["adjacent_method"] == "sign test"
    assert lb["alpha"] == 0.05 and lb["chance"][("beta", "none")]["right"] == 22
    assert lb["chance_family"] == {"none": {"family": 3}}
    assert (lb["chance_method"], lb["chance_ties"]) == ("binomial", "left out")
    assert (lb["tie_policy"], lb["ci"], lb["bootstrap"]) == ("half", 0.95, 1000)


def test_columns_and_scalar_keys_a_stage_adds_get_a_column_of_their_own():
    lb = _board()
    extra = [h for h in lb["head"] if h["extra"]]
    assert [h["key"] for h in extra] == ["extra_flag", "seed_note"], "nested values are not a column"
    assert extra[0]["title"] == "extra flag" and extra[0]["numeric"] is None
    assert [h["key"] for h in lb["head"] if not h["extra"]] == [
        "rm", "strategy", "micro", "resolution", "macro", "pairs", "ties", "invalid", "truncated", "position_bias",
        "vs_next", "vs_chance"]
    alpha, beta = _row(lb, "alpha", "none"), _row(lb, "beta", "none")
    assert alpha["extra_flag"]["text"] == "yes" and alpha["seed_note"]["text"] == "kept"
    assert beta["extra_flag"]["text"] == "–" and beta["seed_note"]["text"] == "–"


def test_a_column_both_in_the_table_and_in_the_metrics_is_shown_once():
    rows = [_micro("a", "none", 0.5, flag=1)]
    lb = board.leaderboard(rows, list(rows[0]), {"rms": {"a": {"none": {"flag": 2, "other": [1, "x"]}}}})
    assert [h["key"] for h in lb["head"] if h["extra"]] == ["flag", "other"]
    cells = {h["key"]: c for h, c in zip(lb["head"], lb["rows"][0]["cells"])}
    assert cells["flag"]["text"] == "1" and cells["other"]["text"] == "1, x"


def test_the_counts_fall_back_to_the_table_where_the_metrics_lack_them():
    rows = [_micro("a", "none", 0.5, ties=3, invalid=4, truncated=5, score_dtype="bfloat16", within_resolution=2)]
    cells = board.leaderboard(rows, list(rows[0]), {})["rows"][0]["cells"]
    assert [c["text"] for c in cells[3:9]] == ["decided within bfloat16 resolution: 2", "–", "–", "3", "4", "5"]
    judged = board.leaderboard([_micro("a", "none", 0.5)], [], {})["rows"][0]["cells"]
    assert judged[3]["text"] == "n/a"


@pytest.mark.parametrize("acc, bg, fg", [(None, "#e5e5e5", "#333"), (0.5, "#ffffff", "#111"), (1.0, "#2166ac", "#fff"),
                                         (0.0, "#b2182b", "#fff"), (0.75, "#90b2d6", "#111"),
                                         (0.25, "#d88c95", "#111"), (0.8, "#7aa3cd", "#fff"), (1.7, "#2166ac", "#fff"),
                                         (-0.2, "#b2182b", "#fff"), (0.775, "#85abd1", "#111")])
def test_the_heat_colour_is_red_below_chance_white_at_it_blue_above(acc, bg, fg):
    assert board.heat_colour(acc) == (bg, fg)


def _grid_rows(n, nulls=(), strategy="none"):
    rows = []
    for i in range(n):
        rm = f"rm{i:02d}"
        acc = None if i == 0 else 0.5 + i / 100
        rows += [_micro(rm, strategy, acc, 0.1, 0.9, domain=d) for d in ("macro", "micro", "books", "art")]
    for j, rm in enumerate(nulls):
        rows += [_micro(rm, strategy, 0.4 + j / 10, 0.1, 0.9, domain=d) for d in ("micro", "books")]
    return rows


def test_a_heatmap_shows_every_rm_up_to_the_cap_with_micro_and_macro_last():
    (hm,) = board.heatmaps(_grid_rows(3), "none")
    assert hm["rms"] == ["rm00", "rm01", "rm02"] and hm["nulls"] == 0 and hm["left_out"] == 0
    assert [g["domain"] for g in hm["grid"]] == ["art", "books", "micro", "macro"]
    books = hm["grid"][1]["cells"]
    assert books[0]["text"] == "–" and books[0]["v"] == "" and books[0]["bg"] == "#e5e5e5"
    assert books[1] == {"text": "51%", "v": 0.51, "ci": "[10, 90]", "bg": books[1]["bg"], "fg": "#111",
                        "title": "rm01 · books: 51.0% [10.0, 90.0] (n = 10)"}
    assert board.heatmaps([_micro("a", "none", 0.6)], None)[0]["grid"][0]["cells"][0]["title"] == \
        "a · micro: 60.0%  (n = 10)"


def test_a_missing_cell_says_not_scored():
    rows = [_micro("a", "none", 0.6), _micro("b", "none", 0.7), _micro("a", "none", 0.6, domain="books")]
    (hm,) = board.heatmaps(rows, "none")
    books = hm["grid"][0]
    assert books["domain"] == "books" and books["cells"][1]["title"] == "b · books: not scored"
    assert books["cells"][1]["ci"] == "" and books["cells"][1]["text"] == "–"


def test_above_the_cap_the_best_rms_are_kept_and_the_null_baselines_become_one_range():
    n = board.MAX_RMS_SHOWN + 3
    (hm,) = board.heatmaps(_grid_rows(n, nulls=("coin", "length")), "none", nulls={"coin", "length"})
    kept = [f"rm{i:02d}" for i in range(n - board.MAX_RMS_SHOWN, n)]
    assert hm["rms"] == kept + ["null baselines (2)"], "the best by micro accuracy; unscored rm00 goes first"
    assert hm["nulls"] == 2 and hm["left_out"] == 3
    books = next(g for g in hm["grid"] if g["domain"] == "books")["cells"][-1]
    assert books == {"text": "40%–50%", "v": 0.5, "ci": "2 RMs", "bg": "#eeeeee", "fg": "#111",
                     "title": "null baselines · books: lowest coin 40.0%, highest length 50.0%"}
    art = next(g for g in hm["grid"] if g["domain"] == "art")["cells"][-1]
    assert art["text"] == "–" and art["title"] == "art: not scored" and art["v"] == ""


def test_exactly_at_the_cap_nothing_is_cut_and_nulls_stay_columns():
    n = board.MAX_RMS_SHOWN - 1
    (hm,) = board.heatmaps(_grid_rows(n, nulls=("coin",)), "none", nulls={"coin"})
    assert len(hm["rms"]) == board.MAX_RMS_SHOWN and "coin" in hm["rms"] and hm["nulls"] == 0 and hm["left_out"] == 0


def test_the_range_names_the_first_rm_reaching_the_top_and_the_lowest():
    rows = [_micro(rm, "none", acc, domain="d") for rm, acc in [("z", 0.7), ("b", 0.7), ("m", 0.2), ("q", None)]]
    cell = board._range_cell(rows, "d")
    assert cell["title"] == "null baselines · d: lowest m 20.0%, highest b 70.0%" and cell["ci"] == "3 RMs"


def test_the_first_strategy_leads_and_the_oracle_is_labelled():
    rows = _grid_rows(2) + _grid_rows(2, strategy="oracle") + _grid_rows(2, strategy="planner")
    assert [h["strategy"] for h in board.heatmaps(rows, "planner")] == ["planner", "none", "oracle"]
    assert [h["label"] for h in board.heatmaps(rows, None)] == ["none", "planner", "oracle (upper bound)"]


def test_above_the_cap_an_unscored_rm_is_cut_first_and_ties_go_by_name():
    rows = [_micro(f"r{i:02d}", "none", None if i == 5 else 0.6) for i in range(board.MAX_RMS_SHOWN + 1)]
    (hm,) = board.heatmaps(rows, "none")
    assert "r05" not in hm["rms"] and hm["left_out"] == 1
    rows = [_micro(f"r{i:02d}", "none", 0.6) for i in range(board.MAX_RMS_SHOWN + 2)]
    (hm,) = board.heatmaps(rows, "none")
    assert hm["rms"] == [f"r{i:02d}" for i in range(board.MAX_RMS_SHOWN)] and hm["left_out"] == 2


def test_an_interval_of_zero_width_says_why_in_the_table_and_the_heatmap():
    metrics = {"rms": {"a": {"none": {"micro": {"accuracy": 1.0, "ci": [1.0, 1.0], "n": 6}}}}}
    (row,) = board.leaderboard([], [], metrics)["rows"]
    assert row["cells"][2]["ci"] == "[100.0, 100.0] (n = 6, all correct)"
    (hm,) = board.heatmaps([_micro("a", "none", 0.0, 0.0, 0.0, n=4)], "none")
    assert hm["grid"][0]["cells"][0]["ci"] == "[0, 0] (n = 4, all wrong)"


def test_every_column_says_what_it_is():
    head = {h["key"]: h for h in _board()["head"]}
    assert "paired test" in head["vs_next"]["help"] and "coin flip" in head["vs_chance"]["help"]
    assert "bootstrap CI" in head["micro"]["help"] and head["extra_flag"]["help"] == "added by the leaderboard stage"
    assert head["rm"]["help"] == "" and head["micro"]["numeric"] is True and head["rm"]["numeric"] is False


def test_a_null_range_of_one_domain_nobody_scored_is_a_dash():
    rows = [_micro("coin", "none", None, domain="d")]
    assert board._range_cell(rows, "d") == {"text": "–", "v": "", "ci": "", "bg": "#e5e5e5", "fg": "#333",
                                            "title": "d: not scored"}
    assert board._range_cell([], "d")["title"] == "d: not scored"


def test_the_range_top_is_the_highest_accuracy_not_the_second():
    rows = [_micro(rm, "none", acc, domain="d") for rm, acc in [("a", 0.3), ("b", 0.5), ("c", 0.9), ("d", 0.1)]]
    cell = board._range_cell(rows, "d")
    assert cell["text"] == "10%–90%" and cell["v"] == 0.9
    assert cell["title"] == "null baselines · d: lowest d 10.0%, highest c 90.0%"


def test_the_fixed_columns_titles_and_kinds():
    head = _board()["head"]
    fixed = [(h["title"], h["numeric"]) for h in head if not h["extra"]]
    assert fixed == [("RM", False), ("strategy", False), ("micro accuracy [CI]", True), ("within dtype resolution", True),
                     ("macro accuracy [CI]", True), ("pairs", True), ("ties", True), ("invalid", True),
                     ("truncated", True), ("position bias", True), ("vs next RM [p (Holm)]", True),
                     ("vs chance [p (Holm)]", True)]


def test_the_metrics_entry_wins_over_the_table_for_the_dtype_resolution():
    rows = [_micro("a", "none", 0.5, score_dtype="float32", within_resolution=9)]
    metrics = {"rms": {"a": {"none": {"score_dtype": "bfloat16", "within_resolution": 2}}}}
    cells = board.leaderboard(rows, list(rows[0]), metrics)["rows"][0]["cells"]
    assert cells[3]["text"] == "decided within bfloat16 resolution: 2" and cells[3]["v"] == 2


def test_an_untested_cell_sorts_as_empty():
    lb = _board()
    assert _row(lb, "beta", "none")["vs_next"]["v"] == "" and _row(lb, "coin", "none")["vs_chance"]["v"] == ""


def test_above_the_cap_a_scored_zero_is_kept_before_an_unscored_rm():
    rows = [_micro(f"r{i:02d}", "none", 0.6) for i in range(board.MAX_RMS_SHOWN - 1)]
    rows += [_micro("a-unscored", "none", None), _micro("b-zero", "none", 0.0)]
    (hm,) = board.heatmaps(rows, "none")
    assert "b-zero" in hm["rms"] and "a-unscored" not in hm["rms"]


def test_a_heatmap_row_has_one_cell_per_rm_shown_and_no_range_without_nulls():
    (hm,) = board.heatmaps(_grid_rows(board.MAX_RMS_SHOWN + 2), "none")
    assert hm["nulls"] == 0 and all(len(g["cells"]) == board.MAX_RMS_SHOWN for g in hm["grid"])


def test_a_strategy_whose_rows_are_evaluation_only_is_labelled_upper_bound_in_the_heatmap():
    rows = [{**_micro("a", "gold-rubric", 0.9), "evaluation_only": True}, _micro("a", "none", 0.6)]
    labels = {h["strategy"]: h["label"] for h in board.heatmaps(rows, "none")}
    assert labels == {"gold-rubric": "gold-rubric (upper bound)", "none": "none"}


def test_each_column_help_as_the_page_shows_it_on_hover():
    helps = {h["key"]: h["help"] for h in _board()["head"] if h["help"]}
    assert helps == {
        "micro": "all counted pairs; bootstrap CI",
        "resolution": "decided pairs whose margin is within 8 ulps of the scores in the dtype they were computed in: "
                      "precision alone could flip them (docs/statistics.md)",
        "macro": "mean of the domains",
        "position_bias": "share of pairs where a pairwise judge changed its verdict with the A/B order",
        "vs_next": "paired test against the RM ranked next (same pairs)",
        "vs_chance": "one-sided binomial test against a coin flip, Holm over the strategy's contestants",
        "extra_flag": "added by the leaderboard stage", "seed_note": "added by the leaderboard stage"}


def test_an_evaluation_only_flag_from_the_metrics_or_the_table_marks_the_strategy_upper_bound():
    rows = [{**_micro("a", "gold-rubric", 0.9), "evaluation_only": True}, _micro("b", "planner", 0.5)]
    metrics = {"rms": {"c": {"from-metrics": {"evaluation_only": True}}, "b": {"oracle": {}}},
               "split": "test", "labels": {"a": "A"}}
    lb = board.leaderboard(rows, [], metrics)
    by = {(r["rm"], r["strategy"]): r for r in lb["rows"]}
    assert by[("a", "gold-rubric")]["cells"][1]["text"] == "gold-rubric (upper bound)"
    assert by[("a", "gold-rubric")]["evaluation_only"] is True
    assert by[("c", "from-metrics")]["cells"][1]["text"] == "from-metrics (upper bound)"
    assert by[("b", "planner")]["cells"][1]["text"] == "planner" and by[("b", "planner")]["evaluation_only"] is False
    assert [s["value"] for s in lb["strategies"]] == ["planner", "oracle", "from-metrics", "gold-rubric"]
    assert (lb["split"], lb["labels"]) == ("test", {"a": "A"})
    assert board.leaderboard(rows, [], {})["labels"] == {}


def test_a_row_sorts_by_the_plain_names_and_numbers():
    alpha = _row(_board(), "alpha", "none")
    assert (alpha["rm"]["v"], alpha["strategy"]["v"], alpha["position_bias"]["v"]) == ("alpha", "none", 0.125)
    coin = _row(_board(), "coin", "none")
    assert coin["rm"]["v"] == "coin", "the role is shown, not sorted on"
    assert _row(_board(), "beta", "oracle")["strategy"]["v"] == "oracle", "the label is shown, not sorted on"


def test_a_count_within_resolution_without_its_dtype_is_not_shown():
    cells = board.leaderboard([_micro("a", "none", 0.5, within_resolution=3)], ["within_resolution"], {})["rows"][0]["cells"]
    assert cells[3]["text"] == "n/a"
