"""score-rm's steps (tasks/ops/release_score.py, docs/releases.md) in process, in seconds: the download and `dvc
repro` are the callables score() is handed, everything else is real (git, the journal, the lock, params.yaml's
edit, the state file). A release is all or nothing: scored and committed once, or failed with one line and the
repo as it was; a dead run's release is rolled back and scored again, unless its commit landed; one that keeps
failing is queued RESCORE_TRIES runs, then recorded as failed. (The crash suites kill a real score-rm at each
step: tests/test_release_crash*.py, slow.)"""
from __future__ import annotations

import json

import pytest

from tasks.core.errors import ConfigError
from tasks.ops import release_score, release_txn, releases, repo_lock
from tasks.ops.repro import DvcResult
from tests.test_rules_release import RELEASE, _git, _tree, repo  # noqa: F401 - the fixture: a git + DVC repo

NAME, ENTRY = "rm-a", {"kind": "seq-cls", "model": RELEASE.model, "revision": RELEASE.revision}
OTHER = releases.Release(model="acme/rm-b", revision="b" * 40, source="hub")


def _repro(repo, ran=("score@rm-a",), rc=0):
    """A stand-in for `dvc repro`: writes the new RM's output and the report, as the stages would."""
    calls = []

    def run():
        calls.append(1)
        (repo / "metrics" / "scores").mkdir(exist_ok=True)
        (repo / "metrics" / "scores" / "rm-a.json").write_text('{"accuracy": 0.9}\n')
        return DvcResult(rc, list(ran), ["ERROR: failed to reproduce 'score@rm-a'"] if rc else [])

    run.calls = calls
    return run


def _fetched(*_):
    pass


def _state(repo) -> dict:
    return releases.load_state(repo / release_score.STATE)["models"]


def _subjects(repo) -> list[str]:
    return _git(repo, "log", "--format=%s").splitlines()


@pytest.mark.timeout(120)
def test_a_release_is_scored_and_committed_once_with_its_record(repo):
    said = []
    out = release_score.score(repo, RELEASE, NAME, ENTRY, repro=_repro(repo), prefetch=_fetched, log=said.append)
    assert (out.rm, out.status, out.ran) == (NAME, "scored", ["score@rm-a"])
    assert _subjects(repo)[0] == f"score-rm: add {NAME} = {RELEASE.model}@{RELEASE.revision}"
    assert out.commit == _git(repo, "rev-parse", "HEAD").strip()
    assert out.committed == ["metrics/scores/rm-a.json", "params.yaml"], "what the run changed (data/ is ignored here)"
    assert "metrics/leaderboard.json" not in out.committed, "the user's uncommitted edit is not the run's to commit"
    assert _state(repo)[RELEASE.model] == {"revision": RELEASE.revision, "rm": NAME, "source": "hub",
                                           "status": "scored", "message": None}
    assert release_txn.dead(repo) == [] and release_txn.running(repo) == [], "no journal is left"
    assert release_score.already_scored(repo, NAME, RELEASE)

    again = release_score.score(repo, RELEASE, NAME, ENTRY, repro=_repro(repo), prefetch=_fetched, log=said.append)
    assert (again.rm, again.status, again.commit) == (NAME, "already scored", None)
    assert sum(RELEASE.revision in s for s in _subjects(repo)) == 1, "scored and committed once"
    assert said[-1] == f"score-rm {RELEASE.model}@{RELEASE.revision}: already scored and committed; nothing to do"


@pytest.mark.timeout(120)
def test_already_scored_needs_the_params_entry_and_the_scored_record_at_that_revision(repo):
    release_score.score(repo, RELEASE, NAME, ENTRY, repro=_repro(repo), prefetch=_fetched, log=lambda _: None)
    newer = releases.Release(model=RELEASE.model, revision="c" * 40, source="hub")
    assert release_score.already_scored(repo, NAME, RELEASE)
    assert not release_score.already_scored(repo, NAME, newer), "another revision of the model is new"
    assert not release_score.already_scored(repo, "rm-z", RELEASE), "under another name"
    releases.update_state(repo / release_score.STATE, RELEASE, NAME, "announced")
    assert not release_score.already_scored(repo, NAME, RELEASE), "the record must say scored"
    (repo / "params.yaml").write_text("common:\n  cache_dir: .mycache\n")
    assert not release_score.already_scored(repo, NAME, RELEASE), "no scoring group: no RM is scored"


