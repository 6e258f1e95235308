"""Correlation across benchmarks: each `benchmarks:` entry's RM ranking (its per-item credit from
bench_score) against each downstream, with the same metrics and uncertainty as ours, and the paired
test of one benchmark against another ("X predicts downstream better than Y")."""
import copy

import pytest

from tasks.core.errors import ConfigError

from tasks.core import layout
from tasks.stages.benchmarks import stage as bench_stage
from tasks.downstream.correlation import stage
from tasks.downstream.correlation.sides import load_list_benchmarks
from tests.conftest import ROOT
from tests.stage_project import shipped_params

RMS = {"longer": {"kind": "length-longer"}, "shorter": {"kind": "length-shorter"},
       **{f"random-{i}": {"kind": "random", "seed": i} for i in range(4)}}


def _bench_scores(tmp_path, monkeypatch) -> tuple[dict, dict]:
    monkeypatch.chdir(ROOT)
    params = copy.deepcopy(shipped_params())
    params["scoring"]["rms"] = RMS
    for entry in params["benchmarks"].values():
        entry["rms"] = sorted(RMS)
    folders = {}
    for b in params["benchmarks"]:
        out = {k: str(tmp_path / v) for k, v in layout.bench_scores(b).items()}
        bench_stage.run(params, b, out)
        folders[b] = out["scores"]
    return params, folders


def test_each_benchmark_is_correlated_with_each_downstream_and_compared(tmp_path, monkeypatch):
    params, folders = _bench_scores(tmp_path, monkeypatch)
    # a downstream from elsewhere: the longer the answers an RM prefers, the better (a made-up table)
    table = tmp_path / "down.csv"
    down = {"longer": 0.9, "shorter": 0.1, "random-0": 0.5, "random-1": 0.4, "random-2": 0.6, "random-3": 0.45}
    table.write_text("rm,method,score\n" + "".join(f"{rm},elsewhere,{v}\n" for rm, v in down.items()))
    p = {**params["correlation"], "downstream": [], "downstream_tables": [str(table)], "bootstrap": 100,
         "permutations": 999, "comparisons": [["rb2-demo", "prism-demo"]], "include_null_baselines": True}
    params = {**params, "correlation": p}
    out = {k: str(tmp_path / v) for k, v in layout.CORRELATION.items()}
    m = stage.run(params, {"scores": {}, "bench_scores": folders}, out)
    assert m["benchmarks"]["rb2-demo"]["source"] == "bench_scores"
    assert set(m["correlations"]) >= {"rb2-demo", "prism-demo"}
    cell = m["correlations"]["rb2-demo"]["elsewhere"]
    assert cell["status"] == "ok" and cell["n_rms"] == 6
    assert cell["spearman"]["ci_low"] is not None and cell["spearman"]["p_value"] is not None
    # rb2-demo accuracies: longer 0.5, shorter 0.1667 (hand-worked in test_benchmarks)
    assert m["benchmarks"]["rb2-demo"]["accuracy"]["longer"] == 0.5
    assert m["benchmarks"]["rb2-demo"]["accuracy"]["shorter"] == 0.1667
    versus = m["comparisons"]["rb2-demo vs prism-demo"]["elsewhere"]
    assert versus["status"] == "ok" and versus["spearman"]["difference"] is not None
    assert versus["spearman"]["ci_low"] <= versus["spearman"]["difference"] <= versus["spearman"]["ci_high"]


def test_item_ids_are_kept_apart_per_benchmark(tmp_path, monkeypatch):
    params, folders = _bench_scores(tmp_path, monkeypatch)
    sides = load_list_benchmarks(folders, {"strategy": "raw_profile", "tie_policy": "half"})
    assert all(q.startswith("rb2-demo:") for q in sides["rb2-demo"].per_question["longer"])
    # rb2 longer under half: ties worth 1/2 and 1/3 (RewardBench 2's rule), so 3.8333 / 6
    assert round(sides["rb2-demo"].value("longer"), 4) == 0.6389
    assert set(sides["rb2-demo"].domains.values()) == {"Factuality", "Math", "Ties"}
    # PRISM has a profile: scored under the correlation's strategy; RewardBench 2 has none: `none`
    assert len(sides["prism-demo"].per_question["longer"]) == 3


