"""The bench_score stage: one DVC foreach stage per `benchmarks:` entry, scoring each RM the entry
lists through the list-wise scorer; a new entry adds a stage of its own and changes nothing the
others read, so `dvc repro` reruns only it (and the reports)."""
import copy

import pytest
import yaml

from tasks.core import layout, stage_table as stages
from tasks.core.artifacts import read_table
from tasks.stages.benchmarks import stage
from tasks.core.errors import ConfigError
from tests.conftest import ROOT
from tests.stage_project import shipped_params


def _out(tmp_path, b):
    return {k: str(tmp_path / v) for k, v in layout.bench_scores(b).items()}


def test_the_shipped_fixture_benchmarks_score_their_rms(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    params = shipped_params()
    assert sorted(params["benchmarks"]) == ["prism-demo", "rb2-demo"]
    for entry in params["benchmarks"].values():   # the cheap RMs only: the main job stays fast
        assert entry["rms"] == ["length-longer", "length-shorter", "random"]
    m = stage.run(params, "rb2-demo", _out(tmp_path, "rb2-demo"))
    assert m["source"] == "rewardbench2" and m["items"] == 6 and m["strategies"] == ["none"]
    longer = m["rms"]["length-longer"]["strategies"]["none"]
    assert (longer["accuracy"], longer["chance"], longer["n"], longer["ties"]) == (0.5, 0.25, 6, 2)
    assert longer["published"]["subsets"]["Ties"] == 1.0096
    rows = read_table(tmp_path / "data/bench_scores/rb2-demo/length-longer.parquet", "list_scores").to_pylist()
    assert [r["item_id"] for r in rows] == ["fact-1", "fact-2", "math-1", "math-2", "ref:0", "tied:0"]
    assert rows[5]["scores_correct"] == [6.0, 7.0] and rows[5]["scores_incorrect"] == [2.0, 3.0]
    m = stage.run(params, "prism-demo", _out(tmp_path, "prism-demo"))
    assert m["strategies"] == ["none", "raw_profile"]   # PRISM has a profile: the survey
    assert sorted(p.name for p in (tmp_path / "data/bench_scores/prism-demo").iterdir()) == \
        ["length-longer.parquet", "length-shorter.parquet", "random.parquet"]


def test_an_entry_that_cannot_run_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    params = shipped_params()
    with pytest.raises(ConfigError, match="benchmarks: unknown name 'rb2'.*did you mean 'rb2-demo'"):
        stage.run(params, "rb2", _out(tmp_path, "x"))
    bad = copy.deepcopy(params)
    bad["benchmarks"]["rb2-demo"]["rms"] = ["length-longr"]
    with pytest.raises(ConfigError, match="benchmarks.rb2-demo.rms: unknown name 'length-longr'.*did you mean"):
        stage.run(bad, "rb2-demo", _out(tmp_path, "x"))
    bad["benchmarks"]["rb2-demo"] = {"source": "rewardbench2", "hub_id": "allenai/reward-bench-2", "rms": ["random"]}
    with pytest.raises(ConfigError, match="benchmarks.rb2-demo.path: the pipeline scores a local copy"):
        stage.run(bad, "rb2-demo", _out(tmp_path, "x"))


def test_adding_a_benchmark_changes_nothing_the_other_stages_read():
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["bench_score"]
    assert spec["foreach"] == "${benchmarks}" and "benchmarks.${key}" in spec["do"]["params"]
    assert "${item.path}" in spec["do"]["deps"] and not any("benchmarks" in p and "${key}" not in p
                                                            for p in spec["do"]["params"])
    params = shipped_params()
    before = {b: (stages.used_params(params, "bench_score", b),
                  [stages.resolve(d, params, b, stages.STAGES["bench_score"]) for d in stages.STAGES["bench_score"].deps])
              for b in params["benchmarks"]}
    more = copy.deepcopy(params)
    more["benchmarks"]["ppe-demo"] = {"source": "ppe-human", "path": "data/benchmarks/fixtures/ppe-human.jsonl",
                                      "subset": None, "limit": None, "rms": ["random"]}
    for b in params["benchmarks"]:
        deps = [stages.resolve(d, more, b, stages.STAGES["bench_score"]) for d in stages.STAGES["bench_score"].deps]
        assert (stages.used_params(more, "bench_score", b), deps) == before[b]
    assert stages.fan_keys(stages.STAGES["bench_score"], more) == ["ppe-demo", "prism-demo", "rb2-demo"]
    assert stages.resolve("${item.path}", more, "ppe-demo", stages.STAGES["bench_score"]).endswith("ppe-human.jsonl")
    # no other stage reads the benchmarks group but the report, which lists every param that differs from the
    # shipped settings (and reruns on a new benchmark anyway, as it reads the new stage's outputs)
    assert [s.name for s in stages.TABLE if any(p.startswith("benchmarks") for p in s.params)] == \
        ["bench_score", "report"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_dvc_reruns_only_the_new_benchmarks_stage(tmp_path):
    """A real `dvc repro` of the two shipped fixture benchmarks, then a third entry: only its stage is
    out of date (and the correlation / report stages that read every benchmark's outputs). ~140 s on
    the loaded 2-core box."""
    import subprocess

    from tests.test_dvc import _clone_env, _copy_repo, _dvc

    repo = tmp_path / "repo"
    repo.mkdir()
    _copy_repo(repo)
    (repo / "data/models/bradley-terry").mkdir(parents=True, exist_ok=True)   # a dep of every RM stage: not run here
    (repo / "data/models/bradley-terry/placeholder").write_text("x")
    subprocess.run(["dvc", "init", "-q"], cwd=repo, env=_clone_env(), check=False, capture_output=True)
    _dvc(repo, "repro", "-s", "bench_score@rb2-demo", "bench_score@prism-demo")
    params = yaml.safe_load((repo / "params.yaml").read_text())
    text = (repo / "params.yaml").read_text()
    third = ("  ppe-demo:\n    source: ppe-human\n    path: data/benchmarks/fixtures/ppe-human.jsonl\n"
             "    subset:\n    limit:\n    rms:\n    - random\n")
    at = text.index("\nleaderboard:") + 1
    (repo / "params.yaml").write_text(text[:at] + third + text[at:])
    assert sorted(yaml.safe_load((repo / "params.yaml").read_text())["benchmarks"]) == \
        sorted([*params["benchmarks"], "ppe-demo"])
    status = _dvc(repo, "status", "bench_score@rb2-demo", "bench_score@prism-demo", "bench_score@ppe-demo")
    stale = [line.rstrip(":") for line in status.splitlines() if line and not line[0].isspace()]
    assert stale == ["bench_score@ppe-demo"], status


def test_params_check_names_a_bad_benchmark_entry_before_any_work():
    from tasks.ops.params import check_params

    params = copy.deepcopy(shipped_params())
    params["benchmarks"]["rb2-demo"]["source"] = "rewardbench-2"
    params["benchmarks"]["prism-demo"]["rms"] = ["random", "length-longr"]
    _, problems = check_params(params)
    assert any(p.startswith("benchmarks.rb2-demo.source: 'rewardbench-2' is not a benchmark (did you mean "
                            "'rewardbench2'?)") for p in problems), problems
    assert any(p.startswith("benchmarks.prism-demo.rms[1]: 'length-longr' is not an RM") for p in problems), problems
    params["benchmarks"]["rb2-demo"]["sorce"] = "x"
    _, problems = check_params(params)
    assert any(p.startswith("benchmarks.rb2-demo.sorce: unknown key") for p in problems), problems


def test_the_stage_command_refuses_an_unknown_benchmark_in_one_line():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "flows.stage", "bench_score", "rb2-dem"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "benchmarks: unknown name 'rb2-dem' (did you mean 'rb2-demo'?); valid: prism-demo, rb2-demo"
