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
