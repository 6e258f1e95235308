"""Ctrl-C and SIGTERM under `prbench run`: every process the run started ends within seconds.

The run's children live in sessions of their own (the Prefect server, the warm server and its forks,
`dvc repro` with its stage commands), so a terminal's Ctrl-C reaches `prbench run` alone and a plain
`kill PID` is as good as Ctrl-C. On either signal `stop_tree` first hands `dvc repro`'s group the
SIGINT a terminal would send (a stage's client forwards it to its warm fork: the flow ends as a crash
Prefect records, DVC fails the stage and releases its locks), then SIGTERMs what is left of this
process's descendants, then SIGKILLs. Finished stages are in dvc.lock, so the next run resumes there.
psutil comes with DVC; its Process objects keep a reused pid from being signalled."""
from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager

import psutil

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GENTLE_S, GRACE_S, KILL_S = 4.0, 3.0, 1.0   # together under the 10 s a stopped run may take


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived; `signum` says which (the run exits 128 + it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def raising_signals():
    """Inside: each of SIGNALS raises Interrupted in the main thread (SIGTERM's default would end the
    process with no cleanup at all)."""
    def handler(signum, _frame):
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def ignoring_signals():
    """Inside: SIGNALS are ignored, so a cleanup (bounded in time) is not itself cut short."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _descendants() -> dict[int, psutil.Process]:
    try:
        return {p.pid: p for p in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return {}


def _alive(procs) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def _wait_gone(procs, seconds: float) -> list[psutil.Process]:
    deadline = time.monotonic() + seconds
    while (live := _alive(procs)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return live


def stop_tree(dvc: psutil.Process | int | None) -> int:
    """Stop every descendant of this process (see the module docstring), `dvc`'s group gently first;
    return how many were still running when asked to stop."""
    with ignoring_signals():
        seen = _descendants()   # before any dies: a fork re-parented away from its server stays known
        first = len(_alive(seen.values()))
        if dvc is not None:
            pid = dvc if isinstance(dvc, int) else dvc.pid
            try:
                os.killpg(pid, signal.SIGINT)
                _wait_gone([psutil.Process(pid)], GENTLE_S)
            except (ProcessLookupError, psutil.Error):
                pass
        for sig, wait_s in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, KILL_S)):
            seen.update(_descendants())
            live = _alive(seen.values())
            for p in live:
                try:
                    p.send_signal(sig)
                except psutil.Error:
                    pass
            if not _wait_gone(live, wait_s):
                break
    return first
