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
    release_txn._restore_record(repo, j, existed=True)
    assert releases.load_state(path)["models"] == {"acme/other": other}, "a new release: its record goes, others stay"
    j.data["prior_record"] = {**other, "revision": "old"}
    release_txn._restore_record(repo, j, existed=True)
    assert releases.load_state(path)["models"][RELEASE.model]["revision"] == "old"
    releases.save_state({"models": {RELEASE.model: other}}, path)
    j.data["prior_record"] = None
    release_txn._restore_record(repo, j, existed=False)
    assert not path.exists(), "no record left and none before: no file"


def _rwlock(repo: Path, lock: dict, age_s: float = 0.0) -> Path:
    path = repo / ".dvc" / "tmp" / "rwlock"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(lock))
    if age_s:
        import os
        import time
        os.utime(path, (time.time() - age_s, time.time() - age_s))
    return path


@pytest.mark.timeout(60)
def test_a_killed_dvcs_rwlock_entries_go_and_a_live_holders_stay(repo):
    """DVC keeps a dead pid's entry while its pid exists: a zombie (not reaped yet) or a pid reused by a process
    started after the lock was written must not hold the rescore's outputs ('... is busy')."""
    import os
    import time

    finished = subprocess.Popen(["true"])
    finished.wait()                                   # gone: DVC would drop it too
    zombie = subprocess.Popen(["true"])               # exited, not reaped: psutil sees a zombie
    while subprocess.run(["ps", "-o", "stat=", "-p", str(zombie.pid)], capture_output=True,
                         text=True).stdout.strip()[:1] != "Z":
        time.sleep(0.05)
    live = os.getpid()                                # started before the lock was written: a real holder
    with open(os.devnull, "w") as devnull:
        reused = subprocess.Popen(["sleep", "30"], stdout=devnull)   # started after the lock was written
    try:
        def info(pid):
            return {"pid": pid, "cmd": f"dvc repro ({pid})"}
        path = _rwlock(repo, {"write": {"data/a": info(finished.pid), "data/b": info(live),
                                        "data/c": info(zombie.pid), "data/d": info(reused.pid)},
                              "read": {"data/x": [info(finished.pid), info(live)], "data/y": [info(zombie.pid)],
                                       "data/z": [info(live)]}}, age_s=5)
        said = []
        release_txn._free_dvc_rwlock(repo, log=said.append)
        left = json.loads(path.read_text())
        assert left["write"] == {"data/b": info(live)}
        assert left["read"] == {"data/x": [info(live)], "data/z": [info(live)]}, "an emptied read entry goes"
        dead = sorted([finished.pid, zombie.pid, reused.pid])
        assert said == [f"released DVC's locks of the dead run's dvc (pid {', '.join(map(str, dead))})"]
    finally:
        reused.kill()
        reused.wait()
        zombie.wait()


def test_an_rwlock_of_live_holders_only_is_left_as_it_was_and_none_is_not_made(repo):
    import os

    said = []
    release_txn._free_dvc_rwlock(repo, log=said.append)
    assert not (repo / ".dvc" / "tmp" / "rwlock").exists() and said == [], "no rwlock: none is written"
    lock = {"write": {"data/b": {"pid": os.getpid(), "cmd": "dvc repro"}}, "read": {}}
    path = _rwlock(repo, lock, age_s=5)
    release_txn._free_dvc_rwlock(repo, log=said.append)
    assert json.loads(path.read_text()) == lock and said == [], "nothing dead: nothing said"


def test_a_torn_rwlock_is_reported_in_one_line_and_left_for_dvc(repo):
    path = _rwlock(repo, {})
    path.write_text("{ torn")
    said = []
    release_txn._free_dvc_rwlock(repo, log=said.append)
    assert path.read_text() == "{ torn"
    assert len(said) == 1 and said[0].startswith("could not release DVC's locks of the dead run: ") and "rwlock" in said[0]


