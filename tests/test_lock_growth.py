"""dvc.lock grows slowly with the RMs: a per-RM stage's one DVC dep is its RM's fingerprint file (the hashes of
its shared inputs, code and params), no aggregate stage lists a per-RM file, and adding RMs adds at most 100
lock lines each (measured on a lock `dvc commit` writes, tests/lock_synth.py). The fingerprint is what keeps
`dvc repro` exact: it changes with every shared input, code file and param its stage reads."""
import copy
from pathlib import Path

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
    from tasks.stages.fingerprint import fingerprints

    s = stages.get(name)
    prints = fingerprints(in_root, s)
    assert sorted(prints) == sorted(in_root["scoring"]["rms"])
    one = prints["random"]
    declared = {stages.resolve(d, in_root, "random", s) for d in [*s.inputs.values(), *s.deps]}
    assert set(one["files"]) == declared | set(codedeps.code_files(s.code, ROOT))
    assert one["params"] == stages.used_params(in_root, name, "random")


@pytest.mark.parametrize("name", FINGERPRINTED)
def test_adding_an_rm_changes_no_other_rms_fingerprint_and_a_shared_param_changes_all(in_root, name):
    from tasks.stages.fingerprint import fingerprints

    s = stages.get(name)
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
    assert json.loads((folder / "random.json").read_text()) == fingerprints(in_root, stages.get("score"))["random"]


def test_a_file_is_fingerprinted_by_its_content_a_folder_by_its_tree_and_a_missing_one_as_absent(tmp_path):
    from tasks.core.artifacts import file_hash, tree_hash
    from tasks.stages.fingerprint import _hash

    (tmp_path / "f.txt").write_text("one")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.txt").write_text("two")
    assert _hash(str(tmp_path / "f.txt")) == file_hash(tmp_path / "f.txt")
    assert _hash(str(tmp_path / "d")) == tree_hash([tmp_path / "d"]) != file_hash(tmp_path / "d" / "x.txt")
    assert _hash(str(tmp_path / "none.txt")) == "absent"
    before = _hash(str(tmp_path / "d"))
    (tmp_path / "d" / "x.txt").write_text("three")
    assert _hash(str(tmp_path / "d")) != before, "a file changed inside a folder changes the folder's hash"


def test_a_shared_input_file_changed_changes_every_rms_fingerprint(in_root, tmp_path, monkeypatch):
    """The files' hashes, not only their names: a shared input's new content reruns every RM, and the same content
    gives the same fingerprints."""
    import shutil

    from tasks.stages.fingerprint import fingerprints

    s = stages.get("score")
    shared = sorted({p for d in [*s.inputs.values(), *s.deps] if (p := stages.resolve(d, in_root, "random", s))
                     and "random" not in p})
    shutil.copytree(ROOT / "tasks", tmp_path / "tasks")   # the code files are read where the stage runs
    for p in shared:
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text("v1")
    monkeypatch.chdir(tmp_path)
    before = fingerprints(in_root, s)
    assert fingerprints(in_root, s) == before and before["random"]["files"][shared[0]] != "absent"
    (tmp_path / shared[0]).write_text("v2")
    after = fingerprints(in_root, s)
    assert all(after[k]["files"][shared[0]] != before[k]["files"][shared[0]] for k in before)
    assert all({f: h for f, h in after[k]["files"].items() if f != shared[0]} ==
               {f: h for f, h in before[k]["files"].items() if f != shared[0]} for k in before)


def test_a_stale_folder_in_the_fingerprints_folder_is_removed_too(in_root, tmp_path):
    from tasks.stages.fingerprint import run

    folder = tmp_path / "score"
    (folder / "old-rm").mkdir(parents=True)
    (folder / "old-rm" / "x.json").write_text("{}")
    run(in_root, {}, {"fingerprints": str(folder)})
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{rm}.json" for rm in in_root["scoring"]["rms"])


def test_a_dep_naming_a_param_or_the_rms_own_entry_and_the_code_are_hashed_where_the_stage_runs(in_root, tmp_path,
                                                                                                  monkeypatch):
    """`${group.key}` is the path params name, `${item.x}` the RM's own entry's field (each RM its own file), and the
    code files are the ones in the folder the stage runs in: each file and code change shows in the fingerprints."""
    import dataclasses
    import shutil

    from tasks.core.artifacts import file_hash, tree_hash
    from tasks.stages.fingerprint import fingerprints

    s = dataclasses.replace(stages.get("score"), inputs={}, deps=("${common.cache_dir}", "${item.model}"))
    params = copy.deepcopy(in_root)
    params["common"]["cache_dir"] = "shared-cache"
    params["scoring"]["rms"] = {"a": {"kind": "seq-cls", "model": "models/a"}, "b": {"kind": "seq-cls", "model": "models/b"}}
    shutil.copytree(ROOT / "tasks", tmp_path / "tasks")
    for p in ("shared-cache/x.json", "models/a/w.bin", "models/b/w.bin"):
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text(p)
    code = "tasks/stages/score.py"
    (tmp_path / code).write_text((tmp_path / code).read_text() + "\n# edited here\n")
    monkeypatch.chdir(tmp_path)
    prints = fingerprints(params, s)
    for rm in ("a", "b"):
        files = prints[rm]["files"]
        assert files["shared-cache"] == tree_hash([Path("shared-cache")])
        assert files[f"models/{rm}"] == tree_hash([Path(f"models/{rm}")]) and f"models/{'ab'.replace(rm, '')}" not in files
        assert files[code] == file_hash(tmp_path / code) != file_hash(ROOT / code), "the code as it is here"
        assert (prints[rm]["stage"], prints[rm]["key"]) == ("score", rm), "each file says what it stands for"


def test_the_stage_makes_its_folder_and_says_how_many_files_it_wrote(in_root, tmp_path):
    from tasks.stages.fingerprint import run, stage_summary

    folder = tmp_path / "not" / "yet" / "score"
    metrics = run(in_root, {}, {"fingerprints": str(folder)})
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{rm}.json" for rm in in_root["scoring"]["rms"])
    assert stage_summary({"fingerprints": str(folder)}, metrics) == \
        f"score_inputs: {len(in_root['scoring']['rms'])} fingerprint file(s) in {folder}"
