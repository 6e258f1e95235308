"""Locks the served runs take, held as flock(2) on files in the repo's git dir: the kernel drops a
lock the moment its process dies (kill -9 included), so a crashed run never keeps the slot, and the
files never show in `git status`.

- `dvc`: one run at a time changes the repo (score-rm, reproduce); DVC holds one lock per repo.
- `watch`: one watcher run at a time, so a release is announced once however the watcher is started.

The holder writes who it is next to the lock; a run that has to wait says so, naming the holder."""
from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

from tasks.ops.gitops import git


def state_dir(root) -> Path:
    """<git dir>/prbench: journals, locks and holders; never part of a commit or of `git status`."""
    d = Path(git(root, "rev-parse", "--absolute-git-dir").strip()) / "prbench"
    d.mkdir(parents=True, exist_ok=True)
    return d


def holder(root, name: str) -> dict | None:
    """Who holds lock `name` now (None when nobody does: a dead holder's note is stale)."""
    path = state_dir(root) / f"{name}.lock"
    if not path.exists():
        return None
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            try:
                return json.loads(fh.read() or "{}")
            except ValueError:
                return {}
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None


def describe(who: dict | None) -> str:
    if not who:
        return "another run"
    run = f", flow run {who['flow_run']}" if who.get("flow_run") else ""
    return f"{who.get('what', 'a run')} (pid {who.get('pid')}{run}, since {who.get('since', '?')})"


@contextmanager
def held(root, name: str, what: str, log=print, on_wait=None, poll_s: float = 1.0):
    """Hold lock `name` for the block. When another run holds it, log once who that is and call
    `on_wait(holder)` (a run's state: waiting), then block until it is free (then `on_wait(None)`)."""
    from datetime import datetime, timezone

    path = state_dir(root) / f"{name}.lock"
    fh = open(path, "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = holder(root, name)
            log(f"{what}: waiting for the {name} lock, held by {describe(who)}")
            _note_waiter(root, name, what, who)
            if on_wait:
                on_wait(who)
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(poll_s)
            _drop_waiter(root, name)
            log(f"{what}: got the {name} lock")
            if on_wait:
                on_wait(None)
        from prefect.runtime import flow_run

        try:
            run_id = flow_run.id
        except Exception:   # outside a flow run
            run_id = None
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"what": what, "pid": os.getpid(), "flow_run": run_id,
                             "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}))
        fh.flush()
        yield
    finally:
        fh.close()   # closing the file drops the lock


def _waiter_path(root, name: str) -> Path:
    return state_dir(root) / "waiting" / f"{name}.{os.getpid()}.json"


def _note_waiter(root, name, what, who) -> None:
    path = _waiter_path(root, name)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"what": what, "pid": os.getpid(), "for": who}))


def _drop_waiter(root, name) -> None:
    _waiter_path(root, name).unlink(missing_ok=True)


def waiters(root) -> list[dict]:
    """Runs waiting for a lock now (a dead waiter's note is skipped)."""
    out = []
    for p in sorted((state_dir(root) / "waiting").glob("*.json")):
        try:
            note = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(int(note["pid"]), 0)
        except (ProcessLookupError, KeyError, ValueError):
            p.unlink(missing_ok=True)
            continue
        out.append(note)
    return out


def dvc_lock_problem(root) -> str | None:
    """One line when another DVC process holds the project's lock (.dvc/tmp/lock: zc.lockfile, an flock(2) the kernel
    drops with its process), so `prbench run` says so before a server starts instead of DVC after; None when free."""
    path = Path(root) / ".dvc" / "tmp" / "lock"
    if not path.is_file():
        return None
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            who = fh.read().strip()   # zc.lockfile writes " <pid>\n" (and a host name with content_template)
            return (f".dvc/tmp/lock: another dvc process{f' (pid {who.split()[0]})' if who else ''} holds this project's lock "
                    "(a `prbench run`, `dvc repro` or `dvc exp run`); wait for it to end, or stop it")
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None
