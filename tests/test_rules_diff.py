"""`prbench diff --all`'s table, rule by rule and by hand: which kind a metric is (the revision a stage read
first: it is why numbers move), the order of the rows, which value a `ci` beside it bounds, the noise verdict
read at the new revision, the table as printed, what counts as "other changed metrics" under the headline,
and the `dvc metrics diff` command it wraps. The real dvc runs in the slow tests (test_versions.py)."""
from __future__ import annotations

import argparse
import json
import subprocess
from types import SimpleNamespace

import pytest

from tasks.core.errors import ConfigError
from tasks.downstream.correlation import diff as D
from tasks.downstream.correlation import headline as H


@pytest.mark.parametrize("key, kind", [
    ("revision", "revision"), ("benchmarks.rb2.revision", "revision"), ("revision.sha", "revision"),
    ("correlations.personalised.bon.ndcg.value", "correlation"), ("a.comparisons.b", "correlation"),
    ("downstream.bon.score.a", "downstream"), ("downstream.accuracy", "downstream"),
    ("rms.a.none.micro.accuracy", "accuracy"), ("accuracy", "accuracy"), ("rms.a.none.ties", "other"),
    ("x.revisions", "other"), ("x.correlation", "other"), ("a.downstream.b", "other")])
def test_each_metric_has_its_kind(key, kind):
    assert D.kind(key) == kind


def test_rows_come_in_kind_order_then_file_then_metric_and_other_only_with_all():
    raw = {"metrics/z.json": {"rms.b.accuracy": {"old": 0.5, "new": 0.6, "diff": 0.1}, "n": {"old": 1, "new": 2}},
           "metrics/a.json": {"rms.b.accuracy": {"old": 0.1, "new": 0.2, "diff": 0.1},
                              "rms.a.accuracy": {"old": 0.3, "new": 0.2, "diff": -0.1},
                              "revision": {"old": "abc", "new": "def"},
                              "correlations.x.value": {"new": 0.4}}}
    rows = D.diff_rows(raw)
    assert [(r["kind"], r["file"], r["metric"]) for r in rows] == [
        ("revision", "metrics/a.json", "revision"), ("accuracy", "metrics/a.json", "rms.a.accuracy"),
        ("accuracy", "metrics/a.json", "rms.b.accuracy"), ("accuracy", "metrics/z.json", "rms.b.accuracy"),
        ("correlation", "metrics/a.json", "correlations.x.value")]
    assert rows[1] == {"kind": "accuracy", "file": "metrics/a.json", "metric": "rms.a.accuracy", "old": 0.3,
                       "new": 0.2, "change": -0.1}
    assert (rows[4]["old"], rows[4]["change"]) == (None, None), "a metric that came has no old value and no change"
    every = D.diff_rows(raw, all_metrics=True)
    assert [r["metric"] for r in every] == [r["metric"] for r in rows] + ["n"]


def test_a_ci_bounds_each_value_named_beside_it_at_any_depth():
    obj = {"a": {"accuracy": 0.5, "n": 4, "ci": [0.4, 0.6]},
           "b": {"c": {"value": 1, "estimate": 2, "mean": 3, "score": 4, "gain": 5, "difference": 6, "p": 0.1,
                       "ci": [0, 9]}},
           "bad": {"accuracy": 0.5, "ci": [0.4]}, "none": {"accuracy": 0.5, "ci": None}, "top": [1, 2]}
    assert D.intervals(obj) == {"a.accuracy": [0.4, 0.6], **{f"b.c.{k}": [0, 9] for k in (
        "value", "estimate", "mean", "score", "gain", "difference")}}
    assert D.intervals({"accuracy": 0.5, "ci": [0.1, 0.9]}, "x.") == {"x.accuracy": [0.1, 0.9]}


def test_the_noise_verdict_reads_the_ci_at_the_new_revision(tmp_path, monkeypatch):
    def board(ci):
        return {"rms": {"a": {"none": {"micro": {"accuracy": 0.8, "ci": ci}}}}}

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "metrics").mkdir()
    (tmp_path / H.LEADERBOARD).write_text(json.dumps(board([0.7, 0.9])))
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "b"], cwd=tmp_path, check=True)
    (tmp_path / H.LEADERBOARD).write_text(json.dumps(board([0.4, 0.9])))   # the workspace: 0.5 inside
    raw = {H.LEADERBOARD: {"rms.a.none.micro.accuracy": {"old": 0.5, "new": 0.8, "diff": 0.3}},
           "metrics/gone.json": {"x.accuracy": {"old": 0.1, "new": 0.2, "diff": 0.1}},
           "dvc.yaml": {"x.accuracy": {"old": 0.1, "new": 0.2, "diff": 0.1}}}
    at_head = D.with_intervals(D.diff_rows(raw), "HEAD", cwd=tmp_path)
    assert [(r["file"], r["ci"], r["beyond"]) for r in at_head] == [
        ("dvc.yaml", None, None), ("metrics/gone.json", None, None), (H.LEADERBOARD, [0.7, 0.9], True)]
    in_workspace = D.with_intervals(D.diff_rows(raw), None, cwd=tmp_path)
    assert (in_workspace[-1]["ci"], in_workspace[-1]["beyond"]) == ([0.4, 0.9], False)
    monkeypatch.chdir(tmp_path)   # by default, the project the command runs in
    assert D.with_intervals(D.diff_rows(raw), None)[-1]["ci"] == [0.4, 0.9]