def test_a_finished_journal_leaves_nothing_of_itself_and_others_stay(repo):
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as other:
        pass
    (repo / "notes.txt").write_text("dirty: backed up by prepare\n")
    with release_txn.Journal(repo, RELEASE, "rm-b", {"kind": "seq-cls"}) as j:
        j.prepare()
        assert (j.backup / "notes.txt").read_text() == "dirty: backed up by prepare\n"
        j.done()
    d = release_txn._dir(repo)
    assert sorted(p.name for p in d.iterdir()) == sorted([f"{other.id}.json", f"{other.id}.lock"])
    assert [x.id for x in release_txn.dead(repo)] == [other.id]
    assert release_txn.running(repo) == []
    release_txn.load(repo, other.path).done()          # one that never prepared: no backup to remove
    assert list(d.iterdir()) == []


def test_a_new_rms_outputs_go_in_every_stage_fanned_over_scoring_rms_and_nothing_else(repo):
    from tasks.core.stage_table import TABLE

    made = {}
    for stage in (s for s in TABLE if s.per_rm):
        for rm in ("rm-a", "rm-b"):
            for key, p in stage.out(rm).items():
                target = repo / p
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.suffix or (stage.name, key) == ("bon_score", "scores"):   # a folder: a partial dataset
                    target.mkdir(exist_ok=True)
                    (target / "part-0").write_text("x")
                else:
                    target.write_text("x")
                made[p] = (stage, rm)
    release_txn._remove_rm_outputs(repo, "rm-a")
    for p, (stage, rm) in made.items():
        fanned = stage.foreach == "scoring.rms"
        assert (repo / p).exists() == (rm != "rm-a" or not fanned), (stage.name, p)
    assert any((repo / p).is_dir() for p, (s, rm) in made.items() if rm == "rm-b" and s.name == "bon_score")


def test_the_record_file_is_rebuilt_from_the_journal_when_torn_or_gone_and_kept_while_it_holds_others(repo):
    import shutil

    path = repo / release_txn.STATE
    shutil.rmtree(repo / "data")                       # its folders too
    j = release_txn.Journal(repo, RELEASE, "rm-a", {})
    prior = {"revision": "old", "rm": "rm-a", "source": "hub", "status": "scored", "message": None}
    j.data["prior_record"] = prior
    release_txn._restore_record(repo, j, existed=False)
    assert releases.load_state(path)["models"] == {RELEASE.model: prior}, "made again, folders and all"
    path.write_text("{ torn")                          # by hand: it is written atomically
    release_txn._restore_record(repo, j, existed=True)
    assert releases.load_state(path)["models"] == {RELEASE.model: prior}, "a torn file: the journal's record"
    path.write_text("{ torn")
    j.data["prior_record"] = None
    release_txn._restore_record(repo, j, existed=True)
    assert path.exists() and releases.load_state(path)["models"] == {}, "it existed: it stays, empty"
    other = {**prior, "rm": "other"}
    releases.save_state({"models": {"acme/other": other, RELEASE.model: prior}}, path)
    release_txn._restore_record(repo, j, existed=False)
    assert releases.load_state(path)["models"] == {"acme/other": other}, "a watcher's record written meanwhile stays"


def test_a_live_journal_mid_first_write_does_not_hide_the_others_running(repo):
    import fcntl

    d = release_txn._dir(repo)
    with open(d / "0000.lock", "w") as held:           # its owner is alive and has not finished writing it
        fcntl.flock(held, fcntl.LOCK_EX)
        (d / "0000.json").write_text("{")
        with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
            assert [x["id"] for x in release_txn.running(repo)] == [j.id]
        assert (d / "0000.json").exists(), "not dead: its owner holds the lock"