@pytest.mark.timeout(120)
def test_a_release_that_cannot_be_downloaded_fails_in_one_line_and_touches_nothing(repo):
    before, head = _tree(repo), _git(repo, "rev-parse", "HEAD")

    def refused(release, entry):
        raise ConfigError(f"{release.model}@{release.revision}: 404 Not Found")

    repro = _repro(repo)
    with pytest.raises(release_score.ReleaseFailed, match=f"^score-rm {RELEASE.model}@{RELEASE.revision}: 404"):
        release_score.score(repo, RELEASE, NAME, ENTRY, repro=repro, prefetch=refused, log=lambda _: None)
    assert _tree(repo) == before and _git(repo, "rev-parse", "HEAD") == head and not repro.calls
    assert release_txn.dead(repo) == [], "a failed release is not an interrupted one: nothing to rescore"


@pytest.mark.timeout(120)
def test_a_failed_repro_rolls_the_edit_back_and_fails_in_one_line(repo):
    before, head = _tree(repo), _git(repo, "rev-parse", "HEAD")
    with pytest.raises(release_score.ReleaseFailed, match="dvc repro failed: ERROR: failed to reproduce 'score@rm-a'"):
        release_score.score(repo, RELEASE, NAME, ENTRY, repro=_repro(repo, rc=1), prefetch=_fetched,
                            log=lambda _: None)
    assert _tree(repo) == before and _git(repo, "rev-parse", "HEAD") == head
    assert release_txn.dead(repo) == [] and RELEASE.model not in _state(repo)


def _dead_run(repo, release=RELEASE, name=NAME, commit=False, branch=None):
    """A run that prepared its journal, edited params and died (or died right after its commit landed)."""
    with release_txn.Journal(repo, release, name, {**ENTRY, "model": release.model, "revision": release.revision},
                             branch) as j:
        j.prepare()
        (repo / "params.yaml").write_text((repo / "params.yaml").read_text() + f"    {name}: {{kind: seq-cls}}\n")
        if commit:
            _git(repo, "add", "params.yaml")
            _git(repo, "commit", "-q", "-m", j.message(release_score.subject(name, release)))
    return j


@pytest.mark.timeout(120)
def test_recover_rolls_back_dead_runs_and_returns_those_left_to_score_except_the_one_skipped(repo):
    """(Under the dvc lock, as every caller holds it: a run recovers the dead ones before it changes anything.)"""
    said = []
    _dead_run(repo, OTHER, "rm-b", commit=True)
    assert release_score.recover(repo, log=said.append) == [], "a release whose commit landed is not scored again"
    assert said[-1] == f"the release {OTHER.model}@{OTHER.revision} was committed before its run died"
    assert "rm-b" in (repo / "params.yaml").read_text() and release_txn.dead(repo) == []

    lost = _dead_run(repo)
    assert [j.id for j in release_score.recover(repo, log=said.append)] == [lost.id]
    assert "rm-a" not in (repo / "params.yaml").read_text(), "its edit rolled back"
    assert said[-1].startswith(f"rolled back the unfinished release {RELEASE.model}@"), "in the caller's log"
    assert [j.id for j in release_txn.dead(repo)] == [lost.id], "still queued: its journal stays until it is scored"

    mine = _dead_run(repo)
    assert [j.id for j in release_score.recover(repo, log=said.append, skip=RELEASE)] == [], \
        "the caller scores the skipped release anyway"
    assert not mine.path.exists() and not lost.path.exists(), "the skipped release's journals are done"


@pytest.mark.timeout(120)
def test_a_dead_runs_release_is_scored_once_before_the_new_one(repo):
    _dead_run(repo, OTHER, "rm-b")
    said = []
    out = release_score.score(repo, RELEASE, NAME, ENTRY, repro=_repro(repo), prefetch=_fetched, log=said.append)
    assert out.status == "scored"
    assert _subjects(repo)[:2] == [release_score.subject(NAME, RELEASE), release_score.subject("rm-b", OTHER)]
    assert _state(repo)[OTHER.model]["status"] == "scored" and release_txn.dead(repo) == []
    assert f"scoring the interrupted release {OTHER.model}@{OTHER.revision} again" in said


