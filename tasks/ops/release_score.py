"""score-rm's steps, in the order that keeps the repo all-or-nothing (the Prefect flow in
flows/deploy.py is a thin wrapper; tests drive this directly and SIGKILL it at each step):

1. a journal (tasks/ops/release_txn.py) before anything, so a crash anywhere is found later;
2. every file of the release downloaded and the RM built from them (no repo change yet);
3. the dvc lock (one run at a time changes the repo; a waiting run says for whom);
4. dead runs' journals rolled back and their releases scored (one already committed is not scored
   again; one whose rescore fails stays queued for the next run);
5. snapshot, params edit, `dvc repro`, registered.json "scored", one commit, journal removed.

A failure at 2 or 5 fails with one line and leaves the repo as it was."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tasks.ops import gitops, release_txn, releases, repo_lock
from tasks.core.errors import ConfigError
from tasks.core.params_edit import set_rm

PARAMS = "params.yaml"
STATE = release_txn.STATE


def hold(root, point: str) -> None:
    """Step `point` is reached. Nothing to do: the crash tests replace this in their driver process
    (tests/test_release_crash.py) to stop here and be killed."""


class ReleaseFailed(Exception):
    pass


@dataclass
class Outcome:
    rm: str
    status: str                 # scored | already scored
    ran: list = field(default_factory=list)
    committed: list = field(default_factory=list)
    commit: str | None = None


def subject(name: str, release: releases.Release) -> str:
    return f"score-rm: add {name} = {release.model}@{release.revision}"


def already_scored(root, name: str, release: releases.Release) -> bool:
    import yaml

    entry = ((yaml.safe_load((Path(root) / PARAMS).read_text()) or {}).get("scoring", {}).get("rms") or {}).get(name) or {}
    record = releases.load_state(Path(root) / STATE)["models"].get(release.model) or {}
    return (entry.get("model") == release.model and entry.get("revision") == release.revision
            and record.get("revision") == release.revision and record.get("status") == "scored")


def recover(root, log=print, skip: releases.Release | None = None) -> list[release_txn.Journal]:
    """Roll back every dead run's unfinished release (caller holds the dvc lock); return those
    still to be scored (their commit did not land), except `skip` (the caller scores it anyway)."""
    todo = []
    for j in release_txn.dead(root):
        if release_txn.rollback(root, j, log) == "landed":
            log(f"the release {j.release.model}@{j.release.revision} was committed before its run died")
            continue
        if skip is not None and (j.release.model, j.release.revision) == (skip.model, skip.revision):
            j.done()
            continue
        todo.append(j)
    return todo


def recover_and_rescore(root, repro, prefetch, log=print) -> int:
    """For a run that holds the dvc lock before it changes the repo (reproduce): dead runs' releases
    rolled back and scored once. Returns how many."""
    todo = recover(root, log)
    for j in todo:
        _rescore(Path(root), j, repro, prefetch, log)
    return len(todo)


def score(root, release: releases.Release, name: str, entry: dict, *, repro, prefetch, branch=None,
          log=print, on_wait=None) -> Outcome:
    """One release, all or nothing. `prefetch(release, entry)` raises ConfigError when the release
    cannot be used; `repro()` returns a tasks.ops.repro.DvcResult."""
    root = Path(root)
    where = f"score-rm {release.model}@{release.revision}"
    with release_txn.Journal(root, release, name, entry, branch) as j:
        try:
            prefetch(release, entry)
        except ConfigError as exc:
            j.done()
            raise ReleaseFailed(f"score-rm {exc}") from None
        hold(root, "downloaded")
        with repo_lock.held(root, "dvc", where, log=log, on_wait=on_wait):
            for other in recover(root, log, skip=release):
                _rescore(root, other, repro, prefetch, log)
            if already_scored(root, name, release):
                j.done()
                log(f"{where}: already scored and committed; nothing to do")
                return Outcome(name, "already scored")
            return _transaction(root, j, repro, log)


RESCORE_TRIES = 3   # runs that try an interrupted release again before it counts as failed


def _rescore(root, old: release_txn.Journal, repro, prefetch, log) -> None:
    """A dead run's release, scored once under a journal of its own; the old (rolled back) journal
    is dropped once that is done. If it fails -- right after a crash DVC may still see the dead
    run's dvc -- the old journal stays: the release stays queued, its record says why, and the
    next run tries again, RESCORE_TRIES runs in all; then it counts as failed."""
    where = f"{old.release.model}@{old.release.revision}"
    log(f"scoring the interrupted release {where} again")
    try:
        with release_txn.Journal(root, old.release, old.name, old.entry, old.branch) as j:
            try:
                prefetch(old.release, old.entry)
                if not already_scored(root, old.name, old.release):
                    _transaction(root, j, repro, log)
            except (ConfigError, ReleaseFailed):
                j.done()
                raise
            except BaseException:   # this run stopped: j, rolled back, is the one left to score
                old.done()
                raise
            j.done()
    except (ConfigError, ReleaseFailed) as exc:
        tries = old.data.get("tries", 0) + 1
        if tries >= RESCORE_TRIES:
            old.done()
            releases.update_state(root / STATE, old.release, old.name, "failed", f"{exc} (tried {tries} times)")
            log(f"the interrupted release {where} failed again, {tries} times: {exc}")
            return
        old.save(tries=tries)
        why = (f"interrupted; scoring it again failed ({tries} of {RESCORE_TRIES} tries): {exc}; the next "
               "score-rm, reproduce or `prbench serve` start tries again")
        releases.update_state(root / STATE, old.release, old.name, "announced", why)
        log(f"the interrupted release {where} stays queued: {why}")
        return
    old.done()


def _transaction(root: Path, j: release_txn.Journal, repro, log) -> Outcome:
    """The repo change; stopped midway (SIGTERM from a stopping serve: Prefect's TerminationSignal,
    Ctrl-C), it is rolled back before the exception leaves, and the journal kept to score it again."""
    j.prepare()
    try:
        return _change(root, j, repro, log)
    except ReleaseFailed:
        raise
    except BaseException:
        release_txn.rollback(root, j, log)   # keeps the commit when it landed already
        raise


def _change(root: Path, j: release_txn.Journal, repro, log) -> Outcome:
    release, name, entry = j.release, j.name, j.entry
    where = f"score-rm {release.model}@{release.revision}"
    before = j.data["before"]
    try:
        set_rm(root / PARAMS, name, entry, comment=f"released {release.model}, added by score-rm")
    except ConfigError as exc:
        release_txn.rollback(root, j, log)
        j.done()
        raise ReleaseFailed(f"{where}: {exc}") from None
    hold(root, "edited")
    result = repro()
    if result.rc != 0:
        release_txn.rollback(root, j, log)
        j.done()
        raise ReleaseFailed(f"{where}: dvc repro failed: {result.error()}")
    hold(root, "reproduced")
    j.save(phase="commit")
    releases.update_state(root / STATE, release, name, "scored")
    hold(root, "state-written")
    paths = gitops.changed(root, before)
    if STATE not in paths and gitops.dirty(root, STATE):   # the watcher's record of this release
        paths.append(STATE)
    sha = _commit(root, sorted(paths), j.message(subject(name, release)), j.branch)
    hold(root, "committed")
    j.done()
    return Outcome(name, "scored", result.ran, sorted(paths), sha)


def _commit(root: Path, paths: list[str], message: str, branch) -> str:
    if branch is None or branch == gitops.current_branch(root):
        gitops.git(root, "add", "-A", "--", *paths)
        hold(root, "staged")
    return gitops.commit(root, paths, message, branch)
