"""docs/stages.md (`score_inputs`, `bon_score_inputs`): a per-RM stage's one DVC dep is its RM's fingerprint file,
the hash dvc.lock records (DVC's md5) of every shared data and code file it declares and the params it is given. So a change of the
CONTENT of any shared input (a file, or any file inside a declared folder such as the trained RM or prompts/),
or of a code file, rewrites every RM's file, and a byte-identical rewrite rewrites none. Run in a throwaway
project folder whose declared inputs are small files written here."""
import copy
import hashlib
import os

import pytest

from tasks.core import stage_table as stages
from tests.conftest import ROOT

FINGERPRINTED = [s.name for s in stages.TABLE if s.fingerprint]


@pytest.fixture
def project(tmp_path, monkeypatch):
    from tasks.ops.params import load_params
    from tasks.stages import fingerprint

    params = load_params(ROOT / "params.yaml")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "code.py").write_text("X = 1\n")
    only = lambda modules, root=None: ["tasks/code.py"]  # noqa: E731 - the target's code: one file written here
    monkeypatch.setattr(fingerprint.codedeps, "code_files", only)
    monkeypatch.setattr(fingerprint.dag, "code_files", only)
    return tmp_path, params


def _declared(params, s, key="random"):
    return sorted({p for p in (stages.resolve(d, params, key, s) for d in [*s.inputs.values(), *s.deps]) if p})


def _fill(root, paths):
    for i, p in enumerate(paths):
        target = root / p
        if p in ("prompts",) or p.endswith(("bradley-terry", "/")) or "." not in os.path.basename(p):
            (target / "sub").mkdir(parents=True, exist_ok=True)
            (target / "sub" / "weights.bin").write_bytes(b"w" * (i + 1))
            (target / "config.json").write_text("{}")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f"file {i}".encode())


@pytest.mark.parametrize("name", FINGERPRINTED)
def test_each_shared_inputs_content_reaches_every_rms_fingerprint(project, name):
    from tasks.stages.fingerprint import fingerprints as made

    root, params = project
    s = stages.get(name)
    fingerprints = lambda p, _: made(p, stages.get(f"{name}_inputs"))  # noqa: E731
    paths = _declared(params, s)
    assert any((root / p).suffix == "" for p in paths), "the stage declares a folder (the trained RM, prompts/)"
    _fill(root, paths)
    before = fingerprints(params, s)
    for p in paths:
        f = root / p
        if f.is_file():
            assert before["random"]["files"][p] == hashlib.md5(f.read_bytes()).hexdigest(), "a file: its bytes' md5"
    assert any(p == "tasks" or p == "tasks/code.py" for p in before["random"]["files"]), "the target's code is in it"
    for p in paths:
        f = root / p
        inner = f / "sub" / "weights.bin" if f.is_dir() else f
        old = inner.read_bytes()
        inner.write_bytes(old + b"!")
        changed = fingerprints(params, s)
        assert all(changed[k] != before[k] for k in before), f"{p}: its content changed, every RM reruns"
        inner.write_bytes(old[:-1] + bytes([old[-1] ^ 1]) + b"")   # same size, another byte
        assert all(fingerprints(params, s)[k] != before[k] for k in before), f"{p}: same size, other bytes"
        inner.write_bytes(old)
        assert fingerprints(params, s) == before, f"{p}: the same bytes again, nothing reruns"
    folder = next(root / p for p in paths if (root / p).is_dir())
    (folder / "added.txt").write_text("new")
    assert all(fingerprints(params, s)[k] != before[k] for k in before), "a file added to a declared folder"
    (folder / "added.txt").unlink()
    (root / "tasks" / "code.py").write_text("X = 2\n")
    assert all(fingerprints(params, s)[k] != before[k] for k in before), "a code file's content"


@pytest.mark.parametrize("name", FINGERPRINTED)
def test_a_missing_input_is_absent_and_its_arrival_reruns_every_rm(project, name):
    from tasks.stages.fingerprint import fingerprints as made

    root, params = project
    s = stages.get(name)
    fingerprints = lambda p, _: made(p, stages.get(f"{name}_inputs"))  # noqa: E731
    paths = _declared(params, s)
    gone = next(p for p in paths if "." in os.path.basename(p))
    _fill(root, [p for p in paths if p != gone])
    before = fingerprints(params, s)
    assert before["random"]["files"][gone] == "absent"
    _fill(root, [gone])
    assert all(fingerprints(params, s)[k] != before[k] for k in before)


@pytest.mark.parametrize("name", FINGERPRINTED)
def test_an_rms_own_entry_reaches_its_file_only_and_another_rms_entry_is_not_in_it(project, name):
    from tasks.stages.fingerprint import fingerprints as made

    root, params = project
    s = stages.get(name)
    fingerprints = lambda p, _: made(p, stages.get(f"{name}_inputs"))  # noqa: E731
    _fill(root, _declared(params, s))
    before = fingerprints(params, s)
    assert before["random"]["params"]["scoring"]["rms"] == {"random": params["scoring"]["rms"]["random"]}
    other = copy.deepcopy(params)
    other["scoring"]["rms"]["length-longer"] = {**other["scoring"]["rms"]["length-longer"], "per_domain_limit": 1}
    after = fingerprints(other, s)
    assert [k for k in before if after[k] != before[k]] == ["length-longer"]
