"""dvc.lock grows slowly with the RMs: a per-RM stage's one DVC dep is its RM's fingerprint file (the hashes of
its shared inputs, code and params), no aggregate stage lists a per-RM file, and adding RMs adds at most 100
lock lines each (measured on a lock `dvc commit` writes, tests/lock_synth.py). The fingerprint is what keeps
`dvc repro` exact: it changes with every shared input, code file and param its stage reads."""
import copy

import pytest
import yaml

from tasks.core import codedeps, stage_table as stages
from tests.conftest import ROOT

FINGERPRINTED = [s.name for s in stages.TABLE if s.fingerprint]


def _spec() -> dict:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]


def test_score_and_bon_score_are_fingerprinted():
    assert FINGERPRINTED == ["score", "bon_score"]


def test_no_stage_outside_a_fanout_lists_a_per_rm_file():
    for name, spec in _spec().items():
        if "foreach" in spec:
            continue
        assert not [d for d in spec["deps"] if "${key}" in d or "${item" in d], f"{name}: its deps do not grow per RM"


@pytest.mark.parametrize("name", FINGERPRINTED)
def test_a_fingerprinted_stage_has_one_dep_and_no_params(name):
    do = _spec()[name]["do"]
    assert do["deps"] == [f"data/rm_inputs/{name}/${{key}}.json"] and "params" not in do
    assert _spec()[f"{name}_inputs"]["outs"] == [f"data/rm_inputs/{name}"]


@pytest.fixture
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)   # the stage runs at the project root: its code files are read there (nothing written)
    from tasks.ops.params import load_params

    return load_params(ROOT / "params.yaml")


@pytest.mark.parametrize("name", FINGERPRINTED)
def test_the_fingerprint_holds_every_declared_input_code_file_and_param(in_root, name):
    """Each file lists, with the md5 dvc.lock records for it, every data input the RM's stage declares and a dep
    covering each code file it imports, all of them deps of `<name>_inputs` in dvc.yaml; not the code only the
    fingerprint stage runs; and its RM's params."""
    from tasks.core.dvc_hash import dvc_md5
    from tasks.stages.fingerprint import fingerprints

    s = stages.get(name)
    prints = fingerprints(in_root, stages.get(f"{name}_inputs"))
    assert sorted(prints) == sorted(in_root["scoring"]["rms"])
    one = prints["random"]
    declared = {stages.resolve(d, in_root, "random", s) for d in [*s.inputs.values(), *s.deps]}
    assert declared <= set(one["files"])
    for f in codedeps.code_files(s.code, ROOT):
        assert any(f == p or f.startswith(p + "/") for p in one["files"]), f"{f} is in no fingerprinted dep"
    assert "tasks/stages/fingerprint.py" not in one["files"], "the fingerprint's own code changes no score"
    assert set(one["files"]) <= set(_spec()[f"{name}_inputs"]["deps"]), "only what dvc.lock records for the stage"
    assert one["files"] == {p: dvc_md5(ROOT / p) for p in one["files"]}
    assert one["params"] == stages.used_params(in_root, name, "random")


@pytest.mark.parametrize("name", FINGERPRINTED)
def test_adding_an_rm_changes_no_other_rms_fingerprint_and_a_shared_param_changes_all(in_root, name):
    from tasks.stages.fingerprint import fingerprints

    s = stages.get(f"{name}_inputs")
    before = fingerprints(in_root, s)
    more = copy.deepcopy(in_root)
    more["scoring"]["rms"]["random-new"] = {"kind": "random"}
    after = fingerprints(more, s)
    assert set(after) - set(before) == {"random-new"}
    assert {k: after[k] for k in before} == before
    own = copy.deepcopy(in_root)
    own["scoring"]["rms"]["random"]["seed_offset"] = 1
    changed = fingerprints(own, s)
    assert [k for k in before if changed[k] != before[k]] == ["random"], "its own entry changes its file only"
    shared = copy.deepcopy(in_root)
    shared["scale"]["chunk_size"] += 1
    assert all(fingerprints(shared, s)[k] != before[k] for k in before), "a shared param reruns every RM"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_each_added_rm_adds_at_most_100_lock_lines_and_no_aggregate_dep(tmp_path):
    from tests import lock_synth

    locks = {}
    for n in (0, 2):
        lock_synth.build(tmp_path / str(n), n)
        locks[n] = yaml.safe_load((tmp_path / str(n) / "dvc.lock").read_text(encoding="utf-8"))["stages"]
    lines = {n: lock_synth.lock_lines(tmp_path / str(n)) for n in locks}
    assert (lines[2] - lines[0]) / 2 <= 100, lines
    assert set(locks[2]) - set(locks[0]) == {f"{s}@{lock_synth.extra_name(i)}" for s in FINGERPRINTED
                                            for i in range(2)}
    for name, entry in locks[0].items():
        assert [d["path"] for d in entry.get("deps", [])] == [d["path"] for d in locks[2][name].get("deps", [])], \
            f"{name}: the same deps with two more RMs"


def test_the_stage_writes_one_file_per_rm_and_removes_a_removed_rms(in_root, tmp_path):
    import json

    from tasks.stages.fingerprint import fingerprints, run

    folder = tmp_path / "score"   # named after the stage it fingerprints
    folder.mkdir()
    (folder / "gone.json").write_text("{}")
    assert run(in_root, {}, {"fingerprints": str(folder)}) == {"keys": len(in_root["scoring"]["rms"])}
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{rm}.json" for rm in in_root["scoring"]["rms"])
    assert json.loads((folder / "random.json").read_text()) == fingerprints(in_root, stages.get("score_inputs"))["random"]


def test_a_stale_folder_in_the_fingerprints_folder_is_removed_too(in_root, tmp_path):
    from tasks.stages.fingerprint import run

    folder = tmp_path / "score"
    (folder / "old-rm").mkdir(parents=True)
    (folder / "old-rm" / "x.json").write_text("{}")
    run(in_root, {}, {"fingerprints": str(folder)})
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{rm}.json" for rm in in_root["scoring"]["rms"])


def test_the_stage_makes_its_folder_and_says_how_many_files_it_wrote(in_root, tmp_path):
    from tasks.stages.fingerprint import run, stage_summary

    folder = tmp_path / "not" / "yet" / "score"
    metrics = run(in_root, {}, {"fingerprints": str(folder)})
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{rm}.json" for rm in in_root["scoring"]["rms"])
    assert stage_summary({"fingerprints": str(folder)}, metrics) == \
        f"score_inputs: {len(in_root['scoring']['rms'])} fingerprint file(s) in {folder}"
