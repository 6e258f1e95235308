"""The report's downstream sections in registry order (tasks/ops/report/methods.py) and `prbench report`'s
command (tasks/ops/report/cli.py), fast: a method without its own drawing gets the generic section (the mean
judge score per RM over its questions, with a seeded 95% bootstrap CI over questions); BoN's section folds the
null baselines by role; the command's one-line refusals, exit codes and default page names."""
from __future__ import annotations

import argparse
from types import SimpleNamespace

import numpy as np
import pytest

from tasks.core.errors import ConfigError
from tasks.downstream.correlation.sides import Side
from tasks.ops.report import cli, methods as RM
from tasks.ops.report.sources import Sources

SCORES = {"b": {f"q{i:02d}": (i * 7 % 12) / 11 for i in range(12)}, "a": {"q1": 0.25, "q2": 0.75}}


def method(name="dpo", loaded=None):
    seen = {}

    def load(path, p):
        seen.update(path=path, p=p)
        return loaded or Side(name, name, per_question=SCORES)
    return SimpleNamespace(name=name, title=name.upper(), load=load, seen=seen)


def test_the_generic_section_is_each_rms_mean_with_a_seeded_bootstrap_ci_over_questions():
    m = method()
    got = RM.generic(m, Sources({"dpo_per_question": "dpo.parquet"}), {"common": {"seed": 7}, "correlation": {"x": 1}})
    assert m.seen == {"path": "dpo.parquet", "p": {"x": 1}}
    rng = np.random.default_rng(7)   # by hand: RMs in name order, questions in id order, 1000 resamples
    expect = []
    for rm in ("a", "b"):
        x = np.array([SCORES[rm][q] for q in sorted(SCORES[rm])])
        means = x[rng.integers(0, len(x), size=(1000, len(x)))].mean(axis=1)
        lo, hi = np.quantile(means, [0.025, 0.975])
        expect.append({"rm": rm, "score": f"{x.mean():.3f}", "ci": f"[{lo:.3f}, {hi:.3f}]", "n": len(x)})
    assert got["rows"] == expect
    assert [r["score"] for r in got["rows"]] == ["0.500", "0.500"] and [r["n"] for r in got["rows"]] == [2, 12]
    bars = got["chart"]["bars"]
    assert [b["label"] for b in bars] == ["a", "b"] and not any(b["reference"] for b in bars)
    assert all(b["whisker"] for b in bars) and got["chart"]["x_label"] == "judge score"
    other = RM.generic(method(), Sources({"dpo_per_question": "p"}), {"common": {"seed": 8}})
    assert other["rows"] != got["rows"], "the seed is the run's"
    assert RM.generic(method(), Sources({"dpo_per_question": "p"}), {})["rows"][1]["ci"] == RM.generic(
        method(), Sources({"dpo_per_question": "p"}), {"common": {"seed": 0}})["rows"][1]["ci"], "seed 0 by default"


def test_a_constant_score_has_a_zero_width_interval_and_no_input_no_section():
    flat = Side("dpo", "dpo", per_question={"a": {"q1": 0.5, "q2": 0.5}})
    got = RM.generic(method(loaded=flat), Sources({"dpo_per_question": "p"}), {})
    assert got["rows"] == [{"rm": "a", "score": "0.500", "ci": "[0.500, 0.500] (zero width: every resample gave the "
                                                             "same value)", "n": 2}]
    assert RM.generic(method(), Sources({}), {}) is None and RM.per_question_input("rl") == "rl_per_question"