@pytest.mark.timeout(180)
def test_a_rescore_that_fails_stays_queued_then_counts_as_failed_after_three_runs(repo):
    old = _dead_run(repo, OTHER, "rm-b")

    def refused(release, entry):
        if release.model == OTHER.model:
            raise ConfigError(f"{release.model}: 503 Service Unavailable")

    said = []
    for run in range(1, release_score.RESCORE_TRIES + 1):
        assert release_score.recover_and_rescore(repo, _repro(repo), refused, log=said.append) == 1
        record = _state(repo)[OTHER.model]
        if run < release_score.RESCORE_TRIES:
            assert record == {"revision": OTHER.revision, "rm": "rm-b", "source": "hub", "status": "announced",
                              "message": f"interrupted; scoring it again failed ({run} of {release_score.RESCORE_TRIES} "
                                         f"tries): {OTHER.model}: 503 Service Unavailable; the next score-rm, reproduce "
                                         "or `prbench serve` start tries again"}
            assert said[-1] == f"the interrupted release {OTHER.model}@{OTHER.revision} stays queued: {record['message']}"
            assert [j.id for j in release_txn.dead(repo)] == [old.id]
            assert json.loads(old.path.read_text())["tries"] == run
        else:
            assert (record["status"], record["rm"]) == ("failed", "rm-b")
            assert record["message"] == f"{OTHER.model}: 503 Service Unavailable (tried {run} times)"
            assert said[-1] == (f"the interrupted release {OTHER.model}@{OTHER.revision} failed again, {run} times: "
                                f"{OTHER.model}: 503 Service Unavailable")
            assert release_txn.dead(repo) == [], "failed for good: no longer queued"
    assert release_score.recover_and_rescore(repo, _repro(repo), refused, log=said.append) == 0
    assert "rm-b" not in (repo / "params.yaml").read_text()


@pytest.mark.timeout(120)
def test_recover_goes_past_a_landed_release_to_the_next_dead_one(repo):
    """A run that committed and died, then one that died downloading (before it took the lock): the next run
    leaves the first and queues the second."""
    _dead_run(repo, OTHER, "rm-b", commit=True)
    with release_txn.Journal(repo, RELEASE, NAME, ENTRY) as downloading:
        pass
    assert [j.id for j in release_score.recover(repo, log=lambda _: None)] == [downloading.id]


@pytest.mark.timeout(120)
def test_recover_and_rescore_scores_each_dead_release_once_and_says_so(repo):
    _dead_run(repo, OTHER, "rm-b")
    said = []
    assert release_score.recover_and_rescore(repo, _repro(repo), _fetched, log=said.append) == 1
    assert _subjects(repo)[0] == release_score.subject("rm-b", OTHER) and _state(repo)[OTHER.model]["status"] == "scored"
    assert said[0].startswith(f"rolled back the unfinished release {OTHER.model}@")
    assert said[1] == f"scoring the interrupted release {OTHER.model}@{OTHER.revision} again"
    assert release_score.recover_and_rescore(repo, _repro(repo), _fetched, log=said.append) == 0


@pytest.mark.timeout(120)
def test_the_steps_run_in_order_the_download_with_the_entry_and_the_commit_on_the_release_branch(repo, monkeypatch):
    steps, fetched = [], []
    monkeypatch.setattr(release_score, "hold", lambda root, point: steps.append((root, point)))
    head = _git(repo, "rev-parse", "HEAD")
    out = release_score.score(repo, RELEASE, NAME, ENTRY, repro=_repro(repo),
                              prefetch=lambda release, entry: fetched.append((release, entry)), branch="releases",
                              log=lambda _: None)
    assert fetched == [(RELEASE, ENTRY)]
    assert steps == [(repo, p) for p in ("downloaded", "edited", "reproduced", "state-written", "committed")], \
        "on another branch nothing is staged in the checkout"
    assert _git(repo, "rev-parse", "HEAD") == head, "the checkout's branch is not moved"
    assert _git(repo, "log", "-1", "--format=%s", "releases").strip() == release_score.subject(NAME, RELEASE)
    assert out.commit == _git(repo, "rev-parse", "releases").strip()