def test_the_table_printed_by_hand():
    rows = [{"kind": "accuracy", "file": "m.json", "metric": "rms.a.accuracy", "old": 0.5, "new": 0.75,
             "change": 0.25, "ci": [0.7, 0.8], "beyond": True},
            {"kind": "accuracy", "file": "m.json", "metric": "rms.b.accuracy", "old": 0.5, "new": 0.5,
             "change": 0, "ci": [0.4, 0.6], "beyond": False},
            {"kind": "other", "file": "m.json", "metric": "status", "old": None, "new": "ok", "change": None}]
    assert D.format_diff(rows, "v1", "v2").splitlines() == [
        "metrics changed (v1 -> v2); plots side by side: `dvc plots diff v1 v2`",
        "kind      file    metric          old     new     change   new CI            beyond noise",
        "accuracy  m.json  rms.a.accuracy  0.5000  0.7500  +0.2500  [0.7000, 0.8000]  yes",
        "accuracy  m.json  rms.b.accuracy  0.5000  0.5000  +0.0000  [0.4000, 0.6000]  no",
        "other     m.json  status          -       ok      -        -                 -"]
    assert D.format_diff(rows, "v1", None).splitlines()[0] == \
        "metrics changed (v1 -> workspace); plots side by side: `dvc plots diff v1`"
    assert D.format_diff([], "v1", "v2") == "no accuracy, downstream score or correlation changed (v1 -> v2)"
    assert (D._cell(True), D._cell(3), D._cell(-0.5, True)) == ("True", "3.0000", "-0.5000")


def test_the_headline_rows_are_the_leaderboard_accuracies_and_the_primary_estimate_only():
    assert D._in_headline(H.LEADERBOARD, "rms.a.none.micro.accuracy")
    assert not D._in_headline(H.LEADERBOARD, "rms.a.none.macro.accuracy")
    assert not D._in_headline(H.LEADERBOARD, "rms.a.none.micro.n")
    assert not D._in_headline(H.LEADERBOARD, "chance.a.none.micro.accuracy")
    assert not D._in_headline("metrics/other.json", "rms.a.none.micro.accuracy")
    assert D._in_headline(H.CORRELATION, "primary.estimate")
    assert not D._in_headline(H.CORRELATION, "primary.p") and not D._in_headline(H.LEADERBOARD, "primary.estimate")


