"""Dataset versions: a tiny git + DVC repo (not the project) whose stage computes metrics from a data
file; tag version 1, change the data, `dvc repro`, commit; `dvc metrics diff` and `prbench diff`
report the changed accuracy and correlation."""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.downstream.correlation import diff
from tasks.core.errors import ConfigError

COMPUTE = '''import csv, json, os
rows = list(csv.DictReader(open("data/scores.csv")))
acc = {}
for r in rows:
    acc.setdefault(r["rm"], []).append(int(r["correct"]))
acc = {rm: sum(v) / len(v) for rm, v in sorted(acc.items())}
os.makedirs("metrics", exist_ok=True)
json.dump({"rms": {rm: {"none": {"micro": {"accuracy": a, "ci": [round(a - 0.1, 4), round(a + 0.1, 4)]}}}
                   for rm, a in acc.items()}, "split": "test"},
          open("metrics/leaderboard.json", "w"), sort_keys=True)
json.dump({"correlations": {"personalised": {"bon": {"spearman": {"value": acc["a"] - acc["b"]}}}}},
          open("metrics/correlation.json", "w"), sort_keys=True)
'''
DVC_YAML = """stages:
  compute:
    cmd: python compute.py
    deps: [data/scores.csv, compute.py]
    metrics:
      - metrics/leaderboard.json:
          cache: false
      - metrics/correlation.json:
          cache: false
"""


def sh(repo: Path, *cmd: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1",
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"{cmd}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return proc.stdout


def dvc(repo: Path, *args: str) -> str:
    return sh(repo, sys.executable, "-m", "dvc", *args)


def commit(repo: Path, message: str) -> None:
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)


def write_scores(repo: Path, a_right: int) -> None:
    lines = ["rm,question_id,correct"]
    lines += [f"a,q{i},{int(i < a_right)}" for i in range(4)] + [f"b,q{i},{int(i < 2)}" for i in range(4)]
    (repo / "data").mkdir(exist_ok=True)
    (repo / "data/scores.csv").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("versions")
    sh(repo, "git", "init", "-q")
    dvc(repo, "init", "-q")
    (repo / "compute.py").write_text(COMPUTE)
    (repo / "dvc.yaml").write_text(DVC_YAML)
    write_scores(repo, a_right=2)                 # version 1: a at 0.5
    dvc(repo, "repro")
    commit(repo, "version 1")
    sh(repo, "git", "tag", "v1")
    write_scores(repo, a_right=3)                 # version 2: a at 0.75
    dvc(repo, "repro")
    commit(repo, "version 2")
    return repo


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_dvc_metrics_diff_reports_the_changed_accuracy(repo):
    raw = json.loads(dvc(repo, "metrics", "diff", "v1", "--json"))
    assert raw["metrics/leaderboard.json"]["rms.a.none.micro.accuracy"] == {"old": 0.5, "new": 0.75, "diff": 0.25}
    assert "rms.b.none.micro.accuracy" not in raw["metrics/leaderboard.json"], "only changes are listed"


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_prbench_diff_table(repo):
    rows = diff.diff_rows(diff.metrics_diff("v1", "HEAD", cwd=repo))
    assert [(r["kind"], r["metric"], r["old"], r["new"]) for r in rows] == [
        ("accuracy", "rms.a.none.micro.accuracy", 0.5, 0.75),
        ("correlation", "correlations.personalised.bon.spearman.value", 0.0, 0.25)]
    table = diff.format_diff(rows, "v1", "HEAD")
    assert "dvc plots diff v1 HEAD" in table.splitlines()[0]
    assert any("rms.a.none.micro.accuracy" in line and "0.5000" in line and "+0.2500" in line for line in table.splitlines())
    assert diff.diff_rows(diff.metrics_diff("HEAD", "HEAD", cwd=repo)) == []
    assert diff.format_diff([], "HEAD", None) == "no accuracy, downstream score or correlation changed (HEAD -> workspace)"


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_cli_subcommand_and_a_bad_revision(repo, monkeypatch, capsys):
    ap = argparse.ArgumentParser(prog="prbench")
    diff.add_parser(ap.add_subparsers(dest="command", required=True))
    monkeypatch.chdir(repo)
    args = ap.parse_args(["diff", "v1", "HEAD"])
    assert args.func(args) == 0
    assert "a · none  0.5000  0.7500  +0.2500  [0.6500, 0.8500]  yes" in capsys.readouterr().out
    args = ap.parse_args(["diff", "no-such-tag"])
    from flows.boundary import guarded   # what `prbench` runs a command in: a user's mistake is its one line

    assert guarded(lambda: args.func(args)) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("dvc metrics diff no-such-tag (workspace):") and len(err.splitlines()) == 1
    with pytest.raises(ConfigError):
        diff.metrics_diff("no-such-tag", cwd=repo)


def test_kinds_and_rows_from_dvc_json():
    raw = {"metrics/leaderboard.json": {"rms.a.none.micro.accuracy": {"old": 0.5, "new": 0.6, "diff": 0.1},
                                        "rms.a.none.ties": {"old": 1, "new": 2, "diff": 1}},
           "metrics/correlation.json": {"correlations.personalised.bon.ndcg.value": {"old": None, "new": 0.9},
                                        "downstream.bon.score.a": {"old": 0.5, "new": 0.4, "diff": -0.1},
                                        "status": {"old": "too few RMs (n=3 < 4)", "new": "ok"}}}
    rows = diff.diff_rows(raw)
    assert [r["kind"] for r in rows] == ["accuracy", "downstream", "correlation"]
    assert [r["kind"] for r in diff.diff_rows(raw, all_metrics=True)] == ["accuracy", "downstream", "correlation",
                                                                          "other", "other"]
    table = diff.format_diff(diff.diff_rows(raw, all_metrics=True), "v1", None)
    assert "too few RMs (n=3 < 4)" in table and "dvc plots diff v1`" in table
