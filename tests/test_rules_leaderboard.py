"""The leaderboard's rules as a user reads them, each against a value worked out by hand (or by the exact
bootstrap law in tests/test_leaderboard.py): which pairs count and how, the CI, the rows' order and labels,
the position-A rate, every metrics field, the printed table, the plot and its data file, the params check,
and the stage's inputs and rows."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from tasks.core import layout
from tasks.core.artifacts import write_table
from tasks.core.errors import ConfigError
from tasks.stages import leaderboard as L
from tests.figures import figure_data
from tests.test_leaderboard import EXACT_B, SEED, exact_ci, outcomes, score

P = {"tie_policy": "strict", "bootstrap": 200, "ci": 0.95, "split": "test", "heatmap_strategy": "none"}
LABELS = {"shares_llm_with": "bon.judge, pairs.judge", "shares_encoder_with": "", "in_distribution": True,
          "implicit_reward": ""}
NO_LABELS = {"shares_llm_with": "", "shares_encoder_with": "", "in_distribution": False, "implicit_reward": ""}


def rows_for(scores, labels=None, **p):
    return L.leaderboard_rows(scores, {**P, **p}, SEED, labels)


def pick(rows, rm="a", strategy="none", domain="micro"):
    return next(r for r in rows if (r["rm"], r["strategy"], r["domain"]) == (rm, strategy, domain))


# --- what counts, and the interval ----------------------------------------------------------------------

def test_an_invalid_flag_is_wrong_even_with_finite_looking_scores():
    bad = {**score("a", "q0", math.inf, 0.0), "invalid": True, "correct": True}   # inf "beat" 0: still invalid
    row = pick(rows_for([bad, score("a", "q1", 1.0, 0.0)]))
    assert (row["n"], row["accuracy"], row["invalid"]) == (2, 0.5, 1)


def test_ci_is_the_percentile_bootstrap_at_the_level_asked():
    # ci 0.5: quantiles 0.25 / 0.75 of the exact bootstrap law (Art 6 of 10, Society 2 of 5; micro 8 of 15)
    scores = outcomes("a", right=6, wrong=4, domain="Art") + outcomes("a", right=2, wrong=3, domain="Society")
    rows = rows_for(scores, ci=0.5, bootstrap=EXACT_B)
    ci = {r["domain"]: [r["ci_low"], r["ci_high"]] for r in rows}
    assert ci == {"Art": exact_ci([(6, 10)], 0.5), "Society": exact_ci([(2, 5)], 0.5),
                  "micro": exact_ci([(8, 15)], 0.5), "macro": exact_ci([(6, 10), (2, 5)], 0.5)}
    assert ci["micro"] == [0.4667, 0.6] and ci["macro"] == [0.4, 0.6]


def test_every_row_carries_policy_labels_counts_and_unknown_domain():
    scores = [{**score("a", "q0", 1.0, 0.0, domain=None), "planner_failed": True},
              {**score("a", "q1", 0.5, 0.5, domain="Art"), "planner_failed": False},
              score("a", "q2", 0.0, 1.0, domain="Art")]
    rows = rows_for(scores, {"a": LABELS}, tie_policy="half")
    assert [r["domain"] for r in rows] == ["Art", "unknown", "micro", "macro"]   # a missing domain is "unknown"
    for r in rows:
        assert r["tie_policy"] == "half" and {k: r[k] for k in LABELS} == LABELS, r["domain"]
    assert [r["planner_failed_rows"] for r in rows] == [0, 1, 1, 1]
    assert (pick(rows, domain="Art")["accuracy"], pick(rows)["accuracy"]) == (0.25, 0.5)   # tie = 0.5
    assert pick(rows, domain="macro")["accuracy"] == round((0.25 + 1.0) / 2, 4)


def test_nothing_counted_anywhere_gives_empty_micro_and_macro():
    rows = rows_for(outcomes("a", ties=2, domain="Art") + outcomes("a", ties=1, domain="Society"), tie_policy="drop")
    for d in ("micro", "macro"):
        r = pick(rows, domain=d)
        assert (r["n"], r["accuracy"], r["ci_low"], r["ci_high"], r["ties"]) == (0, None, None, None, 3)


def test_rows_order_rms_by_name_then_strategies_in_registry_order_unknown_last():
    order = ["oracle", "zeta", "planner", "none", "alpha", "raw_profile"]
    scores = [s for st in order for s in outcomes("b", right=1, strategy=st)] + outcomes("a", right=1)
    rows = rows_for(scores, {"b": LABELS})
    assert [(r["rm"], r["strategy"]) for r in rows if r["domain"] == "micro"] == [
        ("a", "none"), ("b", "none"), ("b", "raw_profile"), ("b", "planner"), ("b", "oracle"),
        ("b", "alpha"), ("b", "zeta")]
    assert all({k: r[k] for k in LABELS} == (LABELS if r["rm"] == "b" else NO_LABELS) for r in rows)


def test_position_a_rate_is_the_share_of_known_verdicts_for_a():
    rows = [{"picked_a": True}, {"picked_a": False}, {"picked_a": True}, {"picked_a": None}, {}]
    assert L.position_a_rate(rows) == 0.6667                     # 2 of the 3 known
    assert L.position_a_rate([{"picked_a": None}, {}]) is None   # not a pairwise judge


# --- metrics/leaderboard.json ---------------------------------------------------------------------------

def _judged():
    """j/planner. Art: right (by 4 bf16 ulps of 1.5), wrong, wrong. Society: tie, invalid, right, right."""
    extra = [dict(picked_a=True, consistent=True, truncated=True),
             dict(picked_a=False, consistent=False, planner_failed=True),
             dict(picked_a=None), dict(picked_a=True), dict(picked_a=None), dict(picked_a=None), dict(picked_a=None)]
    pairs = [("Art", 1.5, 1.46875), ("Art", 0.0, 1.0), ("Art", 0.0, 1.0), ("Society", 0.5, 0.5),
             ("Society", None, 0.2), ("Society", 1.0, 0.0), ("Society", 1.0, 0.0)]
    out = []
    for i, ((dom, cs, cr), x) in enumerate(zip(pairs, extra)):
        r = score("j", f"q{i}", cs, cr, strategy="planner", domain=dom, truncated=x.get("truncated", False),
                  consistent=x.get("consistent"))
        out.append({**r, "picked_a": x["picked_a"], "planner_failed": x.get("planner_failed", False),
                    "score_dtype": "bfloat16"})
    return out


def test_metrics_fields_by_hand():
    scores = _judged() + outcomes("r", right=2)
    p = {**P, "tie_policy": "half"}
    rows = L.leaderboard_rows(scores, p, SEED, {"j": LABELS})
    m = L.leaderboard_metrics(rows, scores, p, {"r": {"kind": "random"}, "j": {"kind": "judge-pairwise"}})
    assert {k: m[k] for k in ("tie_policy", "ci", "bootstrap", "split")} == \
        {"tie_policy": "half", "ci": 0.95, "bootstrap": 200, "split": "test"}
    j = m["rms"]["j"]["planner"]
    for d, (acc, n) in {"micro": (3.5 / 7, 7), "macro": ((1 / 3 + 2.5 / 4) / 2, 7)}.items():
        row = pick(rows, "j", "planner", d)
        assert j[d] == {"accuracy": round(acc, 4), "ci": [row["ci_low"], row["ci_high"]], "n": n}
    assert {d: v["accuracy"] for d, v in j["per_domain"].items()} == {"Art": round(1 / 3, 4), "Society": 0.625}
    assert {k: j[k] for k in ("evaluation_only", "pairs", "ties", "invalid", "truncated", "planner_failed_rows",
                              "position_bias", "position_a_rate", "score_dtype", "within_resolution")} == {
        "evaluation_only": False, "pairs": 7, "ties": 1, "invalid": 1, "truncated": 1, "planner_failed_rows": 1,
        "position_bias": 0.5, "position_a_rate": round(2 / 3, 4), "score_dtype": "bfloat16",
        "within_resolution": 1}   # 1.5 vs 1.46875: 1/32 <= 8 bf16 ulps of 1.5 (1/16)
    assert m["labels"] == {"j": {"shares_llm_with": ["bon.judge", "pairs.judge"], "shares_encoder_with": [],
                                 "in_distribution": True, "implicit_reward": ""},
                           "r": {"shares_llm_with": [], "shares_encoder_with": [], "in_distribution": False,
                                 "implicit_reward": ""}}
    assert set(m["chance"]["tests"]) == {"planner"}, "the random RM is a null baseline, not a contestant"
    assert list(m["chance"]["tests"]["planner"]["rms"]) == ["j"] and "adjacent" in m


# --- the printed table, the plot data, the plot ---------------------------------------------------------

def micro(rm, strategy, acc, lo=None, hi=None, policy="drop", failed=0, n=4, domain="micro", **labels):
    return {"rm": rm, "strategy": strategy, "domain": domain, "accuracy": acc, "ci_low": lo, "ci_high": hi,
            "tie_policy": policy, "planner_failed_rows": failed, "n": n, "evaluation_only": strategy == "oracle",
            **{**NO_LABELS, **labels}}


A_LABELS = {"in_distribution": True, "shares_llm_with": "bon.judge"}   # on every row of the RM, as group_rows puts them


def test_format_table_prints_labels_cells_dashes_and_planner_notes():
    rows = [micro("b", "planner", 0.5, 0.25, 0.75, failed=2),
            micro("b", "raw_profile", 0.1, 0.0, 0.2, domain="Art"),      # not micro: no column
            micro("a", "oracle", None, **A_LABELS),                     # nothing counted
            micro("a", "none", 0.75, 0.5, 1.0, **A_LABELS)]
    assert L.format_table(rows).split("\n") == [
        "micro accuracy [bootstrap CI], tie policy: drop",
        "rm                                              none                  planner               oracle (upper bound)",
        "a [in-distribution; shares LLM with bon.judge]  0.750 [0.500, 1.000]  -                     -",
        "b                                               -                     0.500 [0.250, 0.750]  -",
        "b / planner: 2 of 4 pairs had no parsed plan (scored with the question only)"]
    assert L.format_table([micro("a", "none", 1.0, 1.0, 1.0, policy="half")]).split("\n") == [
        "micro accuracy [bootstrap CI], tie policy: half", "rm  none", "a   1.000 [1.000, 1.000]"]
    assert L.format_table([]) == "micro accuracy [bootstrap CI], tie policy: ?\nrm"


@pytest.mark.parametrize("labels, shown", [
    ({}, "c"),
    ({"in_distribution": True}, "c [in-distribution]"),
    ({"shares_llm_with": "pairs.judge", "shares_encoder_with": "bon.judge"},
     "c [shares LLM with pairs.judge; shares encoder with bon.judge]")])
def test_rm_label_names_what_the_rm_shares(labels, shown):
    assert L._rm_label("c", [micro("c", "none", 0.5, 0.4, 0.6, **labels)]) == shown


def test_plot_data_file_rows(tmp_path):
    rows = [micro("a", "none", 0.75, 0.5, 1.0), micro("a", "none", 0.2, 0.1, 0.3, domain="Art"), micro("a", "oracle", None)]
    path = L.write_plot_data(rows, tmp_path / "acc.csv")
    assert Path(path).read_bytes() == (b"rm,strategy,evaluation_only,accuracy,ci_low,ci_high\n"
                                       b"a,none,false,0.7500,0.5000,1.0000\na,oracle,true,,,\n")


def _drawn(monkeypatch, rows):
    """(figure_data, {bar label: face colour}) of the accuracy plot, without writing the PNG."""
    import tasks.core.plots
    from matplotlib.container import BarContainer

    seen = []

    def save(fig, path):
        ax = fig.axes[0]
        seen.append((figure_data(fig)[0], {c.get_label(): c.patches[0].get_facecolor()
                                           for c in ax.containers if isinstance(c, BarContainer)}))
        tasks.core.plots.plt.close(fig)
    monkeypatch.setattr(tasks.core.plots, "save", save)
    L.plot_accuracy(rows, "unused.png")
    return seen[0]


def test_accuracy_plot_bars_caps_and_colours(monkeypatch):
    from matplotlib.colors import to_rgba

    rows = [micro("b", "none", 0.4, 0.3, 0.5), micro("a", "custom", 0.55, 0.45, 0.65), micro("b", "custom", None),
            micro("a", "oracle", 0.9, 0.8, 1.0), micro("a", "none", 0.6, 0.5, 0.7), micro("b", "oracle", 0.7, 0.6, 0.8),
            micro("a", "planner", 0.1, 0.0, 0.2, domain="Art")]
    ax, colours = _drawn(monkeypatch, rows)
    assert ax["xticks"] == {0.0: "a", 1.0: "b"}
    w = 0.8 / 3   # three strategies share a tick's 0.8, in registry order, unknown last
    expect = [("none", -0.4 + w / 2, 0.6, 0.5, 0.7), ("none", 1 - 0.4 + w / 2, 0.4, 0.3, 0.5),
              ("oracle (upper bound)", 0.0, 0.9, 0.8, 1.0), ("oracle (upper bound)", 1.0, 0.7, 0.6, 0.8),
              ("custom", 0.4 - w / 2, 0.55, 0.45, 0.65)]
    r4 = lambda *xs: tuple(round(x, 4) for x in xs)   # noqa: E731
    assert list(ax["bars"]) == ["none", "oracle (upper bound)", "custom"]
    drawn = {(lab, *r4(*b)) for lab, bars in ax["bars"].items() for b in bars}
    assert drawn == {(lab, *r4(x, a)) for lab, x, a, _, _ in expect}
    caps = {r4(x, y) for xs, ys in ax["series"] if (xs, ys) != ([0, 1], [0.5, 0.5]) for x, y in zip(xs, ys)}  # not chance
    assert caps == {r4(x, y) for _, x, _, lo, hi in expect for y in (lo, hi)}, "error bars end at the CI bounds"
    # a known strategy keeps its registry colour in every plot; an unknown one takes none of theirs
    known = {f"C{i}" for i in range(len(L.STRATEGIES.names()))}
    assert colours["none"] == to_rgba("C0") and colours["oracle (upper bound)"] == to_rgba("C3")
    assert colours["custom"] not in {to_rgba(c) for c in known}
    lone, _ = _drawn(monkeypatch, [micro("a", "none", 0.6, 0.5, 0.7)])
    assert lone["bars"]["none"] == [(0.0, 0.6)], "one strategy: its bar sits on the tick"


# --- params, the stage ----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, message", [
    ({"tie_policy": "lenient"}, "leaderboard.tie_policy: unknown policy 'lenient'; valid: strict, half, drop"),
    ({"bootstrap": 0}, "leaderboard.bootstrap: need a positive number of resamples, got 0"),
    ({"bootstrap": 2.0}, "leaderboard.bootstrap: need a positive number of resamples, got 2.0"),
    ({"ci": 95}, "leaderboard.ci: need a level in (0, 1), e.g. 0.95, got 95"),
    ({"ci": 0}, "leaderboard.ci: need a level in (0, 1), e.g. 0.95, got 0"),
    ({"ci": 1.0}, "leaderboard.ci: need a level in (0, 1), e.g. 0.95, got 1.0"),
    ({"ci": 1.5}, "leaderboard.ci: need a level in (0, 1), e.g. 0.95, got 1.5")])
def test_bad_params_are_refused_naming_key_and_value(bad, message):
    with pytest.raises(ConfigError) as exc:
        L.check_params({**P, **bad})
    assert str(exc.value) == message


def test_params_edges_and_missing_keys():
    assert L.check_params({**P, "bootstrap": 1, "ci": 0.01})["bootstrap"] == 1   # one resample is positive
    with pytest.raises(ConfigError) as exc:
        L.check_params({k: v for k, v in P.items() if k not in ("ci", "split")})
    assert str(exc.value) == "leaderboard: missing ci, split in params"


def _run(tmp_path, scores_by_rm, params):
    inputs = {rm: str(write_table(r, tmp_path / layout.scores(rm)["scores"], "scores")) for rm, r in scores_by_rm.items()}
    out = {k: str(tmp_path / v) for k, v in layout.LEADERBOARD.items()}
    return L.run({"common": {"seed": SEED}, **params}, inputs, out), out


def test_run_reads_its_benchmark_labels_rms_and_refuses_no_input(tmp_path):
    with pytest.raises(ConfigError) as exc:
        _run(tmp_path, {}, {"leaderboard": P})
    assert str(exc.value) == "leaderboard: no scores under data/scores/ (run the score stage first)"
    gen = lambda rows: [{**r, "benchmark": "generic"} for r in rows]   # noqa: E731
    scores = {"bt": gen(outcomes("bt", right=3, wrong=1)) + outcomes("bt", wrong=5),
              "rand": gen(outcomes("rand", right=1, wrong=1))}
    rms = {"bt": {"kind": "bradley-terry"}, "rand": {"kind": "random"}}
    metrics, out = _run(tmp_path, scores, {"leaderboard": {**P, "benchmark": "generic"}, "scoring": {"rms": rms}})
    assert metrics["rms"]["bt"]["none"]["micro"]["accuracy"] == 0.75 and metrics["rms"]["bt"]["none"]["pairs"] == 4
    assert metrics["labels"]["bt"]["in_distribution"] is True      # the train_rm kind, from params
    assert list(metrics["chance"]["tests"]["none"]["rms"]) == ["bt"]  # rand: a null baseline
    rows = L.stage_rows(out)
    assert [(r["rm"], r["domain"], r["n"]) for r in rows] == [("bt", "Art", 4), ("bt", "micro", 4), ("bt", "macro", 4),
                                                              ("rand", "Art", 2), ("rand", "micro", 2), ("rand", "macro", 2)]
    assert L.stage_summary(out, metrics) == L.format_table(rows)
    assert "bt [in-distribution]" in L.stage_summary(out, metrics)


def test_stage_inputs_are_the_params_rms_that_were_scored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for rm in ("a", "stale"):
        Path(layout.scores(rm)["scores"]).parent.mkdir(parents=True, exist_ok=True)
        Path(layout.scores(rm)["scores"]).write_bytes(b"")
    got = L.stage_inputs({"scoring": {"rms": {"b": {}, "a": {}}}}, None, {})
    assert got == {"a": "data/scores/a.parquet"}   # b not scored yet; stale not in params
