"""`prbench diff` and `prbench human-eval` reached through the real entry points: `flows.cli.main`
(the function the `prbench` script calls) and the installed `prbench` script itself."""
import json
import os
import subprocess
import sys
from pathlib import Path

from flows.cli import main as cli
from tasks.core.artifacts import read_table
from tests.test_human_eval_export import fill_csv, he_project, truth

PRBENCH = Path(sys.executable).parent / "prbench"   # the console script pyproject.toml installs


def _sh(cwd: Path, *cmd: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{PRBENCH.parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"{cmd}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return proc.stdout


def _metrics(repo: Path, accuracy: float) -> None:
    (repo / "metrics").mkdir(exist_ok=True)
    (repo / "metrics/leaderboard.json").write_text(json.dumps({"rms": {"a": {"none": {"micro": {"accuracy": accuracy}}}},
                                                               "split": "test"}))


def test_diff_through_the_cli_reports_the_changed_accuracy_and_a_bad_revision(tmp_path, monkeypatch, capsys):
    """A git + DVC repo whose metrics file changed since tag v1 (written by hand: no stage has to run)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _sh(repo, "git", "init", "-q")
    _sh(repo, sys.executable, "-m", "dvc", "init", "-q")
    (repo / "dvc.yaml").write_text("stages:\n  leaderboard:\n    cmd: 'true'\n    metrics:\n"
                                   "      - metrics/leaderboard.json:\n          cache: false\n")
    _metrics(repo, 0.5)
    _sh(repo, "git", "add", "-A")
    _sh(repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "v1")
    _sh(repo, "git", "tag", "v1")
    _metrics(repo, 0.75)
    monkeypatch.chdir(repo)

    assert cli(["diff", "v1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("headline (v1 -> workspace): accuracy per RM · strategy")
    assert lines[2].split() == ["a", "·", "none", "0.5000", "0.7500", "+0.2500", "-", "-"], "no CI in this file: none shown"
    assert cli(["diff", "v1", "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "metrics changed (v1 -> workspace); plots side by side: `dvc plots diff v1`" in lines
    row = next(line.split() for line in lines if "rms.a.none.micro.accuracy" in line)
    assert row == ["accuracy", "metrics/leaderboard.json", "rms.a.none.micro.accuracy", "0.5000", "0.7500", "+0.2500", "-", "-"]

    assert cli(["diff", "no-such-tag"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("dvc metrics diff no-such-tag (workspace):") and len(err.splitlines()) == 1


def test_human_eval_export_and_check_through_the_cli_and_the_installed_script(tmp_path, monkeypatch, capsys):
    params = he_project(tmp_path, limit=2)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "for_annotators"
    assert cli(["human-eval", "export", "--out", str(out), "--limit", "4"]) == 0
    printed = capsys.readouterr().out
    key = Path(params["human_eval"]["key"])
    assert printed.startswith(f"4 items for annotators in {out}:") and f"unblinding key (keep it from annotators): {key}" in printed
    assert len(read_table(key, "human_eval_key")) == 4 and not key.is_relative_to(out)

    raw = Path(params["human_eval"]["raw_dir"])
    fill_csv(out, raw / "alice.csv", truth(tmp_path))
    proc = subprocess.run([str(PRBENCH), "human-eval", "check"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=240)
    assert (proc.returncode, proc.stdout.strip()) == (0, f"{raw}: valid (32 ratings in 1 files)"), proc.stderr[-2000:]

    def spoil(row):
        row["b_relevance"] = "9"
    fill_csv(out, raw / "alice.csv", truth(tmp_path), change=spoil)
    proc = subprocess.run([str(PRBENCH), "human-eval", "check"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=240)
    problems = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(problems) == 4, proc.stderr[-2000:]   # one line per bad row
    assert all("alice.csv: row " in p and p.endswith("field 'b_relevance': '9' is outside 1-5") for p in problems)