@pytest.mark.timeout(180)
def test_rollback_checks_dvcs_outputs_out_to_the_lock_and_restores_removed_folders(repo):
    """An ignored DVC output the run rewrote is checked out again from the restored lock; a tracked folder the run
    removed whole comes back with its committed and its uncommitted (backed up) files; a git killed mid-commit
    left its index.lock: it goes."""
    env = {"DVC_NO_ANALYTICS": "1", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    subprocess.run([DVC, "stage", "add", "-q", "-n", "make", "-o", "data/made.txt", "echo made > data/made.txt"],
                   cwd=repo, check=True, capture_output=True, env=env)
    subprocess.run([DVC, "repro", "-q"], cwd=repo, check=True, capture_output=True, env=env)
    (repo / "plots").mkdir()
    (repo / "plots/a.csv").write_text("committed\n")
    (repo / "plots/b.csv").write_text("committed\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "a stage and a folder")
    (repo / "plots/a.csv").write_text("the user's edit, uncommitted\n")   # restored first: its folder is gone
    before = _tree(repo)
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
        j.prepare()
        (repo / "data/made.txt").unlink()
        (repo / "data/made.txt").write_text("rewritten by the killed run\n")
        import shutil
        shutil.rmtree(repo / "plots")
        git_dir = Path(_git(repo, "rev-parse", "--absolute-git-dir").strip())
        (git_dir / "index.lock").write_text("")
    assert release_txn.rollback(repo, release_txn.dead(repo)[0], log=lambda line: None) == "rolled back"
    assert (repo / "data/made.txt").read_text() == "made\n", "dvc checkout to the lock"
    assert _tree(repo) == before
    assert not (git_dir / "index.lock").exists()


@pytest.mark.timeout(120)
def test_rescoring_a_known_rm_keeps_its_outputs_its_record_and_the_users_untracked_files(repo):
    """A release of an RM params already names (a new revision): rolled back, its earlier outputs and registry
    record are as they were. Files the user had and git does not track (in an untracked folder, a one-letter
    name) are backed up and put back."""
    (repo / "params.yaml").write_text((repo / "params.yaml").read_text() + "    rm-a: {kind: seq-cls}\n")
    _git(repo, "commit", "-qam", "rm-a is on the board")
    (repo / "data/scores").mkdir()
    (repo / "data/scores/rm-a.parquet").write_text("the earlier revision's scores")
    state = repo / release_txn.STATE
    prior = {"revision": "b" * 40, "rm": "rm-a", "source": "hub", "status": "scored", "message": None}
    releases.save_state({"models": {RELEASE.model: prior}}, state)
    (repo / "drafts").mkdir()
    (repo / "drafts/idea.txt").write_text("the user's, untracked\n")
    (repo / "x").write_text("one letter\n")
    before = _tree(repo)
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
        j.prepare()
        releases.save_state({"models": {RELEASE.model: {**prior, "revision": RELEASE.revision,
                                                         "status": "scoring"}}}, state)
        (repo / "drafts/idea.txt").write_text("overwritten\n")
        (repo / "x").write_text("overwritten\n")
    assert release_txn.rollback(repo, release_txn.dead(repo)[0], log=lambda line: None) == "rolled back"
    assert releases.load_state(state)["models"] == {RELEASE.model: prior}
    assert _tree(repo) == before


def test_an_error_inside_a_journal_propagates_and_every_journal_has_its_own_id(repo):
    with pytest.raises(RuntimeError, match="the run failed"):
        with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}):
            raise RuntimeError("the run failed")   # the release fails loudly; its journal stays for recovery
    ids = {release_txn.Journal(repo, RELEASE, "rm-a", {}).id for _ in range(20)}
    assert len(ids) == 20 and None not in ids


def test_a_journal_read_back_is_the_one_written(repo):
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls", "model": "acme/rm-a"}, branch="rel") as j:
        j.prepare()
    back = release_txn.load(repo, j.path)
    assert (back.id, back.name, back.entry, back.branch, back.release) == \
        (j.id, "rm-a", {"kind": "seq-cls", "model": "acme/rm-a"}, "rel", RELEASE)
    assert back.data["phase"] == "edit" and back.data["rm_was_known"] is False and back.data["prior_record"] is None


def test_dead_lists_every_dead_journal_oldest_first_past_a_live_one(repo):
    """A live journal (older than the dead ones) does not stop the scan; dead ones come oldest first (their order
    of writing, not their ids')."""
    import fcntl
    import os

    d = release_txn._dir(repo)
    made = {}
    for jid, age in (("c", 30), ("a", 10), ("b", 20)):
        j = release_txn.Journal(repo, RELEASE, f"rm-{jid}", {}, id=jid)
        j.save()
        os.utime(j.path, (j.path.stat().st_atime, j.path.stat().st_mtime - age))
        made[jid] = j
    with open(d / "c.lock", "w") as held:              # the oldest is alive
        fcntl.flock(held, fcntl.LOCK_EX)
        assert [j.id for j in release_txn.dead(repo)] == ["b", "a"]
        assert [x["id"] for x in release_txn.running(repo)] == ["c"]