def test_sections_follow_the_registry_bon_and_rl_drawn_their_own_way(monkeypatch):
    from tasks.downstream.correlation import methods as registry

    extra = SimpleNamespace(name="dpo", title="DPO", load=method().load)
    real = registry.methods()
    monkeypatch.setattr(registry, "methods", lambda: [*real, extra])
    got = RM.sections(Sources({}), {})
    assert [(s["name"], s["template"], s["context"]) for s in got] == [
        ("bon", "section_bon.html.j2", None), ("rl", "section_rl.html.j2", None), ("dpo", RM.GENERIC, None)]
    params = {"common": {"seed": 7}}
    assert RM.sections(Sources({"dpo_per_question": "p"}), params)[-1]["context"] == RM.generic(
        extra, Sources({"dpo_per_question": "p"}), params)
    assert [s["title"] for s in got] == [m.title for m in real] + ["DPO"]


def test_bons_section_folds_the_null_baselines_by_role(monkeypatch):
    seen = {}
    monkeypatch.setattr(RM.downstream, "bon", lambda curve, metrics, nulls: seen.update(nulls=nulls) or "ctx")
    params = {"scoring": {"rms": {"r": {"kind": "random"}, "l": {"kind": "length-longer"}, "x": {"kind": "seq-cls"},
                                  "m": {"kind": "mixture"}}}}
    assert RM.OWN.get("bon")(Sources({}), params) == ("section_bon.html.j2", "ctx")
    assert seen["nulls"] == {"r", "l"}
    RM.OWN.get("bon")(Sources({}), {})
    assert seen["nulls"] == set()


# --- prbench report ------------------------------------------------------------------------------------------

def args(**kw):
    return argparse.Namespace(**{"compare": None, "out": None, "params": None, **kw})


def test_default_page_names_are_safe_file_names_under_results():
    assert cli.default_out(None) == cli.RESULTS / "report.html" == cli.default_out([])
    assert cli.default_out(["v1.0", "feature/x y"]) == cli.RESULTS / "compare-v1.0-feature_x_y.html"
    assert cli.default_out(["HEAD~1"]) == cli.RESULTS / "compare-HEAD_1-workspace.html"


def test_more_than_two_revisions_is_refused_in_one_line(capsys, monkeypatch):
    monkeypatch.setattr(cli, "page", lambda a: pytest.fail("no work before the check"))
    assert cli.cmd_report(args(compare=["a", "b", "c"])) == 2
    assert capsys.readouterr().err == "prbench report --compare: one or two revisions (REV [REV2])\n"


def test_a_config_error_is_one_line_and_exit_1_with_no_page_written(capsys, monkeypatch, tmp_path):
    def fail(a):
        raise ConfigError("params.yaml: scoring.rms: missing")
    monkeypatch.setattr(cli, "page", fail)
    assert cli.cmd_report(args(out=str(tmp_path / "r.html"))) == 1
    assert capsys.readouterr().err == "params.yaml: scoring.rms: missing\n" and not (tmp_path / "r.html").exists()


def test_the_page_is_written_where_asked_and_its_size_said(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "page", lambda a: "é" * 768)   # 1536 bytes: 1.5 KB, said as 2
    assert cli.cmd_report(args(out=str(tmp_path / "r.html"))) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == "é" * 768
    assert capsys.readouterr().out == f"prbench: wrote {tmp_path / 'r.html'} (2 KB); open it in a browser\n"
    assert cli.cmd_report(args(compare=["v1", "v2"], out=str(tmp_path / "c.html"))) == 0, "two revisions are fine"
    monkeypatch.chdir(tmp_path)
    assert cli.cmd_report(args(compare=["v1"])) == 0
    assert (tmp_path / "results/compare-v1-workspace.html").exists()


def test_compare_reads_rev2_or_the_workspace(monkeypatch):
    from tasks.ops.report import compare

    calls = []
    monkeypatch.setattr(compare, "build", lambda a, b, title: calls.append((a, b, title)) or "html")
    assert cli.page(args(compare=["v1"])) == "html" and cli.page(args(compare=["v1", "v2"])) == "html"
    assert calls == [("v1", None, "prbench: v1 vs workspace"), ("v1", "v2", "prbench: v1 vs v2")]


