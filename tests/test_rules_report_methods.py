"""The report's downstream sections in registry order (tasks/ops/report/methods.py) and `prbench report`'s
command (tasks/ops/report/cli.py), fast: a method without its own drawing gets the generic section (the mean
judge score per RM over its questions, with a seeded 95% bootstrap CI over questions); BoN's section folds the
null baselines by role; the command's one-line refusals, exit codes and default page names."""
from __future__ import annotations

import argparse
from types import SimpleNamespace

import numpy as np
import pytest

from tasks.core.determinism import stable_rng
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
    expect = []   # by hand: each RM's own stream of the seed, questions in id order, 1000 resamples
    for rm in ("a", "b"):
        rng = stable_rng(7, "report", "dpo", rm)
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
    more = Side("dpo", "dpo", per_question={"0-first": {"q1": 0.1, "q2": 0.2, "q3": 0.9}, **SCORES})
    added = RM.generic(method(loaded=more), Sources({"dpo_per_question": "p"}), {"common": {"seed": 7}})["rows"]
    assert added[1:] == got["rows"], "an RM added before the others in name order moves no other RM's interval"
    assert added[0]["score"] == "0.400", "the mean judge score (the median is 0.200)"
    # distinct scores: the interval's bounds are the stream's own, not a few discrete values any stream reaches
    fine = {f"q{i:02d}": (i * 0.37) % 1 for i in range(30)}
    row = RM.generic(method(loaded=Side("dpo", "dpo", per_question={"c": fine})), Sources({"dpo_per_question": "p"}),
                     {"common": {"seed": 7}})["rows"][0]
    x = np.array([fine[q] for q in sorted(fine)])
    lo, hi = np.quantile(x[stable_rng(7, "report", "dpo", "c").integers(0, len(x), size=(1000, len(x)))].mean(axis=1),
                         [0.025, 0.975])
    assert row["ci"] == f"[{lo:.3f}, {hi:.3f}]", "the stream is ('report', method, rm)"


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
    from flows.cli import main

    monkeypatch.setattr(cli, "page", lambda a: pytest.fail("no work before the check"))
    assert main(["report", "--compare", "a", "b", "c"]) == 1
    assert capsys.readouterr().err == "--compare: one or two revisions (REV [REV2]), got 3\n"


def test_a_config_error_is_one_line_and_exit_1_with_no_page_written(capsys, monkeypatch, tmp_path):
    from flows.cli import main

    def fail(a):
        raise ConfigError("params.yaml: scoring.rms: missing")
    monkeypatch.setattr(cli, "page", fail)
    assert main(["report", "--out", str(tmp_path / "r.html")]) == 1
    assert capsys.readouterr().err == "params.yaml: scoring.rms: missing\n" and not (tmp_path / "r.html").exists()


def test_out_and_params_must_be_a_file_and_params_is_for_the_run_page(capsys, monkeypatch, tmp_path):
    """A folder given as the page to write, a params file that is not there, or --params beside --compare (each
    version's page reads its own params.yaml): one line naming the flag, before any page is built."""
    from flows.cli import main

    monkeypatch.setattr(cli, "page", lambda a: pytest.fail("no work before the check"))
    (tmp_path / "p.yaml").write_text("{}")
    for argv, line in ((["--out", str(tmp_path)], f"--out: '{tmp_path}' is a folder, not a file"),
                       (["--params", str(tmp_path / "q.yaml")], f"--params: no such file '{tmp_path / 'q.yaml'}' (did you mean "
                                                                f"'{tmp_path / 'p.yaml'}'?)"),
                       (["--compare", "v1", "--params", str(tmp_path / "p.yaml")],
                        "--params: only for the run page: --compare builds each version's page from its own params.yaml; "
                        "drop --params, or --compare")):
        assert main(["report", *argv]) == 1
        assert capsys.readouterr().err.splitlines() == [line]


