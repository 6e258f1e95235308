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
