"""docs/releases.md, "When a release run fails or dies": which commit counts as landed (this release's own token,
on its branch, even with later commits on top), what counts as already scored (params pin the model AT that
revision and its record says `scored` at it), which dead run a start may drop (the very release it scores
anyway, not another revision of the model), and how often an interrupted release is tried again (3 runs in all,
then `failed`). In process, on a small git repo (tests/test_rules_release.py's fixture)."""
from __future__ import annotations

import json

import pytest

from tasks.core.errors import ConfigError
from tasks.ops import release_score, release_txn, releases
from tests.test_rules_release import RELEASE, _git, repo  # noqa: F401 - the fixture

OTHER = releases.Release(model="acme/rm-a", revision="b" * 40, source="hub")


def _dead(repo, release, name="rm-a"):
    with release_txn.Journal(repo, release, name, {"kind": "seq-cls"}) as j:
        pass   # the run died while downloading: its journal stays, its lock is free
    return j


def test_the_release_counts_as_landed_under_later_commits_and_another_releases_token_does_not(repo):
    j = release_txn.Journal(repo, RELEASE, "rm-a", {})
    _git(repo, "commit", "-q", "--allow-empty", "-m", j.message("score-rm: add rm-a"))
    _git(repo, "commit", "-q", "--allow-empty", "-m", "reproduce: the scheduled rerun after it")
    assert release_txn.landed(repo, j), "its commit is in, under a later one"
    other = release_txn.Journal(repo, OTHER, "rm-a", {})
    assert not release_txn.landed(repo, other), "another release's token is not this one's"


def _write(repo, entry_revision, record):
    (repo / "params.yaml").write_text("scoring:\n  rms:\n    rm-a: {kind: seq-cls, model: acme/rm-a, revision: "
                                      f"'{entry_revision}'}}\n")
    state = repo / release_txn.STATE
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"models": {"acme/rm-a": record}}))


def test_already_scored_needs_the_pinned_revision_and_a_scored_record_at_it(repo):
    scored = {"revision": RELEASE.revision, "rm": "rm-a", "status": "scored"}
    _write(repo, RELEASE.revision, scored)
    assert release_score.already_scored(repo, "rm-a", RELEASE)
    _write(repo, RELEASE.revision, {**scored, "status": "announced"})
    assert not release_score.already_scored(repo, "rm-a", RELEASE), "announced by the watcher, not scored"
    _write(repo, OTHER.revision, scored)
    assert not release_score.already_scored(repo, "rm-a", RELEASE), "params pin another revision"
    _write(repo, RELEASE.revision, {**scored, "revision": OTHER.revision})
    assert not release_score.already_scored(repo, "rm-a", RELEASE), "the record is of another revision"


def test_a_start_drops_only_the_dead_run_of_the_release_it_scores(repo):
    a, b = _dead(repo, RELEASE), _dead(repo, OTHER)
    todo = release_score.recover(repo, log=lambda line: None, skip=OTHER)
    assert [j.id for j in todo] == [a.id], "the other revision is still to be scored"
    assert not b.path.exists() and a.path.exists()


def test_an_interrupted_release_is_tried_again_three_runs_in_all_then_failed(repo):
    _dead(repo, RELEASE)
    said = []

    def prefetch(release, entry):
        raise ConfigError(f"{release.model}@{release.revision[:7]}: weights 404")

    def state():
        return releases.load_state(repo / release_txn.STATE)["models"][RELEASE.model]

    for run in (1, 2):
        (old,) = release_txn.dead(repo)
        release_score._rescore(repo, old, repro=None, prefetch=prefetch, log=said.append)
        assert state()["status"] == "announced" and f"({run} of 3 tries)" in state()["message"]
        assert [j.data["tries"] for j in release_txn.dead(repo)] == [run], "still queued for the next run"
    (old,) = release_txn.dead(repo)
    release_score._rescore(repo, old, repro=None, prefetch=prefetch, log=said.append)
    assert state()["status"] == "failed" and "(tried 3 times)" in state()["message"]
    assert release_txn.dead(repo) == [], "not tried a fourth time"


@pytest.mark.parametrize("tries", [0, 1])
def test_a_rescore_that_fails_before_the_last_try_keeps_the_release_queued(repo, tries):
    j = _dead(repo, RELEASE)
    j.data["tries"] = tries
    j.save()
    (old,) = release_txn.dead(repo)

    def prefetch(release, entry):
        raise ConfigError("down")

    release_score._rescore(repo, old, repro=None, prefetch=prefetch, log=lambda line: None)
    assert [d.data["tries"] for d in release_txn.dead(repo)] == [tries + 1]