def _cli(monkeypatch, raw, argv):
    seen = {}

    def fake_diff(rev_a, rev_b, targets=None, **_):
        seen.update(rev_a=rev_a, rev_b=rev_b, targets=targets)
        if isinstance(raw, Exception):
            raise raw
        return raw

    monkeypatch.setattr(D, "metrics_diff", fake_diff)
    monkeypatch.setattr(H, "headline_rows", lambda a, b, cwd=".": seen.update(headline=(a, b)) or [])
    ap = argparse.ArgumentParser(prog="prbench")
    D.add_parser(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(["diff", *argv])
    from flows.boundary import guarded   # what `prbench` runs a command in: a user's mistake is its one line

    return guarded(lambda: args.func(args)), seen


RAW = {H.LEADERBOARD: {"rms.a.none.micro.accuracy": {"old": 0.5, "new": 0.6, "diff": 0.1},
                       "rms.a.none.micro.n": {"old": 4, "new": 5, "diff": 1}},
       "metrics/bon.json": {"downstream.bon.a": {"old": 0.1, "new": 0.2, "diff": 0.1}}}


def test_the_headline_counts_every_other_changed_metric_and_all_prints_them(monkeypatch, capsys):
    code, seen = _cli(monkeypatch, RAW, ["v1", "v2", "--targets", "metrics/bon.json"])
    out = capsys.readouterr().out
    assert code == 0 and seen == {"rev_a": "v1", "rev_b": "v2", "targets": ["metrics/bon.json"], "headline": ("v1", "v2")}
    assert out.rstrip().splitlines()[-1] == "2 other changed metric(s): `prbench diff v1 v2 --all`"
    code, _ = _cli(monkeypatch, RAW, ["v1", "--all"])
    out = capsys.readouterr().out
    assert code == 0 and "other changed metric" not in out
    assert "metrics changed (v1 -> workspace)" in out and "rms.a.none.micro.n" in out and "downstream.bon.a" in out
    read_at = []
    monkeypatch.setattr(D, "with_intervals", lambda rows, rev_b, cwd=".": read_at.append(rev_b) or rows)
    code, _ = _cli(monkeypatch, RAW, ["v1", "v2", "--all"])
    assert code == 0 and read_at == ["v2"] and "metrics changed (v1 -> v2)" in capsys.readouterr().out


def test_a_failing_dvc_is_one_line_on_stderr_and_exit_1(monkeypatch, capsys):
    code, _ = _cli(monkeypatch, ConfigError("dvc metrics diff nope (workspace): unknown revision"), ["nope"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert captured.err == "dvc metrics diff nope (workspace): unknown revision\n"


def test_the_dvc_command_it_wraps(monkeypatch):
    monkeypatch.delenv("DVC_NO_ANALYTICS", raising=False)
    calls = []

    def run(cmd, **kw):
        calls.append((cmd, kw))
        return SimpleNamespace(returncode=0, stdout='{"m.json": {}}', stderr="")

    monkeypatch.setattr(D.subprocess, "run", run)
    assert D.metrics_diff("v1", cwd="/p") == {"m.json": {}}
    (cmd, kw), = calls
    assert cmd[1:] == ["-m", "dvc", "metrics", "diff", "v1", "--json", "--targets", "metrics"]
    assert kw["cwd"] == "/p" and kw["env"]["DVC_NO_ANALYTICS"] == "1" and kw["capture_output"] and kw["text"]
    D.metrics_diff("v1", "v2", targets=["a.json", "b.json"], unchanged=True)
    assert calls[-1][0][4:] == ["diff", "v1", "v2", "--json", "--all", "--targets", "a.json", "b.json"]
    D.metrics_diff("v1")
    assert calls[-1][1]["cwd"] == ".", "the project the command runs in"
    monkeypatch.setattr(D.subprocess, "run", lambda cmd, **kw: SimpleNamespace(returncode=0, stdout="", stderr=""))
    assert D.metrics_diff("v1") == {}


def test_a_dvc_failure_names_both_revisions_and_its_last_line(monkeypatch):
    err = "WARNING: something\nERROR: unknown Git revision 'nope'\n\n"
    monkeypatch.setattr(D.subprocess, "run", lambda cmd, **kw: SimpleNamespace(returncode=255, stdout="", stderr=err))
    with pytest.raises(ConfigError) as exc:
        D.metrics_diff("nope", "v2")
    assert str(exc.value) == "dvc metrics diff nope v2: ERROR: unknown Git revision 'nope'"
    monkeypatch.setattr(D.subprocess, "run", lambda cmd, **kw: SimpleNamespace(returncode=3, stdout="", stderr=" \n"))
    with pytest.raises(ConfigError, match=r"^dvc metrics diff nope \(workspace\): exit 3$"):
        D.metrics_diff("nope")


def test_the_command_line_and_its_help(monkeypatch):
    """`prbench diff --help` says what each argument is; `--all` and `--all-metrics` are one flag; --targets many."""
    monkeypatch.setenv("COLUMNS", "250")   # argparse wraps help to the terminal's width
    ap = argparse.ArgumentParser(prog="prbench")
    sub = D.add_parser(ap.add_subparsers(dest="command", required=True))
    for flag in ("--all", "--all-metrics"):
        args = ap.parse_args(["diff", "v1", flag])
        assert (args.rev_a, args.rev_b, args.all_metrics, args.targets) == ("v1", None, True, None)
    args = ap.parse_args(["diff", "v1", "v2", "--targets", "a.json", "b.json"])
    assert (args.rev_b, args.all_metrics, args.targets) == ("v2", False, ["a.json", "b.json"])
    text = " ".join(sub.format_help().split())
    for said in ("rev_a a git revision: tag, commit or branch", "rev_b another revision (default: the workspace)",
                 "--all, --all-metrics after the headline, every changed metric with its interval",
                 "--targets TARGETS [TARGETS ...] only these metrics files"):
        assert said in text, said
    assert ("diff what changed between two versions: a headline (leaderboard, primary correlation) with intervals; "
            "--all for every metric (dvc metrics diff)") in " ".join(ap.format_help().split())
