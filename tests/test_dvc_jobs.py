"""`prbench run --jobs N` (tasks/ops/dvc_jobs.py) writes each finished stage's lock entry where serial `dvc repro`
would have left it, whatever order the stages finish in: entries already in dvc.lock in place, new ones in
DVC's plan order."""
import copy
import functools
import random

from tasks.ops.dvc_jobs import ordered
from tests.test_lock_splice import LOCK, dvc_writes


@functools.cache
def _entries():
    from dvc.utils.serialize import loads_yaml

    return loads_yaml(LOCK)["stages"]


def _dumps(entries: dict) -> str:
    from dvc.utils.serialize import dumps_yaml

    return dumps_yaml({"schema": "2.0", "stages": entries})


def test_any_finishing_order_gives_the_serial_bytes():
    stages = _entries()
    names = list(stages)[:24]   # a DVC round trip per stage is the slow part of this test
    kept = names[: len(names) // 2]   # a lock from an earlier run, the rest new in this one
    start = _dumps({n: stages[n] for n in kept})
    plan = names[len(names) // 3:]    # reruns some kept stages (changed) and adds the new ones, in plan order
    changed = {n: {**copy.deepcopy(stages[n]), "cmd": stages[n]["cmd"] + " --changed"} for n in plan}
    serial = start
    for n in plan:                    # what dvc repro writes, one stage after another
        serial = dvc_writes(serial, {n: changed[n]})
    rank = {n: i for i, n in enumerate(kept)}
    for n in plan:
        rank.setdefault(n, len(rank))
    for seed in range(3):
        finish = list(plan)
        random.Random(seed).shuffle(finish)
        text = start
        for n in finish:
            text = ordered(text, {n: changed[n]}, rank)
        assert text == serial, f"finishing order {finish[:4]}..."


def test_a_run_that_stops_early_holds_its_finished_stages_only_each_whole():
    stages = _entries()
    names = list(stages)
    rank = {n: i for i, n in enumerate(names)}
    text = "schema: '2.0'\nstages:\n"
    for n in (names[3], names[0]):
        text = ordered(text, {n: stages[n]}, rank)
    assert text == _dumps({names[0]: stages[names[0]], names[3]: stages[names[3]]}), "plan order, each entry whole"


def test_a_lock_of_another_shape_is_left_to_dvc():
    assert ordered("stages:\n  a:\n    cmd: x\n", {"a": {"cmd": "y"}}, {"a": 0}) is None


def test_a_resumed_run_keeps_the_order_of_the_run_that_stopped():
    from tasks.ops.dvc_jobs import run_rank

    plan = ["a", "b", "c", "d"]
    first = run_rank(["x"], plan, None)
    assert sorted(first, key=first.get) == ["x", "a", "b", "c", "d"], "new stages in plan order after the lock's"
    # the first run finished a and c, not b: the lock holds x, a, c; a serial resume would append b, d after c
    again = run_rank(["x", "a", "c"], ["b", "d"], sorted(first, key=first.get))
    assert sorted(again, key=again.get) == ["x", "a", "b", "c", "d"], "the stopped run's order, as if it never stopped"
    other = run_rank(["y", "a"], ["b"], ["x", "a", "b"])
    assert sorted(other, key=other.get) == ["y", "a", "b"], "a saved order not covering the lock is not used"


def test_jobs_come_from_the_flag_else_scale_jobs_and_stages_go_to_dask_only_when_it_runs_the_chunks(capsys):
    from flows.cli import stage_engine

    scale = {"jobs": 1, "task_runner": "local", "address": None}
    assert stage_engine(scale, None) == (1, [])
    assert stage_engine({**scale, "jobs": 3}, None) == (3, [])
    assert stage_engine({**scale, "jobs": 3}, 1) == (1, []), "--jobs overrides scale.jobs"
    assert stage_engine({**scale, "task_runner": "dask"}, 2) == (2, ["--runner", "dask"])
    assert stage_engine({**scale, "task_runner": "dask", "address": "tcp://h:8786"}, 2) == (
        2, ["--runner", "dask", "--address", "tcp://h:8786"])
    assert stage_engine({**scale, "task_runner": "ray"}, 2) == (2, [])
    assert "local threads" in capsys.readouterr().out


def test_jobs_below_one_or_not_a_number_is_one_line_before_any_work():
    import subprocess
    import sys

    from tests.conftest import ROOT

    for bad in ("0", "-2", "two"):
        out = subprocess.run([sys.executable, "-m", "flows.cli", "run", "--jobs", bad], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 2 and "--jobs" in out.stderr and f"{bad!r}" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and not out.stdout
