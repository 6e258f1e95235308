"""DVC's own views on the default run fit a screen (issue 47): only the headline (accuracy per RM x strategy, the
primary test) is declared as DVC metrics, so `dvc metrics show / diff` list at most 40 rows and `dvc exp show`'s
metric columns are the headline's; every other metrics file stays a tracked output that `prbench diff --all`
still reads. Run on a copy of the repo (the committed run's metrics and dvc.lock)."""
import csv
import io
import json
import os
import subprocess
import sys

import pytest

from tasks.core import dag, layout
from tasks.downstream.correlation import diff, headline
from tests.test_dvc import _copy_repo

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]   # a few dvc commands on the repo's copy: ~10 s each


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("views")
    _copy_repo(root)
    for cmd in (["git", "add", "-A"], ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "run"]):
        subprocess.run(cmd, cwd=root, check=True, capture_output=True)
    return root


def _dvc(repo, *args) -> str:
    proc = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=repo, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _leaves(obj) -> int:
    return sum(_leaves(v) for v in obj.values()) if isinstance(obj, dict) else 1


def test_dvc_declares_the_headline_alone_and_every_other_metrics_file_stays_in_git():
    text = (dag.ROOT / "dvc.yaml").read_text()
    assert text.count("    metrics:\n") == 1 and f"      - {layout.REPORT['headline']}:\n          cache: false" in text
    assert "      - metrics/leaderboard.json:\n          cache: false" in text, "a plain output, kept in git"


def test_dvc_metrics_show_and_diff_fit_a_screen(repo):
    shown = json.loads(_dvc(repo, "metrics", "show", "--json"))
    files = {f for rev in shown.values() for f in rev.get("data", {})}
    assert files == {layout.REPORT["headline"]}
    every = json.loads(_dvc(repo, "metrics", "diff", "HEAD", "--all", "--json"))   # unchanged rows too: the most diff lists
    rows = sum(len(metrics) for metrics in every.values())   # {file: {metric: {old, new, diff}}}
    assert 10 <= rows <= headline.MAX_LINES, every
    table = _dvc(repo, "metrics", "diff", "HEAD", "--all").splitlines()
    assert len(table) <= headline.MAX_LINES + 1, "rows + the header"


def test_dvc_exp_show_metric_columns_are_the_headline(repo):
    header = next(csv.reader(io.StringIO(_dvc(repo, "exp", "show", "--csv"))))
    ours = json.loads((repo / layout.REPORT["headline"]).read_text())
    metric_columns = [c for c in header if c.startswith(("leaderboard.", "primary.", layout.REPORT["headline"]))]
    assert 10 <= len(metric_columns) <= headline.MAX_LINES and len(metric_columns) <= _leaves(ours), metric_columns
    assert not any(c.startswith(("per_domain_split", "rms.", "strategies")) for c in header), "no other metrics file"


def test_prbench_diff_all_still_reads_every_metrics_file(repo):
    board = repo / "metrics" / "leaderboard.json"
    data = json.loads(board.read_text())
    rm = sorted(data["rms"])[0]
    data["rms"][rm]["none"]["micro"]["n"] += 1   # a metric outside the headline
    board.write_text(json.dumps(data))
    try:
        rows = diff.diff_rows(diff.metrics_diff("HEAD", cwd=repo), all_metrics=True)
        assert [(r["file"], r["metric"]) for r in rows] == [("metrics/leaderboard.json", f"rms.{rm}.none.micro.n")]
        assert _dvc(repo, "metrics", "diff", "HEAD").strip() == "", "DVC's own diff: the headline did not change"
    finally:
        subprocess.run(["git", "checkout", "--", "metrics"], cwd=repo, check=True)
