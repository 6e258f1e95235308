"""`prbench run` writes dvc.lock one stage entry at a time (tasks/ops/lock_splice.py) instead of DVC's
whole-file YAML round trip per stage; the bytes must be those plain `dvc repro` writes."""
import copy
import os
import subprocess
import sys

import pytest

from tasks.ops.lock_splice import splice
from tests.conftest import ROOT

LOCK = (ROOT / "dvc.lock").read_text()


def dvc_writes(text: str, entries: dict) -> str:
    """What DVC's Lockfile.dump_stages writes: a round-trip parse, dict update, whole dump."""
    from dvc.utils.serialize import dumps_yaml, parse_yaml_for_update

    data = parse_yaml_for_update(text, "dvc.lock")
    data["stages"].update(copy.deepcopy(entries))
    return dumps_yaml(data)


def test_a_changed_entry_first_middle_last_or_new_gives_dvcs_bytes():
    from dvc.utils.serialize import loads_yaml

    stages = loads_yaml(LOCK)["stages"]   # YAML 1.2 as DVC reads it (5e-05 a float)
    names = list(stages)
    for name in (names[0], names[len(names) // 2], names[-1], "score@an-rm-added-now"):
        entry = copy.deepcopy(stages.get(name, stages[names[1]]))
        entry["cmd"] += " --changed"
        entry.setdefault("params", {})["params.yaml"] = {"a.long.key": "x " * 60, "b": [1, 2.5, None, True]}
        assert splice(LOCK, {name: entry}) == dvc_writes(LOCK, {name: entry}), name
    assert splice(LOCK, stages) == LOCK, "rewriting every entry unchanged keeps the file byte for byte"


def test_a_lock_of_another_shape_is_left_to_dvc():
    assert splice("schema: '2.0'\nstages:\n  a:\n    cmd: x\ndatasets:\n- name: d\n", {"a": {"cmd": "y"}}) is None
    assert splice("stages:\n  a:\n    cmd: x\n", {"a": {"cmd": "y"}}) is None, "no schema line: DVC's own code"
    assert splice("schema: '2.0'\nstages:\n  # a comment\n  a:\n    cmd: x\n", {"a": {"cmd": "y"}}) is None


DVC_YAML = """stages:
  one:
    cmd: python -c "open('one.txt','w').write(open('in.txt').read().upper())"
    deps: [in.txt]
    outs: [one.txt]
  two:
    foreach: [a, b]
    do:
      cmd: python -c "open('two-${item}.txt','w').write(open('one.txt').read() + '${item}')"
      deps: [one.txt]
      outs: ['two-${item}.txt']
"""


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_prbench_runs_dvc_to_the_same_lock_as_plain_dvc_repro(tmp_path):
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(ROOT)}
    env.pop("PRBENCH_WARM", None)
    bindir = os.path.dirname(sys.executable)
    how = {"plain": [os.path.join(bindir, "dvc")], "prbench": [sys.executable, "-m", "tasks.ops.dvc_cli"]}
    for name in how:
        repo = tmp_path / name
        repo.mkdir()
        (repo / "dvc.yaml").write_text(DVC_YAML)
        (repo / "in.txt").write_text("hello\n")
        subprocess.run([*how[name], "init", "--no-scm", "-q"], cwd=repo, env=env, check=True)
    for edit in ("first run", "hello again\n"):
        for name, cmd in how.items():
            if edit != "first run":
                (tmp_path / name / "in.txt").write_text(edit)
            subprocess.run([*cmd, "repro", "-q"], cwd=tmp_path / name, env=env, check=True, capture_output=True)
        plain, ours = ((tmp_path / n / "dvc.lock").read_text() for n in how)
        assert ours == plain and "two@b" in ours, edit
    assert not list((tmp_path / "prbench").glob(".*dvc.lock*")), "no temp file left beside the lock"
