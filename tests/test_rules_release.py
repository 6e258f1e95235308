"""Release rollback restores the work tree exactly, in process and in seconds: a journal is prepared, a
"run" changes the repo the ways a killed score-rm can (params edited, the lock rewritten, a tracked output
changed, new files git sees outside the RM's outputs, new ignored files, files staged), then `rollback`
puts every file back: tracked and untracked, ignored or not, the index too. What is kept on purpose (the
LLM cache, run records) survives. The crash suite (tests/test_release_crash.py) does the same with real
SIGKILLs at every step of a real score-rm."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.ops import gitops, release_txn, releases

DVC = str(Path(sys.executable).with_name("dvc"))
RELEASE = releases.Release(model="acme/rm-a", revision="a" * 40, source="hub")


def _git(repo, *args):
    return gitops.git(repo, *args)


def _tree(repo: Path) -> dict:
    """Every file but git's and DVC's own internals (and the releases state file's lock), with its bytes."""
    out = {}
    for p in sorted(repo.rglob("*")):
        rel = p.relative_to(repo).as_posix()
        if p.is_file() and not rel.startswith((".git/", ".dvc/tmp", ".dvc/cache", "data/releases/.")):
            out[rel] = p.read_bytes()
    return out


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "params.yaml").write_text("common:\n  cache_dir: .mycache\nscoring:\n  rms:\n    random: {kind: random}\n")
    (repo / "dvc.yaml").write_text("stages: {}\n")
    (repo / "metrics").mkdir()
    (repo / "metrics/leaderboard.json").write_text('{"random": 0.5}\n')
    (repo / ".gitignore").write_text("/scratch/\n/data/\n/.mycache/\n/runs/\n")
    (repo / "data").mkdir()
    (repo / "data/old.parquet").write_text("an ignored output that was there before")
    (repo / "notes.txt").write_text("a user's own untracked file\n")
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "config", "user.email", "t@localhost"],
                ["git", "config", "user.name", "t"], [DVC, "init", "-q"]):
        subprocess.run(cmd, cwd=repo, check=True, capture_output=True, env={"DVC_NO_ANALYTICS": "1",
                                                                            "PATH": "/usr/bin:/bin"})
    _git(repo, "add", "params.yaml", "dvc.yaml", "metrics", ".gitignore", ".dvc")
    _git(repo, "commit", "-q", "-m", "baseline")
    (repo / "metrics/leaderboard.json").write_text('{"random": 0.5, "edited": "by the user, uncommitted"}\n')
    return repo


def _run_changes(repo: Path) -> None:
    """What a killed score-rm may have done before it died."""
    (repo / "params.yaml").write_text((repo / "params.yaml").read_text() + "    rm-a: {kind: seq-cls}\n")
    (repo / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")                      # created
    (repo / "metrics/leaderboard.json").write_text('{"random": 0.5, "rm-a": 0.9}\n')   # changed (the user's edit lost)
    (repo / "metrics/scores").mkdir()
    (repo / "metrics/scores/rm-a.json").write_text("{}")                               # the RM's own output
    (repo / "plots/leaderboard").mkdir(parents=True)
    (repo / "plots/leaderboard/rm-a.csv").write_text("rm,accuracy\nrm-a,0.9\n")         # new, outside its outputs
    (repo / "metrics/.leaderboard.json.tmp").write_text("half a write")                  # a torn atomic write
    (repo / "scratch").mkdir()
    (repo / "scratch/partial.bin").write_text("ignored, made by the run")               # ignored, outside any output
    (repo / "data/scores").mkdir()
    (repo / "data/scores/rm-a.parquet").write_text("partial")
    (repo / "notes.txt").write_text("the run must not keep this change\n")
    (repo / ".mycache").mkdir()
    (repo / ".mycache/llm-call.json").write_text("computed: kept")                      # common.cache_dir: kept
    (repo / "runs").mkdir()
    (repo / "runs/record.json").write_text("a run record: kept")
    _git(repo, "add", "params.yaml", "plots", "metrics/scores")                          # partly staged


@pytest.mark.timeout(120)
def test_rollback_restores_every_file_anywhere_and_the_index(repo):
    before, status, head = _tree(repo), _git(repo, "status", "--porcelain", "-uall"), _git(repo, "rev-parse", "HEAD")
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
        j.prepare()
        _run_changes(repo)
    dead = release_txn.dead(repo)
    assert [d.id for d in dead] == [j.id], "its lock is free: a dead run's journal"
    said = []
    assert release_txn.rollback(repo, dead[0], log=said.append) == "rolled back"
    after = _tree(repo)
    kept = {".mycache/llm-call.json", "runs/record.json"}
    assert set(after) - set(before) == kept, "the run's files are gone; the cache and run records stay"
    assert {k: after[k] for k in before} == before, sorted(k for k in before if after.get(k) != before[k])
    assert _git(repo, "status", "--porcelain", "-uall") == status, "the index as it was: nothing left staged"
    assert _git(repo, "rev-parse", "HEAD") == head
    assert said and said[-1].startswith("rolled back the unfinished release acme/rm-a@")
    assert json.loads((j.path).read_text())["phase"] == "download", "only the rescore is left to do"


@pytest.mark.timeout(120)
def test_a_release_whose_commit_landed_is_not_undone(repo):
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
        j.prepare()
        _run_changes(repo)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", j.message("score-rm: add rm-a"))
    committed = _tree(repo)
    assert release_txn.rollback(repo, release_txn.dead(repo)[0]) == "landed"
    assert _tree(repo) == committed and not j.path.exists(), "as after, and the journal is done"


@pytest.mark.timeout(120)
def test_a_run_that_died_downloading_touched_nothing(repo):
    before = _tree(repo)
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
        pass   # phase "download": nothing in the repo was touched yet
    assert release_txn.rollback(repo, release_txn.load(repo, j.path)) == "rolled back"
    assert _tree(repo) == before


@pytest.mark.timeout(120)
def test_a_journal_with_a_live_owner_is_not_dead(repo):
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
        assert release_txn.dead(repo) == []
        assert [d["id"] for d in release_txn.running(repo)] == [j.id]
    assert [d.id for d in release_txn.dead(repo)] == [j.id] and release_txn.running(repo) == []


def test_a_journal_torn_before_its_first_write_is_dropped(repo):
    d = release_txn._dir(repo)
    (d / "torn.json").write_text("{")
    assert release_txn.dead(repo) == [] and not (d / "torn.json").exists()


def test_the_record_of_a_known_rm_is_put_back_and_a_new_ones_removed(repo):
    path = repo / release_txn.STATE
    path.parent.mkdir(parents=True, exist_ok=True)
    other = {"revision": "o", "rm": "other", "source": "hub", "status": "announced", "message": None}
    releases.save_state({"models": {"acme/other": other, RELEASE.model: {**other, "status": "scored"}}}, path)
    j = release_txn.Journal(repo, RELEASE, "rm-a", {})
    j.data["prior_record"] = None
    release_txn._restore_record(repo, j)
    assert releases.load_state(path)["models"] == {"acme/other": other}, "a new release: its record goes, others stay"
    j.data["prior_record"] = {**other, "revision": "old"}
    release_txn._restore_record(repo, j)
    assert releases.load_state(path)["models"][RELEASE.model]["revision"] == "old"
    releases.save_state({"models": {RELEASE.model: other}}, path)
    j.data["prior_record"] = None
    release_txn._restore_record(repo, j, existed=False)
    assert not path.exists(), "no record left and none before: no file"
