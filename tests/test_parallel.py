"""tasks/core/parallel.py: work spread over forked workers comes back as a loop in this process would give it."""
import os

import pytest

from tasks.core import parallel
from tasks.core.errors import ConfigError


def _square_plus(item, offset):
    return item * item + offset, os.getpid()


def _fails_at_three(item):
    if item == 3:
        raise ConfigError(f"item {item}: refused")
    return item


def test_results_come_back_in_the_items_order_from_other_processes(monkeypatch):
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    got = parallel.map_forked(_square_plus, list(range(7)), 10)
    assert [value for value, _ in got] == [i * i + 10 for i in range(7)]
    assert os.getpid() not in {pid for _, pid in got}, "computed in the workers"


def test_one_cpu_or_one_item_runs_here(monkeypatch):
    monkeypatch.setattr(parallel, "cpus", lambda: 1)
    assert {pid for _, pid in parallel.map_forked(_square_plus, [1, 2, 3], 0)} == {os.getpid()}
    monkeypatch.setattr(parallel, "cpus", lambda: 4)
    assert parallel.map_forked(_square_plus, [5], 1) == [(26, os.getpid())]
    assert parallel.map_forked(_square_plus, [], 1) == []


def test_a_workers_error_is_raised_here_as_itself(monkeypatch):
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    with pytest.raises(ConfigError, match="^item 3: refused$"):
        parallel.map_forked(_fails_at_three, [1, 2, 3, 4])


def test_cpus_is_this_process_affinity():
    assert parallel.cpus() == len(os.sched_getaffinity(0)) >= 1


def test_without_affinity_cpus_is_the_cpu_count_and_at_least_one(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity")   # not Linux
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert parallel.cpus() == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)   # undetermined
    assert parallel.cpus() == 1


def test_workers_carry_none_of_the_parents_signal_handlers():
    """Under a Prefect flow the stage process has a SIGTERM handler that raises: the workers must not run it (each
    printed its traceback when the pool stopped them, and a worker stopped holding its queue's lock hung the pool).
    Twenty pools, done and failed, under such a handler: nothing on stderr, no hang."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = """
import signal
from tasks.core import parallel
from tasks.core.errors import ConfigError
from tests.test_parallel import _fails_at_three, _square_plus
class Terminated(BaseException):
    pass
def raising(*_):
    raise Terminated()
signal.signal(signal.SIGTERM, raising)
parallel.cpus = lambda: 2
for _ in range(10):
    assert [v for v, _ in parallel.map_forked(_square_plus, list(range(6)), 0)] == [i * i for i in range(6)]
    try:
        parallel.map_forked(_fails_at_three, [1, 2, 3, 4, 5, 6])
    except ConfigError:
        pass
print("done")
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr[-3000:]
    assert proc.stderr == "", proc.stderr[-3000:]


def _dies_at_two(item):
    if item == 2:
        os.kill(os.getpid(), 9)
    return item


def test_a_worker_killed_mid_item_fails_the_call_instead_of_hanging(monkeypatch):
    from concurrent.futures.process import BrokenProcessPool

    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    with pytest.raises(BrokenProcessPool):
        parallel.map_forked(_dies_at_two, [1, 2, 3, 4])


def test_one_worker_per_item_up_to_the_cpus_never_more(monkeypatch):
    """min(items, cpus()) forks, whatever os.cpu_count() says (a 64-core host's count is not this process's share)."""
    forks, real_fork = [], os.fork

    def counted():
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    assert [v for v, _ in parallel.map_forked(_square_plus, [1, 2, 3, 4, 5], 0)] == [1, 4, 9, 16, 25]
    assert len(forks) == 2, "two CPUs: two workers"
    forks.clear()
    monkeypatch.setattr(parallel, "cpus", lambda: 6)
    parallel.map_forked(_square_plus, [1, 2, 3], 0)
    assert len(forks) == 3, "three items: three workers"


def _plus(item, add):
    return add(item)


def test_the_workers_are_forked_whatever_the_default_start_method(monkeypatch):
    """The shared inputs are inherited, never pickled: a lambda (unpicklable) reaches the workers even where the
    default start method is spawn (macOS; forkserver from Python 3.14 on Linux)."""
    import multiprocessing

    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    try:
        assert [v for v in parallel.map_forked(_plus, [1, 2, 3], lambda x: x + 10)] == [11, 12, 13]
    finally:
        multiprocessing.set_start_method(before, force=True)


def _refuse_first(item, folder):
    if item == 0:
        raise ConfigError("item 0: refused")
    import time

    time.sleep(0.2)
    (folder / str(item)).touch()
    return item


def test_an_error_drops_the_items_not_started_and_leaves_no_worker_running(monkeypatch, tmp_path):
    import multiprocessing

    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    with pytest.raises(ConfigError, match="^item 0: refused$"):
        parallel.map_forked(_refuse_first, list(range(20)), tmp_path)
    assert multiprocessing.active_children() == [], "every worker has left when the error is raised"
    assert len(list(tmp_path.iterdir())) < 19, "the items queued behind the error never ran"


def test_no_worker_outlives_a_finished_call(monkeypatch):
    import multiprocessing

    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    for _ in range(3):
        parallel.map_forked(_square_plus, list(range(6)), 0)
        assert multiprocessing.active_children() == [], "the call returns once its workers have left"
