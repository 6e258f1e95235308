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

    with multiprocessing.get_context("fork").Pool(workers, initializer=_adopt, initargs=((function, shared),)) as pool:
        return pool.map(_call, items, chunksize=1)