def test_landed_looks_on_the_release_branch_and_a_missing_branch_is_not_landed(repo):
    j = release_txn.Journal(repo, RELEASE, "rm-a", {}, branch="releases")
    _git(repo, "checkout", "-q", "-b", "releases")
    _git(repo, "commit", "-q", "--allow-empty", "-m", j.message("score-rm: add rm-a"))
    _git(repo, "checkout", "-q", "main")
    assert release_txn.landed(repo, j), "committed on its branch while HEAD is elsewhere"
    assert not release_txn.landed(repo, release_txn.Journal(repo, RELEASE, "rm-a", {}, id=j.id)), "not on HEAD"
    assert not release_txn.landed(repo, release_txn.Journal(repo, RELEASE, "rm-a", {}, branch="gone", id=j.id))


def test_a_release_prepared_in_a_repo_without_commits_rolls_back(tmp_path):
    repo = tmp_path / "fresh"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "params.yaml").write_text("scoring: {rms: {}}\n")
    before, status = _tree(repo), _git(repo, "status", "--porcelain", "-uall")
    with release_txn.Journal(repo, RELEASE, "rm-a", {}) as j:
        j.prepare()
        (repo / "params.yaml").write_text("scoring: {rms: {rm-a: {kind: random}}}\n")
        (repo / "metrics.json").write_text("{}")
        _git(repo, "add", "-A")
    assert j.data["head"] is None
    assert release_txn.rollback(repo, release_txn.dead(repo)[0], log=lambda line: None) == "rolled back"
    assert _tree(repo) == before
    left = "".join(line for line in _git(repo, "status", "--porcelain", "-uall").splitlines(True)
                   if "data/releases/." not in line)   # the record's lock file (the real repo ignores it)
    assert left == status, "nothing left staged"


def test_ignored_files_lists_what_git_ignores_in_every_folder_but_the_kept_and_the_cache(repo):
    (repo / "scratch").mkdir()
    (repo / "scratch/a.bin").write_text("x")
    (repo / "data/deep").mkdir()
    (repo / "data/deep/b.bin").write_text("x")
    (repo / ".mycache").mkdir()
    (repo / ".mycache/c.json").write_text("kept: common.cache_dir")
    (repo / "runs").mkdir()
    (repo / "runs/r.json").write_text("kept: run records")
    listed = release_txn.ignored_files(repo)
    assert listed == ["data/deep/b.bin", "data/old.parquet", "scratch/a.bin"], "not tracked, not untracked-visible"
    params = (repo / "params.yaml").read_text()
    (repo / "params.yaml").write_text(params.replace("cache_dir: .mycache", "cache_dir: .mycache/"))
    assert release_txn.ignored_files(repo) == listed, "a trailing slash names the same folder"
    (repo / "params.yaml").write_text(params.replace("cache_dir: .mycache", "cache_dir: /scratch"))
    assert ".mycache/c.json" in release_txn.ignored_files(repo) and "scratch/a.bin" in release_txn.ignored_files(repo), \
        "an absolute cache_dir is elsewhere: the repo's scratch/ is not it"
    (repo / "params.yaml").write_text(params.replace("  cache_dir: .mycache\n", ""))
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "/None/\n")
    (repo / "None").mkdir()
    (repo / "None/n.bin").write_text("x")
    assert "None/n.bin" in release_txn.ignored_files(repo), "no cache_dir: nothing more is kept"


