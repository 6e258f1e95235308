"""The report page, opened in headless Chromium: built by the real report stage from real stage outputs
(a temp copy of the project: the bundled sample, the dummy LLM, every stage but train_rm and RL), and the
compare page of two tagged versions of the versions test's repo."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from flows import cli
from tasks.core import layout
from tasks.ops.report import build, provenance, sources
from tests.browser import browser_page, screenshot
from tests.stage_project import save_params
from tests.test_dvc import _copy_repo
from tests.test_versions import repo, sh  # noqa: F401 - repo: the versions test's repo (v1 tagged, v2 at HEAD)

SECTIONS = ["headline", "leaderboard", "domains", "explain", "validity", "bon", "rl", "correlation", "benchmarks", "data", "provenance"]
# cheap RMs, two of them LLM judges on the dummy backend (position bias); no trained RM, so no train_rm stage
RMS = {"length-longer": {"kind": "length-longer"}, "length-shorter": {"kind": "length-shorter"},
       "random": {"kind": "random"}, "similarity": {"kind": "similarity", "encoder": "embedded:all-MiniLM-L6-v2"},
       "smollm2-pairwise": {"kind": "judge-pairwise", "llm": "smollm2", "verdict": "logprobs", "both_orders": True},
       "smollm2-pointwise": {"kind": "judge-pointwise", "llm": "smollm2", "verdict": "logprobs"}}


def _small(params: dict) -> dict:
    params["ingest"]["limit_per_split"] = 4             # 4 questions per domain and split: 12 test pairs scored
    params["profiles"]["retriever"] = "bm25"            # no encoder pass over every post
    params["pairs"]["generate_per_domain"] = 2
    params["llms"]["smollm2"] = {"backend": "dummy", "model": "smollm2"}
    params["scoring"]["rms"] = RMS
    params["bon"]["questions_limit"] = 2
    params["human_eval"]["proxy_limit"] = 2
    params["correlation"]["include_null_baselines"] = True   # enough RMs for numbers, not "too few RMs"
    params["correlation"]["downstream"] = ["bon"]              # RL does not run here
    params["correlation"]["primary"]["rms"] = ["*"]            # no ladder here: the primary test over these RMs
    return params


SKIPPED = {"train_rm", "rl_train", "rl_eval"}   # no trained RM; RL training is the RL tests' (the page says "no RL results")


def _run_stages(root: Path) -> None:
    from flows.stage import flow_of

    rms = sorted(RMS)
    from tasks.core.stage_table import TABLE

    for s in TABLE:
        stage = s.name
        if stage in SKIPPED:
            continue
        start = time.monotonic()
        keys = rms if s.foreach == "scoring.rms" else sorted(yaml.safe_load(Path("params.yaml").read_text())[s.foreach])
        for kwargs in ([{s.key_arg: k} for k in keys] if s.per_rm else [{}]):
            state = flow_of(stage)(return_state=True, **kwargs)
            assert state.is_completed(), f"{stage} {kwargs}: {state.message}"
        print(f"report test project: {stage} in {time.monotonic() - start:.1f} s", flush=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory, prefect_harness):
    root = tmp_path_factory.mktemp("report") / "project"
    root.mkdir()
    _copy_repo(root)
    for stale in ("metrics", "plots", "report"):   # the checkout's committed results: rebuilt here
        shutil.rmtree(root / stale, ignore_errors=True)
    params = _small(yaml.safe_load((root / "params.yaml").read_text()))
    save_params(root, params)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        _run_stages(root)   # the pipeline's stage order; the last stage is the report
    assert (root / layout.REPORT["page"]).exists()
    assert json.loads((root / layout.REPORT["headline"]).read_text())["leaderboard"], "dvc metrics diff's short head"
    return root


def _rows(page) -> list[dict]:
    """The leaderboard as the reader sees it: per row, each cell's sort value, CI bounds and text."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('#leaderboard-table tbody tr[data-rm]')).map(tr => ({
        rm: tr.dataset.rm, strategy: tr.dataset.strategy,
        cells: Object.fromEntries(Array.from(tr.cells).map(td => [td.dataset.key,
            {v: td.dataset.v, lo: td.dataset.lo, hi: td.dataset.hi, text: td.innerText.trim()}]))}))""")


def _number(v):
    return None if v in (None, "") else float(v)


def _open(page, path: Path) -> float:
    """Load a page from disk; its load-event time (ms) as the browser's performance API reports it."""
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_report_page_in_a_browser(project):
    page_file = project / layout.REPORT["page"]
    size = page_file.stat().st_size
    assert size < 3 * 1024 * 1024, f"page is {size} bytes"
    board = json.loads((project / layout.LEADERBOARD["metrics"]).read_text())
    with browser_page() as (page, errors):
        load_ms = _open(page, page_file)
        print(f"report page: {size} bytes, load event at {load_ms:.0f} ms")
        assert load_ms < 2000
        for section in SECTIONS:
            assert page.locator(f"section#{section} h2").is_visible(), section

        rows = _rows(page)
        expected = {(rm, s): e for rm, per in board["rms"].items() for s, e in per.items()}
        assert len(expected) == len(RMS) * len(yaml.safe_load((project / "params.yaml").read_text())
                                               ["scoring"]["strategies"])
        assert sorted((r["rm"], r["strategy"]) for r in rows) == sorted(expected), "one row per RM × strategy"
        for r in rows:
            e, c = expected[(r["rm"], r["strategy"])], r["cells"]
            for kind in ("micro", "macro"):
                acc, (lo, hi) = e[kind]["accuracy"], e[kind]["ci"]
                assert (_number(c[kind]["v"]), _number(c[kind]["lo"]), _number(c[kind]["hi"])) == (acc, lo, hi)
                n = e[kind]["n"]   # a zero-width CI says why: every pair one way, or (macro) every resample equal
                why = "" if lo != hi else f" (n = {n}, all {'correct' if acc == 1 else 'wrong'})" if acc in (0, 1) \
                    else f" (n = {n}; zero width: every resample gave the same value)"
                assert c[kind]["text"] == f"{100 * acc:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]{why}"
            for key in ("ties", "invalid", "truncated", "pairs"):
                assert int(c[key]["v"]) == e[key], (r["rm"], r["strategy"], key)
            assert _number(c["position_bias"]["v"]) == e["position_bias"]
        assert any(r["cells"]["position_bias"]["v"] for r in rows), "the pairwise judge's position bias is shown"
        assert page.locator("#fidelity").inner_text() == "corrected", "the leaderboard names the fidelity"

        before = [(r["rm"], r["strategy"]) for r in rows]
        page.click("#leaderboard-table th[data-key=micro]")
        desc = [_number(r["cells"]["micro"]["v"]) for r in _rows(page)]
        assert desc == sorted(desc, reverse=True) and [(r["rm"], r["strategy"]) for r in _rows(page)] != before
        page.click("#leaderboard-table th[data-key=micro]")
        assert [_number(r["cells"]["micro"]["v"]) for r in _rows(page)] == sorted(desc)
        page.click("#leaderboard-table th[data-key=rm]")
        names = [r["rm"] for r in _rows(page)]
        assert names == sorted(names)

        heat = pq.read_table(project / layout.LEADERBOARD["leaderboard"]).to_pylist()
        assert page.locator(".heatmap").count() == len({r["strategy"] for r in heat})
        curve = pq.read_table(project / layout.BON_REPORT["curve"]).to_pylist()
        lines = {r["rm"] for r in curve if r["domain"] == "all" and r["method"] == "expected"}
        assert {"(oracle)", "(random)"} < lines and len(lines) > 3
        assert page.locator("#bon svg path").count() == len(lines), "one curve per RM and reference line"
        corr = pq.read_table(project / layout.CORRELATION["correlation"]).to_pylist()
        assert page.locator("#correlation-table tbody tr").count() == len(corr)
        assert page.locator("#correlation svg.scatter circle").count() > 0
        primary = json.loads((project / layout.CORRELATION["metrics"]).read_text())["primary"]
        text = page.locator("#primary-test").inner_text()
        verdict = "not significant" if not primary["significant"] else ": significant"
        assert text.startswith("Primary test") and verdict in text and f"over {primary['n_rms']} RMs" in text
        assert "exploratory" in text and ("power " in text or "not simulated" in text)
        assert page.locator("#no-human").is_visible(), "no human ratings yet"
        assert page.locator("#no-rl").is_visible(), "no RL results"
        assert page.locator("#provenance [data-rm]").count() == len(RMS)
        screenshot(page, "report-page")
        assert errors == []


