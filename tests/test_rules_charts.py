"""The page's charts put each number where a reader reads it (tasks/ops/report/charts.py), pixel by pixel on small
cases worked out by hand: the axis padded 6% beyond the data, k evenly spaced, higher drawn higher, a CI band
from the upper bounds forward and the lower bounds back, reference lines dashed, colours fixed by name, dots at
the same spot labelled one above the other, bars from zero with their whiskers."""
from __future__ import annotations

from tasks.ops.report import charts as C

# one scale used below: data from 0 to 1 pads to [-0.06, 1.06]; 246 px of height from y = 14
Y = {0.0: "246.8", 0.5: "137.0", 1.0: "27.2"}


def test_the_axis_range_pads_six_percent_and_a_flat_series_gets_a_band():
    assert C._range([0.0, 1.0, 0.5]) == (-0.06, 1.06)
    lo, hi = C._range([0.5, 0.5])
    assert (round(lo, 10), round(hi, 10)) == (0.444, 0.556)
    assert C._ticks(0.0, 1.0) == [0.0, 0.25, 0.5, 0.75, 1.0] and C._ticks(0.0, 1.0, 3) == [0.0, 0.5, 1.0]
    assert C._label(-0.001) == "0.00" and C._label(0.126) == "0.13" and C._label(-0.5) == "-0.50"
    assert C._fmt(1.25) == "1.2" and C._fmt(2) == "2.0"


def test_colours_are_fixed_by_sorted_name_and_wrap_around_the_palette():
    assert C.colours(["b", "a"]) == {"a": C.PALETTE[0], "b": C.PALETTE[1]}
    many = C.colours([f"rm{i:02d}" for i in range(len(C.PALETTE) + 1)])
    assert many[f"rm{len(C.PALETTE):02d}"] == C.PALETTE[0] and len(set(C.PALETTE)) == len(C.PALETTE)


def test_a_line_chart_places_k_evenly_and_draws_the_band_and_reference_lines():
    series = [{"name": "a", "points": [{"x": 1, "y": 0.0, "lo": 0.0, "hi": 0.5, "title": "t1"},
                                       {"x": 2, "y": 1.0, "lo": 0.5, "hi": 1.0}, {"x": 4, "y": None}]},
              {"name": "(ref)", "reference": True, "points": [{"x": 1, "y": 0.5}]}]
    got = C.line_chart(series, [1, 2, 4], "k", "score")
    ref, a = got["series"]
    assert (ref["name"], a["name"]) == ("(ref)", "a"), "legend in name order"
    assert a["path"] == f"M56.0,{Y[0.0]} L273.0,{Y[1.0]}", "k = 1, 2, 4 evenly spaced; a missing y is not drawn"
    assert a["band"] == f"56.0,{Y[0.5]} 273.0,{Y[1.0]} 273.0,{Y[0.5]} 56.0,{Y[0.0]}"
    assert a["points"] == [{"cx": "56.0", "cy": Y[0.0], "title": "t1"}, {"cx": "273.0", "cy": Y[1.0], "title": ""}]
    assert (a["dash"], ref["dash"], ref["path"], ref["band"]) == ("", "5,4", f"M56.0,{Y[0.5]}", "")
    assert (ref["colour"], a["colour"]) == (C.PALETTE[0], C.PALETTE[1])
    assert (ref["legend_y"], a["legend_y"]) == ("20.0", "36.0")
    assert got["xticks"] == [{"x": "56.0", "label": "1"}, {"x": "273.0", "label": "2"}, {"x": "490.0", "label": "4"}]
    assert got["yticks"] == [{"y": "260.0", "label": "-0.06"}, {"y": "198.5", "label": "0.22"},
                             {"y": Y[0.5], "label": "0.50"}, {"y": "75.5", "label": "0.78"}, {"y": "14.0", "label": "1.06"}]
    assert {k: got[k] for k in ("width", "height", "left", "top", "right", "bottom", "legend_x", "x_label",
                                "y_label")} == {"width": 640, "height": 300, "left": 56, "top": 14, "right": "490.0",
                                                "bottom": "260.0", "legend_x": "502.0", "x_label": "k",
                                                "y_label": "score"}


def test_one_k_sits_in_the_middle_and_nothing_to_draw_is_no_chart():
    got = C.line_chart([{"name": "a", "points": [{"x": 3, "y": 0.5}]}], [3], "k", "s")
    assert got["series"][0]["path"] == f"M273.0,{Y[0.5]}" and got["xticks"] == [{"x": "273.0", "label": "3"}]
    assert C.line_chart([{"name": "a", "points": [{"x": 1, "y": 0.5}]}], [], "k", "s") is None
    assert C.line_chart([], [1], "k", "s") is None