def test_report_shows_the_benchmark_matrix_and_each_board_with_chance(tmp_path, monkeypatch):
    from tasks.ops.report import benchmarks as rb
    from tasks.ops.report.build import render, run_context

    params, folders = _bench_scores(tmp_path, monkeypatch)
    table = tmp_path / "down.csv"
    table.write_text("rm,method,score\n" + "".join(f"{rm},elsewhere,{i / 10}\n" for i, rm in enumerate(sorted(RMS))))
    params = {**params, "correlation": {**params["correlation"], "downstream": [], "bootstrap": 50,
                                        "permutations": 99, "downstream_tables": [str(table)]}}
    out = {k: str(tmp_path / v) for k, v in layout.CORRELATION.items()}
    m = stage.run(params, {"scores": {}, "bench_scores": folders}, out)
    grid = rb.matrix(m)
    assert grid["downstreams"] == ["elsewhere"] and {r["benchmark"] for r in grid["rows"]} >= {"rb2-demo", "prism-demo"}
    # one top benchmark per downstream: starred where its lead holds, else saying why not
    assert sum(c["best"] or bool(c["why"]) for r in grid["rows"] for c in r["cells"]) == 1
    assert all(c["verdict"] in ("significant", "not significant") or c["text"].startswith("too few")
               for r in grid["rows"] for c in r["cells"] if c["text"] != "-")
    inputs = {"correlation_metrics": out["metrics"],
              **{f"bench_metrics:{b}": str(tmp_path / layout.bench_scores(b)["metrics"]) for b in folders}}
    context = run_context(params, inputs, "test")
    boards = {b["name"]: b for b in context["benchmark_boards"]}
    row = next(r for r in boards["rb2-demo"]["rows"] if r["rm"] == "longer")
    assert (row["accuracy"], row["chance"], row["n"], row["ties"]) == ("0.500", "0.250", 6, 2)
    assert "score 0.6421" in row["published"]
    html = render("run.html.j2", context)
    assert 'id="benchmark-matrix"' in html and 'data-benchmark="prism-demo"' in html and "chance" in html


def test_a_benchmark_enters_by_its_published_score_beside_its_listwise_one_and_says_which(tmp_path, monkeypatch):
    params, folders = _bench_scores(tmp_path, monkeypatch)
    table = tmp_path / "down.csv"
    table.write_text("rm,method,score\n" + "".join(f"{rm},elsewhere,{i / 10}\n" for i, rm in enumerate(sorted(RMS))))
    p = {**params["correlation"], "downstream": [], "downstream_tables": [str(table)], "bootstrap": 50,
         "permutations": 99, "benchmarks": ["personalised", "rb2-demo:published"]}
    out = {k: str(tmp_path / v) for k, v in layout.CORRELATION.items()}
    m = stage.run({**params, "correlation": p}, {"scores": {}, "bench_scores": folders}, out)
    pub, listwise = m["benchmarks"]["rb2-demo:published"], m["benchmarks"]["rb2-demo"]
    assert pub["scored_by"].startswith("published: RewardBench 2") and listwise["scored_by"].startswith("listwise")
    # length-longer: RewardBench 2's own overall (1/k for top ties, Ties by its rule), not the list-wise 0.5
    assert pub["accuracy"]["longer"] == round((0.5 + 0.4167 + 1.0096) / 3, 4) and listwise["accuracy"]["longer"] == 0.5
    assert m["correlations"]["rb2-demo:published"]["elsewhere"]["n_rms"] == 6
    with pytest.raises(ConfigError, match=r"correlation.benchmarks: 'rb2-dem:published': no bench_score output .*"
                                          r"did you mean 'rb2-demo'"):
        stage.run({**params, "correlation": {**p, "benchmarks": ["rb2-dem:published"]}},
                  {"scores": {}, "bench_scores": folders}, out)
