"""`prbench score` as a reward-bench user runs it (issue 34): from any folder — a project's params inside
one, the shipped defaults elsewhere — results under results/<benchmark>/<model>/ in a versioned JSON;
every flag checked before any work, in one line naming the flag (with "did you mean")."""
import json

import pyarrow.parquet as pq
import pytest
import yaml

from flows.cli import main
from tasks.core.results import SCHEMA_VERSION, Results
from tests.conftest import ROOT, SAMPLE

RB2 = ROOT / "data" / "benchmarks" / "fixtures" / "rewardbench2.jsonl"


def _cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err.strip()


def test_scores_a_local_rewardbench2_copy_from_a_folder_outside_the_project(tmp_path, capsys, monkeypatch):
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    (work / "rb2").mkdir()
    (work / "rb2" / "test.jsonl").write_text(RB2.read_text())   # a local copy, as downloaded
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.chdir(work)
    rc, out, err = _cli(capsys, "score", "--kind", "length-longer", "--data", "rb2")
    assert rc == 0, err
    assert out.splitlines()[0].startswith("rewardbench2 / length-longer") and "(params: defaults)" in out
    folder = work / "results" / "rewardbench2" / "length-longer"
    assert sorted(p.name for p in folder.iterdir()) == ["results.json", "scores.parquet"]
    doc = json.loads((folder / "results.json").read_text())
    Results.model_validate(doc)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["params"] == "defaults" and doc["benchmark"] == "rewardbench2"
    assert doc["n"] == 6 and doc["results"]["strategies"]["none"]["accuracy"] == 0.5   # the fixture's worked value
    assert doc["config"]["ci"] == 0.95 and doc["config"]["strategies"] == ["none"]
    assert doc["numerics"]["pins"]["NPY_DISABLE_CPU_FEATURES"] == "X86_V4 AVX512_ICL AVX512_SPR"   # docs/determinism.md
    assert sorted(p.name for p in work.iterdir()) == ["rb2", "results"], "no cache or params written here"


def test_inside_a_project_its_params_from_any_subfolder(tmp_path, capsys, monkeypatch):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["leaderboard"]["ci"] = 0.8
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    (tmp_path / "notes").mkdir()
    monkeypatch.chdir(tmp_path / "notes")
    rc, out, err = _cli(capsys, "score", "--kind", "length-shorter", "--data", str(RB2), "--subset", "Math")
    assert rc == 0, err
    doc = json.loads((tmp_path / "results" / "rewardbench2" / "length-shorter" / "results.json").read_text())
    assert doc["params"] == str(tmp_path / "params.yaml") and doc["config"]["ci"] == 0.8 and doc["config"]["subset"] == "Math"
    assert "80% bootstrap CI" in out


def test_limit_keeps_the_strategies_asked_for(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    rc, _, err = _cli(capsys, "score", "--kind", "length-longer", "--data", str(SAMPLE / "rewardbench"),
                      "--strategy", "none,oracle", "--limit", "2", "--out", str(out))
    assert rc == 0, err
    rows = pq.read_table(out / "scores.parquet").to_pylist()
    assert sorted({r["strategy"] for r in rows}) == ["none", "oracle"] and len(rows) == 2 * 2   # pairs x strategies
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["strategies"] == ["none", "oracle"] and doc["config"]["limit"] == 2 and doc["n"] == 2


FLAGS = {   # what a user typed -> the one line they get
    "a negative limit": (["--kind", "random", "--limit", "-2"], "--limit: -2 is out of range: must be >= 1"),
    "a zero batch size": (["--kind", "seq-cls", "--model", "m", "--batch-size", "0"],
                          "--batch-size: 0 is out of range: must be >= 1"),
    "a misspelt subset": (["--kind", "random", "--data", str(RB2), "--subset", "Factuallity"],
                          "--subset: no subset 'Factuallity' in rewardbench2 (did you mean 'Factuality'?); "
                          "valid: Factuality, Precise IF, Math, Safety, Focus, Ties"),
    "a subset on the card the local copy lacks": (["--kind", "random", "--data", str(RB2), "--subset", "Safety"],
                                                  "--subset: no subset 'Safety' in rewardbench2; valid: Factuality, Math, Ties"),
    "a misspelt benchmark": (["--kind", "random", "--benchmark", "rewardbench"],
                             "--benchmark: unknown name 'rewardbench' (did you mean 'rewardbench2'?)"),
    "a misspelt kind": (["--kind", "lenght-longer"], "--kind: unknown name 'lenght-longer' (did you mean 'length-longer'?)"),
    "a misspelt strategy": (["--kind", "random", "--strategy", "none,orcale"],
                            "--strategy[1]: unknown name 'orcale' (did you mean 'oracle'?)"),
    "a strategy the benchmark does not score": (["--kind", "random", "--data", str(RB2), "--strategy", "raw_profile"],
                                                "--strategy raw_profile: rewardbench2 is scored with none only"),
    "a subset of our benchmark": (["--kind", "random", "--data", str(SAMPLE / "rewardbench"), "--subset", "Art"],
                                  "--subset: only with another benchmark"),
}


@pytest.mark.parametrize("case", sorted(FLAGS))
def test_each_flag_mistake_is_one_line_naming_the_flag(tmp_path, capsys, monkeypatch, case):
    argv, line = FLAGS[case]
    monkeypatch.chdir(ROOT)
    rc, out, err = _cli(capsys, "score", *argv, "--out", str(tmp_path / "out"))
    assert rc == 1 and len(err.splitlines()) == 1 and err.startswith(line), err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_every_results_field_is_documented():
    doc = (ROOT / "docs" / "results.md").read_text()
    fields = [*Results.model_fields, *(f"model.{k}" for k in Results.model_fields["model"].annotation.model_fields)]
    assert [f for f in fields if f"`{f}`" not in doc] == []
