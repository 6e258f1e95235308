"""`prbench score`: one RM on the bundled released-benchmark files and on a pairs artifact,
writing the same artifacts as the DAG and printing the table."""
import json

import pyarrow.parquet as pq
import yaml

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
    limit = yaml.safe_load((ROOT / "params.yaml").read_text())["scoring"]["per_domain_limit"]
    scores = pq.read_table(out / "scores.parquet").to_pylist()
    assert len(scores) == 2 * 3 * limit and {s["split"] for s in scores} == {"test"}, "scoring.per_domain_limit holds"
    board = pq.read_table(out / "leaderboard.parquet").to_pylist()
    assert {b["domain"] for b in board} == {"Art", "Lifestyle", "Society", "micro", "macro"}
    head = next(line for line in printed.splitlines() if line.startswith("rm / strategy"))
    assert head.split() == ["rm", "/", "strategy", "domain", "accuracy", "[95%", "CI]", "n", "ties", "invalid", "truncated",
                           "within", "resolution"]   # a length rule has no dtype: n/a
    rows = [line.split() for line in printed.splitlines() if line.split()[:1] in (["Art"], ["Lifestyle"], ["Society"])]
    assert len(rows) == 3 * 2 and all(r[-5] == str(limit) and r[-1] == "n/a" for r in rows), rows   # domains x strategies, n each
    assert f"first {limit} per domain" in printed
    assert sorted(p.name for p in out.iterdir()) == ["leaderboard.parquet", "results.json", "scores.parquet"], \
        "the ingested data is not copied into the results folder"
    numerics = json.loads((out / "results.json").read_text())["numerics"]   # why another machine's bytes could differ
    assert numerics["pins"]["OPENBLAS_CORETYPE"] == "Haswell" and numerics["numpy_dispatch"] == ["X86_V3"]
    assert numerics["cpu"] and "avx2" in numerics["flags"] and numerics["numpy"] and numerics["scipy"]
    assert {b["library"] for b in numerics["openblas"]} >= {"numpy"} and numerics["replaced"] == {}


def test_plain_flags_and_limit(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    assert cli(["score", "--kind", "length-longer", "--data", str(SAMPLE / "rewardbench"), "--strategy", "none",
                "--limit", "4", "--out", str(out)]) == 0
    assert pq.read_table(out / "scores.parquet").num_rows == 4 and "first 4 (--limit)" in capsys.readouterr().out
    from flows.cli import build_parser, score_entry
    from tasks.ops.params import load_params

    args = build_parser().parse_args(["score", "--model", "m", "--batch-size", "4", "--max-length", "256",
                                      "--revision", "abc123"])
    assert score_entry(args, load_params()) == {"kind": "seq-cls", "model": "m", "batch_size": 4, "max_length": 256,
                                                "revision": "abc123"}
    assert cli(["score", "--kind", "length-longer", "--batch-size", "4"]) == 1
    assert "--batch-size" in capsys.readouterr().err, "a flag the kind does not take is named as the flag"


def test_pairs_artifact_and_clear_errors(tmp_path, monkeypatch, capsys):
    params = make_project(tmp_path, limit=4)
    monkeypatch.chdir(tmp_path)
    assert cli(["score", "--kind", "random", "--option", "seed=3", "--data", "data/ingest/pairs.parquet",
                "--strategy", "none,raw_profile", "--out", "res"]) == 0
    assert pq.read_table(tmp_path / "res" / "scores.parquet").num_rows == 2 * min(4, params["scoring"]["per_domain_limit"])
    assert cli(["score", "--kind", "random", "--data", "data/ingest/pairs.parquet", "--strategy", "planner",
                "--out", "res2"]) == 1
    assert "planner needs the rubrics stage" in capsys.readouterr().err
    assert cli(["score", "--kind", "lenght-longer", "--out", "res3"]) == 1
    assert "did you mean 'length-longer'" in capsys.readouterr().err