def test_the_page_is_written_where_asked_and_its_size_said(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "page", lambda a: "é" * 768)   # 1536 bytes: 1.5 KB, said as 2
    explorers = []
    monkeypatch.setattr(cli, "write_explorer", lambda params, path: explorers.append((params, path)) or 3072)
    assert cli.cmd_report(args(out=str(tmp_path / "r.html"), params="p.yaml")) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == "é" * 768
    assert capsys.readouterr().out == (f"prbench: wrote {tmp_path / 'r.html'} (2 KB); open it in a browser\n"
                                       f"prbench: wrote {tmp_path / 'pairs.html'} (3 KB), the pair explorer\n")
    assert explorers == [("p.yaml", tmp_path / "pairs.html")], "beside the page, as its link says; the same params"
    assert cli.cmd_report(args(compare=["v1", "v2"], out=str(tmp_path / "c.html"))) == 0, "two revisions are fine"
    monkeypatch.chdir(tmp_path)
    assert cli.cmd_report(args(compare=["v1"])) == 0
    assert (tmp_path / "results/compare-v1-workspace.html").exists()
    assert len(explorers) == 1, "a compare page has no pair explorer"


def test_compare_reads_rev2_or_the_workspace(monkeypatch):
    from tasks.ops.report import compare

    calls = []
    monkeypatch.setattr(compare, "build", lambda a, b, title: calls.append((a, b, title)) or "html")
    assert cli.page(args(compare=["v1"])) == "html" and cli.page(args(compare=["v1", "v2"])) == "html"
    assert calls == [("v1", None, "prbench: v1 vs workspace"), ("v1", "v2", "prbench: v1 vs v2")]