@pytest.mark.slow
@pytest.mark.timeout(420)   # as the module's other tests: whichever runs first builds the project (~4 min under load)
def test_pair_explorer_and_why_rms_fail_in_a_browser(project):
    """The explorer of the run (its pairs, the contestants' outcomes, a search, a pair opened) and the section,
    whose length rules pick the longer answer as defined: real scores of the real baseline RMs."""
    from tests.test_report_scale import _explain_outputs, _ids, expected_ids

    cells, pairs, metrics = _explain_outputs(project)
    for rm, share in (("length-longer", 1.0), ("length-shorter", 0.0)):
        assert {s: f["picked_longer"]["value"] for s, f in metrics["rms"][rm]["strategies"].items()} == \
            dict.fromkeys(metrics["strategies"], share), rm
    contestants = sorted({c["rm"] for c in cells if c["role"] == "contestant"})
    explorer = project / layout.REPORT["pairs"]
    with browser_page() as (page, errors):
        load_ms = _open(page, explorer)
        print(f"pair explorer: {explorer.stat().st_size} bytes, {len(pairs)} pairs, load event at {load_ms:.0f} ms")
        assert _ids(page) == expected_ids(cells, pairs, contestants, metrics["strategies"]) and len(pairs) > 3
        page.select_option("#pairs-strategy", "raw_profile")
        page.select_option("#pairs-outcome", "RMs disagree")
        assert _ids(page) == expected_ids(cells, pairs, contestants, ["raw_profile"], "RMs disagree")
        page.select_option("#pairs-outcome", "")
        first = sorted(pairs)[0]
        page.fill("#pairs-search", first)
        assert first in _ids(page)
        page.click(f"#pairs-table tr.pair[data-id='{first}']")
        detail = page.locator(f"#pairs-table tr.detail[data-id='{first}']")
        assert detail.locator("details.context[data-strategy=raw_profile] pre").inner_text().strip() == \
            next(c["text"] for c in pairs[first]["contexts"] if c["strategy"] == "raw_profile").strip()
        assert detail.locator("table.margins tbody tr").count() == len(contestants)
        screenshot(page, "explorer")
        page.goto((project / layout.REPORT["page"]).as_uri())
        page.select_option("#explain-strategy", "none")
        block = page.locator(".explain-block:not([hidden])")
        for rm, text in (("length-longer", "100.0%"), ("length-shorter", "0.0%")):
            assert block.locator(f"tr[data-rm={rm}] td[data-key=picked_longer]").inner_text().startswith(text)
        assert not page.locator("#leaderboard-table tr[data-role='null baseline']:not(.null-summary)").first.is_visible()
        assert errors == []


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_same_outputs_give_the_same_page_anywhere(project, tmp_path, stage_server):
    """The page is a DVC output: the report stage rerun in a copy at another path, later, gives the same bytes."""
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(project, elsewhere, ignore=shutil.ignore_patterns(".prefect", ".prbench-cache"))
    (elsewhere / layout.REPORT["page"]).unlink()
    (elsewhere / layout.REPORT["pairs"]).unlink()
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), **stage_server.client_env(),
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, "-m", "flows.stage", "report"], cwd=elsewhere, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    html = (elsewhere / layout.REPORT["page"]).read_bytes()
    assert html == (project / layout.REPORT["page"]).read_bytes()
    assert str(project).encode() not in html and str(tmp_path).encode() not in html
    explorer = (elsewhere / layout.REPORT["pairs"]).read_bytes()
    assert explorer == (project / layout.REPORT["pairs"]).read_bytes(), "the pair explorer too"
    assert str(project).encode() not in explorer and str(tmp_path).encode() not in explorer


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_added_leaderboard_columns_and_rl_results_show_up(project, tmp_path):
    """A column a stage adds to leaderboard.parquet gets its own column; RL results get their section."""
    board = pq.read_table(project / layout.LEADERBOARD["leaderboard"])
    flags = [r["rm"] == "similarity" for r in board.to_pylist()]
    (tmp_path / "data").mkdir()
    pq.write_table(board.append_column("new_flag", pa.array(flags)), tmp_path / "data/leaderboard.parquet")
    rl = [{"rm": "(untrained)", "algorithm": None, "mean_score": 0.21, "ci_low": 0.15, "ci_high": 0.27, "questions": 6,
           "reward_failures": 0, "baseline": True},
          {"rm": "similarity", "algorithm": "ppo", "mean_score": 0.34, "ci_low": 0.25, "ci_high": 0.41, "questions": 6,
           "reward_failures": 1, "baseline": False}]
    pq.write_table(pa.Table.from_pylist(rl), tmp_path / "data/rl_eval.parquet")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        params = yaml.safe_load(Path("params.yaml").read_text())
        params["common"]["fidelity"] = "release"   # the board says which behaviour scored it
        inputs = {**sources.run_inputs(params), "leaderboard": str(tmp_path / "data/leaderboard.parquet"),
                  "rl_eval": str(tmp_path / "data/rl_eval.parquet")}
        build.run(params, inputs, "0" * 64, {"page": str(tmp_path / "page.html")})
    with browser_page() as (page, errors):
        _open(page, tmp_path / "page.html")
        header = page.locator("#leaderboard-table th[data-key=new_flag]")
        assert header.count() == 1 and header.inner_text().strip() == "new flag"
        assert page.locator("#fidelity").inner_text() == "release"
        shown = {(r["rm"], r["strategy"]): r["cells"]["new_flag"]["text"] for r in _rows(page)}
        assert {v for (rm, _), v in shown.items() if rm == "similarity"} == {"yes"}
        assert {v for (rm, _), v in shown.items() if rm != "similarity"} == {"no"}
        assert page.locator("#no-rl").count() == 0
        cells = page.locator("#rl table tbody tr").all_inner_texts()
        assert len(cells) == 2 and "(baseline)" in cells[0] and "0.340 [0.250, 0.410]" in cells[1]
        assert page.locator("#rl svg rect").count() == 2
        screenshot(page, "report-page-extras")
        assert errors == []