@pytest.mark.timeout(120)
def test_a_release_waits_for_the_dvc_lock_says_for_whom_and_holds_it_under_its_name(repo):
    import threading

    said, waits, holders = [], [], []
    taken, free = threading.Event(), threading.Event()

    def reproduce():   # another run holding the repo
        with repo_lock.held(repo, "dvc", "reproduce", log=lambda _: None):
            taken.set()
            free.wait(60)

    other = threading.Thread(target=reproduce)
    other.start()
    assert taken.wait(30)

    def on_wait(who):
        waits.append(who)
        free.set()

    repro = _repro(repo)

    def observed():
        holders.append(repo_lock.holder(repo, "dvc"))
        return repro()

    out = release_score.score(repo, RELEASE, NAME, ENTRY, repro=observed, prefetch=_fetched, log=said.append,
                              on_wait=on_wait)
    other.join(30)
    where = f"score-rm {RELEASE.model}@{RELEASE.revision}"
    assert out.status == "scored"
    assert said[0].startswith(f"{where}: waiting for the dvc lock, held by reproduce (pid ")
    assert said[1] == f"{where}: got the dvc lock"
    assert waits[0]["what"] == "reproduce" and waits[-1] is None
    assert holders[0]["what"] == where, "the holder's note names the release"


@pytest.mark.timeout(120)
def test_scoring_a_release_whose_earlier_run_died_scores_it_once_here(repo):
    """The release's own dead journal is not rescored first (its work is this run's): one commit, status scored."""
    earlier = _dead_run(repo)
    said = []
    out = release_score.score(repo, RELEASE, NAME, ENTRY, repro=_repro(repo), prefetch=_fetched, log=said.append)
    assert out.status == "scored" and sum(RELEASE.revision in s for s in _subjects(repo)) == 1
    assert not earlier.path.exists() and release_txn.dead(repo) == []
    assert any(line.startswith(f"rolled back the unfinished release {RELEASE.model}@") for line in said)


@pytest.mark.timeout(120)
def test_a_rescore_keeps_the_dead_runs_branch_and_entry(repo):
    fetched = []
    old = _dead_run(repo, OTHER, "rm-b", branch="releases")
    head = _git(repo, "rev-parse", "HEAD")
    assert release_score.recover_and_rescore(repo, _repro(repo), lambda r, e: fetched.append((r, e)),
                                             log=lambda _: None) == 1
    assert fetched == [(OTHER, old.entry)]
    assert _git(repo, "rev-parse", "HEAD") == head, "committed on the dead run's branch, not the checkout's"
    assert _git(repo, "log", "-1", "--format=%s", "releases").strip() == release_score.subject("rm-b", OTHER)



@pytest.mark.timeout(120)
def test_a_dead_download_of_a_release_scored_since_is_not_committed_again(repo):
    release_score.score(repo, OTHER, "rm-b", {**ENTRY, "model": OTHER.model, "revision": OTHER.revision},
                        repro=_repro(repo), prefetch=_fetched, log=lambda _: None)
    with release_txn.Journal(repo, OTHER, "rm-b", ENTRY):   # a duplicate trigger that died downloading
        pass
    commits = _git(repo, "rev-list", "--count", "HEAD")
    assert release_score.recover_and_rescore(repo, _repro(repo), _fetched, log=lambda _: None) == 1
    assert _git(repo, "rev-list", "--count", "HEAD") == commits, "already scored: not committed again"
    assert release_txn.dead(repo) == []


@pytest.mark.timeout(120)
def test_a_rescore_whose_repro_fails_is_rolled_back_and_stays_queued(repo):
    _dead_run(repo, OTHER, "rm-b")
    said = []
    assert release_score.recover_and_rescore(repo, _repro(repo, rc=1), _fetched, log=said.append) == 1
    assert "rm-b" not in (repo / "params.yaml").read_text() and len(release_txn.dead(repo)) == 1
    assert _state(repo)[OTHER.model]["status"] == "announced"
    assert "dvc repro failed: ERROR: failed to reproduce 'score@rm-a'" in said[-1]