def test_a_scatter_puts_higher_values_up_and_right_and_stacks_labels_at_one_spot():
    pts = [{"label": "c", "x": 1.0, "y": 1.0}, {"label": "a", "x": 0.0, "y": 0.0, "title": "a!"},
           {"label": "b", "x": 1.0, "y": 1.0}, {"label": "gone", "x": None, "y": 0.3}]
    got = C.scatter(pts, "accuracy", "bon")
    assert [(p["label"], p["cx"], p["cy"], p["dy"]) for p in got["points"]] == [
        ("a", "85.1", Y[0.0], "-6.0"), ("b", "570.9", Y[1.0], "-6.0"), ("c", "570.9", Y[1.0], "-18.0")]
    assert [p["colour"] for p in got["points"]] == C.PALETTE[:3] and got["points"][0]["title"] == "a!"
    assert (got["right"], got["bottom"], got["x_label"], got["y_label"]) == ("600.0", "260.0", "accuracy", "bon")
    assert [t["label"] for t in got["xticks"]] == ["-0.06", "0.22", "0.50", "0.78", "1.06"]
    assert got["xticks"][0]["x"] == "56.0" and got["xticks"][-1]["x"] == "600.0"
    assert [t["y"] for t in got["yticks"]][::4] == ["260.0", "14.0"]


def test_bars_start_at_zero_with_ci_whiskers_in_the_given_order():
    items = [{"label": "base", "value": 0.5, "lo": 0.4, "hi": 0.6, "reference": True}, {"label": "a", "value": 1.0},
             {"label": "none", "value": None}]
    got = C.bars(items, "judge score")
    base, a = got["bars"]
    assert base == {"label": "base", "y": "18.0", "ty": "30.0", "x0": "170.0", "w": "209.5", "h": 16, "reference": True,
                    "whisker": {"x1": "337.6", "x2": "421.4", "y": "26.0"}, "title": "base: 0.500"}
    assert (a["y"], a["w"], a["whisker"], a["reference"], a["title"]) == ("42.0", "419.0", None, False, "a: 1.000")
    assert (got["height"], got["bottom"], got["left"], got["x_label"]) == (102, "62.0", 170, "judge score")
    assert (got["xticks"][0], got["xticks"][-1]["x"]) == ({"x": "170.0", "label": "0.00"}, "610.0")


def test_negative_bars_run_left_from_zero_and_all_zero_bars_still_have_an_axis():
    got = C.bars([{"label": "x", "value": -0.5}, {"label": "y", "value": 0.5}], "gain")
    x, y = got["bars"]   # the axis: -0.5 to 0.525 over 440 px from 170; zero at 384.6
    assert got["xticks"][0]["label"] == "-0.50"
    assert (x["x0"], x["w"], y["x0"], y["w"]) == ("170.0", "214.6", "384.6", "214.6"), "equal values, equal lengths"
    flat = C.bars([{"label": "x", "value": 0.0}], "s")
    assert flat["bars"][0]["w"] == "0.0" and flat["xticks"][-1]["label"] == "1.00"


def test_the_bar_axis_reaches_the_whiskers_and_a_half_known_interval_draws_none():
    got = C.bars([{"label": "a", "value": 0.5, "lo": -0.2, "hi": 0.9}, {"label": "b", "value": 0.3, "lo": 0.1}], "s")
    assert got["width"] == 640 and got["xticks"][0]["label"] == "-0.20" and got["xticks"][-1]["label"] == "0.95"
    assert got["bars"][0]["whisker"] == {"x1": "170.0", "x2": "592.7", "y": "26.0"}
    assert got["bars"][1]["whisker"] is None


def test_two_ks_sit_at_both_edges_the_axis_reaches_the_bounds_and_a_band_needs_two_full_intervals():
    series = [{"name": "a", "points": [{"x": 1, "y": 0.5, "lo": 0.0, "hi": 1.0}, {"x": 4, "y": 0.5, "lo": 0.4}]}]
    got = C.line_chart(series, [1, 4], "k", "s")
    assert [t["x"] for t in got["xticks"]] == ["56.0", "490.0"]
    assert [t["label"] for t in got["yticks"]][::4] == ["-0.06", "1.06"], "the interval, not only the values"
    assert got["series"][0]["band"] == "", "one point with both bounds draws no band"


def test_a_scatter_names_its_frame_and_ticks():
    got = C.scatter([{"label": "a", "x": 0.0, "y": 0.0}, {"label": "b", "x": 1.0, "y": 1.0}], "x", "y")
    assert {k: got[k] for k in ("width", "height", "left", "top")} == {"width": 640, "height": 300, "left": 56, "top": 14}
    assert [t["label"] for t in got["yticks"]] == ["-0.06", "0.22", "0.50", "0.78", "1.06"]
    assert [p["title"] for p in got["points"]] == ["", ""]