def test_params_differences_name_the_setting_and_the_value():
    run = {"a": {"k": 10, "same": 1}, "llms": {"x": {"model": "m"}}}
    refs = {"paper": {"a": {"k": 20, "same": 1}, "llms": {"x": {"model": "m"}}, "extra": True}}
    rows = provenance.params_differences(run, refs)
    assert [(r["key"], r["run"], r["references"]["paper"]) for r in rows] == [
        ("a.k", 10, 20), ("extra", provenance.MISSING, True)]
    assert provenance.params_differences(run, {"same": run}) == []


def test_code_version_is_a_content_hash(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks/a.py").write_text("x = 1\n")
    (tmp_path / "tasks/page.html.j2").write_text("<p>{{ x }}</p>\n")
    first = provenance.code_version(tmp_path, ["tasks"])
    (tmp_path / "tasks/__pycache__").mkdir()
    (tmp_path / "tasks/__pycache__/a.cpython-311.pyc").write_bytes(b"\0bytecode")
    assert provenance.code_version(tmp_path, ["tasks"]) == first, "bytecode caches are not code"
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "tasks", moved / "tasks")
    assert provenance.code_version(moved, ["tasks"]) == first, "the checkout's path is not code"
    (tmp_path / "tasks/page.html.j2").write_text("<p>{{ y }}</p>\n")
    assert provenance.code_version(tmp_path, ["tasks"]) != first, "a template is code too"


