"""`prbench diff` between two runs that read different revisions of a hub dataset: the revision change is
listed first, beside the accuracies it moved (real git and `dvc metrics diff` in a scratch repo)."""
import json
import os
import subprocess
import sys

from tasks.downstream.correlation.diff import diff_rows, format_diff, metrics_diff

OLD, NEW = "1" * 40, "2" * 40


def test_diff_shows_the_dataset_revision_beside_the_metric_changes(tmp_path):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "DVC_NO_ANALYTICS": "1"}
    run = lambda *cmd: subprocess.run(cmd, cwd=tmp_path, env=env, check=True, capture_output=True)  # noqa: E731
    run("git", "init", "-q")
    run(sys.executable, "-m", "dvc", "init", "-q")
    (tmp_path / "metrics").mkdir()
    (tmp_path / "dvc.yaml").write_text("metrics:\n- metrics/ingest.json\n- metrics/leaderboard.json\n")
    write = lambda sha, acc: ((tmp_path / "metrics" / "ingest.json").write_text(json.dumps(  # noqa: E731
        {"pairs": 30, "revision": {"QiyaoMa/Personalized-RewardBench": sha}})),
        (tmp_path / "metrics" / "leaderboard.json").write_text(json.dumps({"bm25": {"accuracy": acc}})))
    write(OLD, 0.6)
    run("git", "add", "-A")
    run("git", "commit", "-qm", "old revision")
    run("git", "tag", "v1")
    write(NEW, 0.7)
    rows = diff_rows(metrics_diff("v1", cwd=tmp_path))
    assert [r["kind"] for r in rows] == ["revision", "accuracy"]
    assert rows[0]["metric"] == "revision.QiyaoMa/Personalized-RewardBench" and (rows[0]["old"], rows[0]["new"]) == (OLD, NEW)
    text = format_diff(rows, "v1", None)
    assert OLD in text and NEW in text and "+0.1000" in text


def test_the_report_provenance_names_each_revision_read_and_by_which_stage():
    from tasks.ops.report.provenance import revisions

    got = revisions({"revision": {"QiyaoMa/Personalized-RewardBench": NEW}},
                    {"rb2": {"hub_id": "allenai/reward-bench-2", "revision": OLD}, "local": {"source": "prism"}})
    assert got == [{"repo": "QiyaoMa/Personalized-RewardBench", "revision": NEW, "read_by": "ingest"},
                   {"repo": "allenai/reward-bench-2", "revision": OLD, "read_by": "bench_score@rb2"}]