def test_the_parser_takes_compare_out_and_params_with_their_help():
    top = argparse.ArgumentParser(prog="prbench")
    cli.add_parser(top.add_subparsers())
    a = top.parse_args(["report", "--compare", "v1", "v2", "--out", "x.html", "--params", "p.yaml"])
    assert (a.compare, a.out, a.params, a.func) == (["v1", "v2"], "x.html", "p.yaml", cli.cmd_report)
    assert (top.parse_args(["report"]).compare, top.parse_args(["report"]).out) == (None, None)
    assert top.parse_args(["report"]).params is None
    text = " ".join(top.format_help().split())
    assert "report the report page of the workspace's outputs, or two versions side by side (--compare REV [REV2])" \
        in text
    sub = " ".join(top._subparsers._group_actions[0].choices["report"].format_help().split())
    assert "--compare REV [REV ...] git revisions (tag, commit, branch): REV against REV2 (default: the workspace)" \
        in sub
    assert "--out OUT the HTML file to write (default under results/)" in sub
    assert "--params PARAMS params file for the run page (default params.yaml)" in sub


def test_the_run_page_reads_the_params_the_inputs_that_exist_this_codes_version_and_the_machines(monkeypatch):
    from tasks.core import layout
    from tasks.ops import params as P
    from tasks.ops.report import build, provenance, sources

    seen = {}
    monkeypatch.setattr(P, "load_params", lambda path: seen.update(params=path) or {"p": 1})
    monkeypatch.setattr(sources, "run_inputs", lambda params: {"in": params["p"]})
    monkeypatch.setattr(provenance, "code_version", lambda root, paths: seen.update(version=(root, paths)) or "v")
    monkeypatch.setattr(provenance, "machine_records", lambda: ["m"])
    monkeypatch.setattr(build, "run_context", lambda *a: seen.update(context=a) or "ctx")
    monkeypatch.setattr(build, "render", lambda template, ctx: f"{template}:{ctx}")
    assert cli.page(args(params="p.yaml")) == "run.html.j2:ctx"
    assert seen == {"params": "p.yaml", "version": (".", layout.REPORT_CODE_VERSION),
                    "context": ({"p": 1}, {"in": 1}, "v", ["m"])}


# --- the run page's build ------------------------------------------------------------------------------------

def test_the_page_lists_its_sections_in_page_order_and_writes_the_headline(monkeypatch, tmp_path):
    from tasks.ops.report import build

    ctx = {"headline": {}, "leaderboard": None, "heatmaps": [], "validity": {}, "correlation": None, "data": {},
           "provenance": {}, "benchmark_matrix": None, "benchmark_boards": {"rb2": {}},
           "downstream": [{"name": "bon", "context": None}, {"name": "rl", "context": {}}]}
    monkeypatch.setattr(build, "run_context", lambda params, inputs, version: ctx)
    monkeypatch.setattr(build, "render", lambda template, context: "<p>é</p>")
    out = {"page": str(tmp_path / "index.html"), "headline": str(tmp_path / "headline.json")}
    got = build.run({}, {}, "v", out)
    assert got == {"sections": ["headline", "domains", "validity", "rl", "data", "provenance", "benchmarks"],
                   "run": {"page_bytes": 9}}
    assert (tmp_path / "index.html").read_text(encoding="utf-8") == "<p>é</p>"
    assert (tmp_path / "headline.json").exists()
    ctx.update(benchmark_boards={}, benchmark_matrix={"x": 1})
    assert build.run({}, {}, "v", {"page": str(tmp_path / "p2.html")})["sections"][-1] == "benchmarks"
    assert not (tmp_path / "p2.json").exists()
    ctx.update(benchmark_matrix=None)
    assert "benchmarks" not in build.run({}, {}, "v", {"page": str(tmp_path / "p3.html")})["sections"]