def test_report_stage_depends_on_everything_the_page_reads():
    """A page built from an input dvc.yaml does not list would go stale: every input is a dep (or under one)."""
    stages = yaml.safe_load(Path("dvc.yaml").read_text())["stages"]
    deps = stages["report"]["deps"]
    wanted = sources.input_paths(yaml.safe_load(Path("params.yaml").read_text()))
    if "rl_eval" not in stages:
        wanted = {k: v for k, v in wanted.items() if not k.startswith("rl_")}
    covered = lambda p: any(p == d or p.startswith(d.rstrip("/") + "/") for d in deps)  # noqa: E731
    assert [p for p in wanted.values() if not covered(p)] == []
    assert set(layout.REPORT_CODE_VERSION) <= set(deps), "the code version on the page is never stale"
    from tasks.core.params.schema_downstream import Root

    assert stages["report"]["params"] == [g for g in Root.model_fields if g != "releases"], \
        "the page shows params: it depends on every group but serve's own (a watch rule leaves it current)"
    assert list(stages)[-1] == "report"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_compare_page_shows_the_change_between_two_tags(repo, tmp_path, monkeypatch, capsys):  # noqa: F811
    sh(repo, "git", "tag", "-f", "v2")   # the versions repo: v1 has a at 0.5, v2 (HEAD) at 0.75
    monkeypatch.chdir(repo)
    out = tmp_path / "compare.html"
    assert cli.main(["report", "--compare", "v1", "v2", "--out", str(out)]) == 0
    assert cli.main(["report", "--compare", "v1", "v2"]) == 0
    assert (repo / "results/compare-v1-v2.html").read_bytes() == out.read_bytes(), "default: under results/"
    with browser_page() as (page, errors):
        _open(page, out)
        assert page.locator("#rev-a").inner_text() == "v1" and page.locator("#rev-b").inner_text() == "v2"
        a = page.locator("#compare-table tr[data-rm=a][data-strategy=none] td")
        texts = a.all_inner_texts()
        assert texts[2:5] == ["50.0%", "75.0%", "+25.0 pp"]
        assert "up" in a.nth(4).get_attribute("class")
        assert texts[5:7] == ["[65.0%, 85.0%]", "yes"], "v1's 50% is outside v2's interval"
        b = page.locator("#compare-table tr[data-rm=b][data-strategy=none] td").all_inner_texts()
        assert b[5:7] == ["[40.0%, 60.0%]", "–"], "unchanged: no verdict"
        assert b[10:13] == ["1", "2", "▼1"], "b shared first place in v1; a passed it in v2"
        assert page.locator("#n-ranks").inner_text() == "1"
        spearman = page.locator('#compare-correlation tr[data-metric="personalised/bon/spearman"] td')
        assert spearman.all_inner_texts()[3:6] == ["0.000", "0.250", "+0.250"]
        assert "up" in spearman.nth(5).get_attribute("class")
        screenshot(page, "report-compare")
        assert errors == []
    capsys.readouterr()
    assert cli.main(["report", "--compare", "no-such-tag"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("dvc metrics diff no-such-tag (workspace):") and len(err.splitlines()) == 1
