"""`prbench score`: one RM on the bundled released-benchmark files and on a pairs artifact,
writing the same artifacts as the DAG and printing the table."""
import pyarrow.parquet as pq

from flows.cli import main as cli
from tests.conftest import ROOT, SAMPLE
from tests.stage_project import make_project


def test_released_benchmark_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    assert cli(["score", "--kind", "length-longer", "--data", str(SAMPLE / "rewardbench"),
                "--strategy", "none,oracle", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "length-longer" in printed and "oracle (upper bound)" in printed
    scores = pq.read_table(out / "scores.parquet").to_pylist()
    assert len(scores) == 2 * 30 and {s["split"] for s in scores} == {"test"}
    board = pq.read_table(out / "leaderboard.parquet").to_pylist()
    assert {b["domain"] for b in board} == {"Art", "Lifestyle", "Society", "micro", "macro"}


def test_pairs_artifact_and_clear_errors(tmp_path, monkeypatch, capsys):
    make_project(tmp_path, limit=4)
    monkeypatch.chdir(tmp_path)
    assert cli(["score", "--kind", "random", "--option", "seed=3", "--data", "data/ingest/pairs.parquet",
                "--strategy", "none,raw_profile", "--out", "res"]) == 0
    assert pq.read_table(tmp_path / "res" / "scores.parquet").num_rows == 2 * 4
    assert cli(["score", "--kind", "random", "--data", "data/ingest/pairs.parquet", "--strategy", "planner",
                "--out", "res2"]) == 1
    assert "planner needs the rubrics stage" in capsys.readouterr().err
    assert cli(["score", "--kind", "lenght-longer", "--out", "res3"]) == 1
    assert "did you mean 'length-longer'" in capsys.readouterr().err