@pytest.mark.timeout(180)
def test_a_tracked_record_file_nested_removed_folders_and_a_second_rollback(repo):
    """In the real repo data/releases/registered.json is tracked: the record is put back by _restore_record, and
    every changed file after it in path order is still restored. A folder removed two levels deep comes back.
    Rolling back again (a recovery that died before the rescore) undoes nothing the user did since."""
    (repo / ".gitignore").write_text("/scratch/\n/data/*\n!/data/releases/\n/.mycache/\n/runs/\n")
    state = repo / release_txn.STATE
    releases.save_state({"models": {}}, state)
    (repo / "plots/a/b").mkdir(parents=True)
    (repo / "plots/a/b/c.csv").write_text("committed\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "the record file and a nested folder")
    before = _tree(repo)
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
        j.prepare()
        releases.save_state({"models": {RELEASE.model: {"revision": RELEASE.revision, "status": "scoring"}}}, state)
        (repo / "params.yaml").write_text("changed\n")
        import shutil
        shutil.rmtree(repo / "plots")
    _rwlock(repo, {"write": {"data/x": {"pid": 2 ** 22 + 7, "cmd": "dvc repro"}}, "read": {}}, age_s=5)
    said = []
    assert release_txn.rollback(repo, release_txn.dead(repo)[0], log=said.append) == "rolled back"
    assert _tree(repo) == before
    assert releases.load_state(state) == {"models": {}}, "it existed before, empty: it stays, empty"
    assert said[0] == f"released DVC's locks of the dead run's dvc (pid {2 ** 22 + 7})"
    assert said[-1] == f"rolled back the unfinished release acme/rm-a@{'a' * 40} (3 files restored)"
    (repo / "params.yaml").write_text("the user's edit after the recovery\n")
    assert release_txn.rollback(repo, release_txn.load(repo, j.path), log=said.append) == "rolled back"
    assert (repo / "params.yaml").read_text() == "the user's edit after the recovery\n", "rolled back once only"


def test_a_new_rms_stale_output_the_run_rewrote_does_not_survive_the_rollback(repo):
    """An output of the new RM's name that was there before (left by an RM of that name removed from params) and
    that the run rewrote: no lock entry restores it, so it goes (a half-written result never stays)."""
    (repo / "data/scores").mkdir()
    stale = repo / "data/scores/rm-a.parquet"
    stale.write_text("left by an earlier rm-a")
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
        j.prepare()
        stale.write_text("half written by the killed run")
    assert release_txn.rollback(repo, release_txn.dead(repo)[0], log=lambda line: None) == "rolled back"
    assert not stale.exists()


def test_dvcs_hardlink_lock_guards_the_rwlock_edit_when_the_repo_uses_it(repo):
    """With core.hardlink_lock (NFS), DVC guards its rwlock with a hardlink lock, not a flock: the cleanup must take
    the same kind, so a DVC holding it is waited for, not raced (here: it gives up and says so)."""
    from dvc.lock import make_lock
    from dvc.rwlock import RWLOCK_LOCK

    subprocess.run([DVC, "config", "core.hardlink_lock", "true"], cwd=repo, check=True, capture_output=True)
    lock = {"write": {"data/x": {"pid": 2 ** 22 + 7, "cmd": "dvc repro"}}, "read": {}}
    path = _rwlock(repo, lock, age_s=5)
    said = []
    with make_lock(str(path.parent / RWLOCK_LOCK), tmp_dir=str(path.parent), hardlink_lock=True):
        release_txn._free_dvc_rwlock(repo, log=said.append)
    assert json.loads(path.read_text()) == lock, "not edited under another's lock"
    assert len(said) == 1 and said[0].startswith("could not release DVC's locks of the dead run: ")
    release_txn._free_dvc_rwlock(repo, log=said.append)
    assert json.loads(path.read_text()) == {"write": {}, "read": {}}, "free again: the dead entry goes"


def test_an_output_folder_that_will_not_go_fails_the_recovery_and_it_is_tried_again(repo, monkeypatch):
    """Rollback never leaves a new RM's partial output silently: a folder it cannot remove fails the recovery,
    the journal stays unfinished, and the next start rolls back again."""
    from tasks.core.stage_table import TABLE

    stage = next(s for s in TABLE if s.name == "bon_score")
    assert stage.per_rm and stage.foreach == "scoring.rms"
    folder = repo / stage.out("rm-a")["scores"]   # a partitioned dataset: a folder
    with release_txn.Journal(repo, RELEASE, "rm-a", {"kind": "seq-cls"}) as j:
        j.prepare()
        folder.mkdir(parents=True)
        (folder / "part-0").write_text("partial")

    import os

    def refuse(path, *args, **kwargs):   # e.g. a folder on a read-only mount, or held open on NFS
        raise PermissionError(f"cannot remove {path}")

    monkeypatch.setattr(os, "rmdir", refuse)   # the last step of shutil.rmtree
    with pytest.raises(PermissionError):
        release_txn.rollback(repo, release_txn.dead(repo)[0], log=lambda line: None)
    monkeypatch.undo()
    again = release_txn.dead(repo)
    assert [d.id for d in again] == [j.id] and again[0].data["phase"] == "edit", "unfinished: tried again"
    assert release_txn.rollback(repo, again[0], log=lambda line: None) == "rolled back"
    assert not folder.exists()