def test_the_provenance_block_names_references_differences_rms_dataset_and_inputs(tmp_path):
    import json

    from tasks.core.artifacts import file_hash
    from tasks.ops.report import build, provenance

    (tmp_path / "paper.yaml").write_text("scoring:\n  batch: 16\n  rms:\n    a: {kind: seq-cls}\nseed: 1\n")
    (tmp_path / "same.yaml").write_text("scoring:\n  batch: 8\n  rms:\n    a: {kind: seq-cls}\nseed: 1\n")
    for name in ("questions", "pairs"):
        (tmp_path / name).write_text(name)
    (tmp_path / "ingest.json").write_text(json.dumps({"revision": {"org/lamp": "abc"}}))
    (tmp_path / "a.json").write_text(json.dumps({"identity": "seq:a"}))
    src = Sources({"reference:paper": str(tmp_path / "paper.yaml"), "reference:same": str(tmp_path / "same.yaml"),
                   "questions": str(tmp_path / "questions"), "pairs": str(tmp_path / "pairs"),
                   "ingest_metrics": str(tmp_path / "ingest.json"), "score_metrics:a": str(tmp_path / "a.json")})
    params = {"scoring": {"batch": 8, "rms": {"a": {"kind": "seq-cls", "model": "m"}}}, "seed": 1}
    got = build.provenance_context(params, src, "v" * 64)
    assert got["references"] == [{"label": "paper", "path": str(tmp_path / "paper.yaml"), "differing": 2},
                                 {"label": "same", "path": str(tmp_path / "same.yaml"), "differing": 1}]
    assert got["differences"] == [{"key": "scoring.batch", "run": "8", "references": ["16", "8"]},
                                  {"key": "scoring.rms.a.model", "run": '"m"', "references": ["(absent)"] * 2}]
    assert [(r["rm"], r["identity"]) for r in got["rms"]] == [("a", "seq:a")]
    assert got["dataset"] == provenance.dataset_hash({"questions": str(tmp_path / "questions"),
                                                      "pairs": str(tmp_path / "pairs")})
    assert got["revisions"] == [{"repo": "org/lamp", "revision": "abc", "read_by": "ingest"}]
    assert got["inputs"][0] == {"name": "ingest_metrics", "path": str(tmp_path / "ingest.json"),
                                "sha256": file_hash(tmp_path / "ingest.json")}
    assert [i["name"] for i in got["inputs"]] == sorted(src.inputs)
    assert got["code_version"] == "v" * 64 and len(got["params_hash"]) == 64
    assert build.provenance_context(params, Sources({}), "v")["dataset"] is None


def test_the_command_builds_the_page_its_arguments_ask_for(monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "page", lambda a: f"<p>{a.compare}</p>")
    assert cli.cmd_report(args(compare=["v1"], out=str(tmp_path / "c.html"))) == 0
    assert (tmp_path / "c.html").read_text(encoding="utf-8") == "<p>['v1']</p>"


def test_the_report_stage_reads_what_exists_names_this_codes_version_and_lists_its_sections(monkeypatch):
    from tasks.core import layout
    from tasks.ops.report import build, provenance, sources, stage

    monkeypatch.setattr(sources, "run_inputs", lambda params: {"from": params})
    assert stage.stage_inputs({"p": 1}, None, {}) == {"from": {"p": 1}}
    seen = {}
    monkeypatch.setattr(provenance, "code_version", lambda root, paths: seen.update(version=(root, paths)) or "v")
    monkeypatch.setattr(build, "run", lambda *a: seen.update(run=a) or {"sections": ["x"]})
    assert stage.run({"p": 1}, {"i": "x"}, {"page": "o"}) == {"sections": ["x"]}
    assert seen == {"version": (".", layout.REPORT_CODE_VERSION), "run": ({"p": 1}, {"i": "x"}, "v", {"page": "o"})}
    assert stage.stage_summary({"page": "report/index.html"}, {"sections": ["headline", "data"]}) == \
        "report: open report/index.html in a browser (sections: headline, data)"
