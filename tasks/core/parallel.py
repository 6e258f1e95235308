"""CPU-bound work over a few independent items, one forked process per available CPU. For work whose result does
not depend on where or in which order it runs (each item draws from its own seeded streams): the results come back
in the items' order, the bytes a serial loop gives. Forked, so the large inputs every item reads (a stage's tables)
are inherited rather than pickled; only the items and the results cross the pipe."""
from __future__ import annotations

import os
from typing import Any, Callable

_WORK: tuple | None = None   # (function, shared inputs), set in each worker as it starts


def cpus() -> int:
    """The CPUs this process may run on (its affinity, as a container or taskset limits it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        return os.cpu_count() or 1


def _adopt(work: tuple) -> None:
    """A worker is its parent's to stop: no handler of the parent's runs in it (Prefect's SIGTERM one printed a
    traceback per worker, and could leave the pool waiting on a worker that died holding its queue's lock), and
    Ctrl-C is for the parent, which then stops the workers."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _WORK
    _WORK = work


def _call(item):
    function, shared = _WORK
    return function(item, *shared)


def map_forked(function: Callable[..., Any], items: list, *shared) -> list:
    """[function(item, *shared) for item in items], the items spread over min(len(items), cpus()) forked workers
    (in this process when that is one). An exception in a worker is raised here, as the loop would raise it."""
    workers = min(len(items), cpus())
    if workers <= 1 or not hasattr(os, "fork"):
        return [function(item, *shared) for item in items]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # not multiprocessing.Pool: a worker killed mid-item (the OOM killer, a signal) fails the call here
    # (BrokenProcessPool) instead of leaving it waiting forever
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_adopt,
                               initargs=((function, shared),))
    try:
        return list(pool.map(_call, items))
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)   # the items not started are dropped; none is left running
        raise
    finally:
        pool.shutdown(wait=True)   # done: the workers leave on their own, no signal sent