def test_the_parser_takes_compare_out_and_params_with_their_help(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.yaml").write_text("{}")
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

    ctx = {"headline": {}, "leaderboard": {}, "heatmaps": [], "explain": {}, "validity": {}, "correlation": None,
           "data": {}, "provenance": {}, "benchmark_matrix": None, "benchmark_boards": {"rb2": {}},
           "downstream": [{"name": "bon", "context": None}, {"name": "rl", "context": {}}]}
    seen = {}
    monkeypatch.setattr(build, "run_context", lambda *a: seen.update(context=a) or ctx)
    monkeypatch.setattr(build, "render", lambda *a: seen.update(render=a) or "<p>é</p>")
    monkeypatch.setattr(build, "explorer_page", lambda *a: seen.update(explorer=a) or "<p>pairs</p>")
    out = {"page": str(tmp_path / "index.html"), "headline": str(tmp_path / "headline.json"),
           "pairs": str(tmp_path / "pairs.html")}
    got = build.run({"p": 1}, {"i": "x"}, "v", out)
    assert seen == {"context": ({"p": 1}, {"i": "x"}, "v"), "render": ("run.html.j2", ctx),
                    "explorer": ({"p": 1}, {"i": "x"})}
    assert got == {"sections": ["headline", "leaderboard", "domains", "explain", "validity", "rl", "data",
                                "provenance", "benchmarks"],
                   "run": {"page_bytes": 9, "explorer_bytes": 12}}
    assert (tmp_path / "pairs.html").read_text(encoding="utf-8") == "<p>pairs</p>"
    assert (tmp_path / "index.html").read_text(encoding="utf-8") == "<p>é</p>"
    assert (tmp_path / "headline.json").exists()
    ctx.update(benchmark_boards={}, benchmark_matrix={"x": 1})
    assert build.run({}, {"i": "x"}, "v", {"page": str(tmp_path / "p2.html")})["sections"][-1] == "benchmarks"
    assert not (tmp_path / "p2.json").exists()
    ctx.update(benchmark_matrix=None)
    assert "benchmarks" not in build.run({}, {"i": "x"}, "v", {"page": str(tmp_path / "p3.html")})["sections"]


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


# --- the run page's context: each section gets what it reads ------------------------------------------------

def _recorder(seen: dict, name: str, value):
    """A stand-in for a section's function: records what it was handed, returns `value`."""
    return lambda *a: seen.setdefault(name, a) and value


def _run_inputs(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tasks.core.artifacts import write_json

    def table(name, rows):
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / name)
        return str(tmp_path / name)

    def js(name, value):
        return str(write_json(value, tmp_path / name))
    return {"leaderboard": table("lb.parquet", [{"rm": "a", "acc": 0.5, "extra": 1}]),
            "leaderboard_metrics": js("lbm.json", {"lb": 1}),
            "correlation": table("corr.parquet", [{"c": 1}]), "correlation_points": table("pts.parquet", [{"p": 2}]),
            "correlation_metrics": js("cm.json", {"cm": 1}), "human_eval_metrics": js("he.json", {"he": 1}),
            "pairs_metrics": js("pm.json", {"pm": 1}), "generic_pairs_metrics": js("gp.json", {"gp": 1}),
            "ingest_metrics": js("ing.json", {"ing": 1}), "explain_metrics": js("ex.json", {"ex": 1}),
            "bench_metrics:rb2": js("rb2.json", {"rb": 2}),
            "bench_metrics:ppe": js("ppe.json", {"ppe": 3})}


def _record_sections(monkeypatch):
    from tasks.ops.report import benchmarks, board, build, downstream, explain, headline, methods

    seen = {}
    for mod, fn in ((board, "heatmaps"), (headline, "headline"), (explain, "section"), (downstream, "validity"),
                    (downstream, "human_eval"),
                    (downstream, "correlation"), (downstream, "data_card"), (methods, "sections"),
                    (benchmarks, "matrix"), (benchmarks, "leaderboards"), (build, "provenance_context")):
        name = f"{mod.__name__.rsplit('.', 1)[-1]}.{fn}"
        monkeypatch.setattr(mod, fn, _recorder(seen, name, f"<{name}>"))
    monkeypatch.setattr(board, "leaderboard", _recorder(seen, "board.leaderboard", {"rows": []}))
    return seen


def test_the_run_context_hands_each_section_what_it_reads_and_folds_rms_by_role(monkeypatch, tmp_path):
    from tasks.ops.report import build

    seen = _record_sections(monkeypatch)
    inputs = _run_inputs(tmp_path)
    rms = {"a": {"kind": "seq-cls"}, "r": {"kind": "random"}, "l": {"kind": "length-shorter"},
           "g": {"kind": "mixture"}, "h": {"kind": "mixture"}}
    params = {"scoring": {"rms": rms}, "leaderboard": {"heatmap_strategy": "rag"}, "report": {"title": "Mine"},
              "common": {"fidelity": "release"}}
    got = build.run_context(params, inputs, "v1", ["m"])
    lb_rows = [{"rm": "a", "acc": 0.5, "extra": 1}]
    assert seen["board.leaderboard"] == (lb_rows, ["rm", "acc", "extra"], {"lb": 1}, {"g", "h"}, {"r", "l"})
    assert got["leaderboard"] == {"rows": [], "fidelity": "release"}, "what the RMs were shown, from params"
    assert seen["headline.headline"] == ({"rows": [], "fidelity": "release"}, rms)
    assert seen["board.heatmaps"] == (lb_rows, "rag", {"r", "l"})
    assert seen["downstream.validity"] == ({"pm": 1}, {"gp": 1}, params)
    assert seen["explain.section"] == ({"ex": 1}, rms, "rag"), "the error analysis, its length rules by kind"
    assert seen["downstream.human_eval"] == ({"he": 1},)
    assert seen["downstream.correlation"] == ([{"c": 1}], [{"p": 2}], {"cm": 1})
    assert seen["benchmarks.matrix"] == ({"cm": 1},)
    assert seen["benchmarks.leaderboards"] == ({"rb2": {"rb": 2}, "ppe": {"ppe": 3}},)
    assert seen["downstream.data_card"] == ({"ing": 1}, params)
    assert seen["methods.sections"][0].inputs == inputs and seen["methods.sections"][1] is params
    assert seen["build.provenance_context"][0] is params and seen["build.provenance_context"][1].inputs == inputs
    assert seen["build.provenance_context"][2:] == ("v1", ["m"])
    assert got == {"title": "Mine", "mode": "run", "headline": "<headline.headline>",
                   "leaderboard": {"rows": [], "fidelity": "release"}, "heatmaps": "<board.heatmaps>",
                   "explain": "<explain.section>", "validity": "<downstream.validity>", "human": "<downstream.human_eval>",
                   "downstream": "<methods.sections>", "correlation": "<downstream.correlation>",
                   "benchmark_matrix": "<benchmarks.matrix>", "benchmark_boards": "<benchmarks.leaderboards>",
                   "data": "<downstream.data_card>", "provenance": "<build.provenance_context>"}


def test_without_leaderboard_outputs_no_board_headline_or_heatmaps_and_a_default_title(monkeypatch, tmp_path):
    from tasks.ops.report import build

    seen = _record_sections(monkeypatch)
    inputs = {k: v for k, v in _run_inputs(tmp_path).items() if k not in ("leaderboard", "leaderboard_metrics")}
    got = build.run_context({"scoring": {"rms": {"a": {"kind": "seq-cls"}}}}, inputs, "v")
    assert got["leaderboard"] is None and got["headline"] is None and got["heatmaps"] is None
    assert "board.leaderboard" not in seen and "headline.headline" not in seen and "board.heatmaps" not in seen
    assert got["title"] == "prbench report" and seen["build.provenance_context"][3] is None
    assert build.run_context({"scoring": {"rms": {}}, "report": {"title": ""}}, inputs, "v")["title"] == \
        "prbench report", "an empty title is the default"
    assert build.run_context({"scoring": {"rms": {}}, "report": None}, inputs, "v")["title"] == "prbench report"
    # the board without metrics is not drawn; rows without a heatmap strategy still give heatmaps (the default)
    rows_only = {**inputs, "leaderboard": _run_inputs(tmp_path)["leaderboard"]}
    seen.clear()
    got = build.run_context({"scoring": {"rms": {}}}, rows_only, "v")
    assert got["leaderboard"] is None and "board.leaderboard" not in seen
    assert seen["board.heatmaps"] == ([{"rm": "a", "acc": 0.5, "extra": 1}], None, set())


def test_the_headline_file_holds_the_headline_of_the_leaderboard_and_correlation_metrics(monkeypatch, tmp_path):
    import json

    from tasks.downstream.correlation import headline as H
    from tasks.ops.report import build

    monkeypatch.setattr(build, "run_context", lambda *a: {k: None for k in (
        "headline", "leaderboard", "heatmaps", "explain", "validity", "correlation", "data", "provenance",
        "benchmark_matrix", "benchmark_boards")} | {"downstream": []})
    monkeypatch.setattr(build, "render", lambda template, context: "")
    monkeypatch.setattr(H, "headline_metrics", lambda lb, corr: {"from": [lb, corr]})
    inputs = _run_inputs(tmp_path)
    out = {"page": str(tmp_path / "p.html"), "headline": str(tmp_path / "h.json")}
    assert build.run({}, inputs, "v", out) == {"sections": [], "run": {"page_bytes": 0, "explorer_bytes": None}}
    assert json.loads((tmp_path / "h.json").read_text()) == {"from": [{"lb": 1}, {"cm": 1}]}


def test_the_provenance_context_hands_each_part_what_it_reads(monkeypatch, tmp_path):
    import functools
    import hashlib
    import json

    from tasks.core.artifacts import file_hash
    from tasks.ops.report import board, build, provenance

    seen = {}
    rec = functools.partial(_recorder, seen)
    monkeypatch.setattr(provenance, "load_references", rec("refs", {"paper": {}, "mine": {}}))
    monkeypatch.setattr(provenance, "params_differences", rec("diffs", [
        {"key": "k", "run": {"b": 1, "a": "é"}, "references": {"paper": provenance.MISSING, "mine": [2, 1]}},
        {"key": "j", "run": 3, "references": {"paper": 3, "mine": 4}}]))
    monkeypatch.setattr(provenance, "rm_rows", rec("rm_rows", ["row"]))
    monkeypatch.setattr(provenance, "revisions", rec("revisions", ["rev"]))
    monkeypatch.setattr(provenance, "dataset_hash", rec("dataset", {"d": 1}))
    monkeypatch.setattr(provenance, "package_versions", lambda: ["pkgs"])
    monkeypatch.setattr(provenance, "numerics", rec("numerics", {"n": 1}))
    files = {}
    for name, value in (("paper.yaml", "x: 1\n"), ("mine.yaml", "x: 2\n"), ("s_a.json", {"id": "a"}),
                        ("s_b.json", {"id": "b"}), ("train.json", {"t": 1}), ("ing.json", {"ing": 1}),
                        ("rb2.json", {"rb2": 1}), ("ppe.json", {"ppe": 1}), ("q", "q"), ("p", "p"), ("pr", "pr")):
        (tmp_path / name).write_text(value if isinstance(value, str) else json.dumps(value))
        files[name] = str(tmp_path / name)
    src = Sources({"reference:paper": files["paper.yaml"], "reference:mine": files["mine.yaml"],
                   "score_metrics:a": files["s_a.json"], "score_metrics:b": files["s_b.json"],
                   "train_rm_metrics": files["train.json"], "ingest_metrics": files["ing.json"],
                   "bench_metrics:rb2": files["rb2.json"], "bench_metrics:ppe": files["ppe.json"],
                   "questions": files["q"], "pairs": files["p"], "profiles": files["pr"]})
    params = {"scoring": {"rms": {"a": {}}}, "llms": {"l": {"model": "m"}}, "z": "é"}
    got = build.provenance_context(params, src, "v", ["m1"])
    assert seen["refs"] == ({"paper": files["paper.yaml"], "mine": files["mine.yaml"]},)
    assert seen["diffs"] == (params, {"paper": {}, "mine": {}})
    assert seen["rm_rows"] == ({"a": {}}, {"l": {"model": "m"}}, {"a": {"id": "a"}, "b": {"id": "b"}}, {"t": 1})
    assert seen["revisions"] == ({"ing": 1}, {"rb2": {"rb2": 1}, "ppe": {"ppe": 1}})
    assert seen["dataset"] == ({"questions": files["q"], "pairs": files["p"], "profiles": files["pr"]},)
    assert seen["numerics"] == (["m1"],)
    assert got["references"] == [{"label": "paper", "path": files["paper.yaml"], "differing": 1},
                                 {"label": "mine", "path": files["mine.yaml"], "differing": 2}]
    assert got["differences"] == [{"key": "k", "run": '{"a": "é", "b": 1}', "references": ["(absent)", "[2, 1]"]},
                                  {"key": "j", "run": "3", "references": ["3", "4"]}], "sorted keys, not escaped"
    assert got["params_hash"] == hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()
    assert got["rms"] == ["row"] and got["rms_open"] == board.MAX_RMS_SHOWN and got["dataset"] == {"d": 1}
    assert got["revisions"] == ["rev"] and got["packages"] == ["pkgs"] and got["numerics"] == {"n": 1}
    assert got["code_version"] == "v" and got["code_paths"] is build.layout.REPORT_CODE_VERSION
    assert got["inputs"] == [{"name": n, "path": p, "sha256": file_hash(p)} for n, p in sorted(src.inputs.items())]
    seen.clear()
    build.provenance_context({"scoring": {"rms": {}}, "llms": None}, Sources({"questions": files["q"]}), "v")
    assert seen["rm_rows"][1] == {} and seen["dataset"] == ({"questions": files["q"]},) and seen["numerics"] == (None,)
    assert seen["rm_rows"][3] is None, "no train_rm metrics read as None"


def test_the_params_hash_names_values_json_cannot_write_by_their_text():
    import hashlib
    import json
    from pathlib import PurePosixPath

    from tasks.ops.report import build

    got = build.provenance_context({"scoring": {"rms": {}}, "path": PurePosixPath("a/b")}, Sources({}), "v")
    assert got["params_hash"] == hashlib.sha256(json.dumps({"path": "a/b", "scoring": {"rms": {}}}).encode()).hexdigest()


def test_the_pages_environment_escapes_refuses_unknown_names_and_keeps_blocks_tidy():
    import jinja2

    from tasks.ops.report import build

    env = build.environment()
    assert env.from_string("{{ x }}").render(x="<b>") == "&lt;b&gt;", "autoescaped"
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ y }}").render()
    assert env.from_string("  {% if 1 %}\nA\n  {% endif %}\nB\n").render() == "A\nB\n", "blocks take no lines"
    assert env.get_template("section_rl.html.j2").filename.startswith(str(build.TEMPLATES))
    assert build.TEMPLATES.name == "templates" and (build.TEMPLATES / "run.html.j2").exists()
    html = build.render("section_downstream.html.j2", {"d": {"name": "dpo", "title": "DPO <x>"}, "section": None})
    assert html.startswith('<section id="dpo">\n<h2>DPO &lt;x&gt;</h2>\n') and html.endswith("</section>\n")
    assert "no DPO &lt;x&gt; results yet" in html
