"""One declaration per stage: dvc.yaml is what the stage table generates, every module a stage
imports (directly or not, also inside a function, or by the name its entry gives) is one of its dvc
deps and no other stage's logic is, the Prefect cache key hashes the same code, the table's order is
a valid run order, and a stage reads exactly the params it declares."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks.core import codedeps, dag, stage_table as stages
from tasks.core.artifacts import tree_hash
from tests.conftest import ROOT


def test_committed_dvc_yaml_is_what_the_table_generates():
    assert dag.check() is None, "run `prbench dag --write` and commit dvc.yaml"


def _declared(stage: str) -> list[str]:
    """A stage's dvc.yaml deps; a `fingerprint` stage's are its RM's file of `<stage>_inputs`, which hashes
    that stage's deps: those count as its own."""
    specs = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    deps = (specs[stage].get("do") or specs[stage])["deps"]
    if stages.STAGES[stage].fingerprint:
        assert deps == [f"data/rm_inputs/{stage}/${{key}}.json"], "one dep: its RM's fingerprint file"
        return [*deps, *specs[f"{stage}_inputs"]["deps"]]
    return deps


def _covered(path: str, deps: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)


@pytest.mark.parametrize("stage", stages.ORDER)
def test_every_file_a_stage_runs_is_a_dvc_dep(stage):
    deps = _declared(stage)
    s = stages.STAGES[stage]
    files = codedeps.code_files(s.code)
    logic = s.run.partition(":")[0].replace(".", "/")
    assert {"flows/stage.py", "flows/common.py"} <= set(files)
    assert f"{logic}.py" in files or f"{logic}/__init__.py" in files
    assert [f for f in files if not _covered(f, deps)] == []


def test_the_generic_flow_brings_no_stage_logic():
    """Every stage's code includes the generic flow's: were it to import stages, every stage would depend
    on all of them. The runner and the UI tables are the code of the stages that declare them only."""
    flow = codedeps.code_files(stages.FLOW)
    assert [f for f in flow if f.startswith(("tasks/stages/", "tasks/downstream/", "tasks/models/",
                                             "tasks/ops/report/"))] == []
    assert "flows/runner.py" not in flow and "flows/ui.py" not in flow
    assert [n for n in stages.ORDER if "flows/runner.py" in codedeps.code_files(stages.STAGES[n].code)] == \
        ["score_inputs", "score", "bon_score_inputs", "bon_score"], "and the fingerprints that hash their code"
    assert "tasks/stages/score.py" not in codedeps.code_files(stages.STAGES["ingest"].code)


PROBE = """
import importlib, json, os, sys
from tasks.core.codedeps import DECLARATIONS
for f in DECLARATIONS:   # what declarations import serves them (codedeps), not a stage
    importlib.import_module(f.removesuffix(".py").replace("/", "."))
seen = {"(declarations)": sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})}
import flows.stage as st
from tasks.core.stage_table import ORDER, STAGES
for name in ORDER:   # each stage in a fork: what preparing its run loads on top of the generic flow
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        st.flow_of(name), st.task_of(name), STAGES[name].chunk and st.chunk_task_of(name)
        files = sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})
        with os.fdopen(w, "w") as fh:
            json.dump(files, fh)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        seen[name] = json.load(fh)
    os.waitpid(pid, 0)
print(json.dumps(seen))
"""


@pytest.mark.timeout(300)
def test_what_a_stage_loads_at_run_time_is_its_declared_code():
    """The generic flow loads a stage's logic (and runner, UI table) by the names its entry gives, which
    no import statement shows: whatever it loads must still be among the stage's code deps."""
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=280,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.splitlines()[-1])
    project = lambda files: {Path(f).resolve().relative_to(ROOT).as_posix() for f in files  # noqa: E731
                             if Path(f).resolve().parts[len(ROOT.parts):][:1] in (("flows",), ("tasks",))}
    declarations = project(seen.pop("(declarations)"))
    assert set(seen) == set(stages.ORDER)
    for name, files in seen.items():
        assert sorted(project(files) - declarations - set(codedeps.code_files(stages.STAGES[name].code))) == [], name


def test_every_entry_names_logic_that_exists_and_only_known_hooks():
    """What the generic flow calls by name: a misspelt hook would be silently skipped, so none is allowed."""
    from flows.stage import HOOKS, logic, resolve

    for s in stages.TABLE:
        assert all(callable(resolve(f)) for f in (s.run, s.chunk, s.ui) if f), s.name
        mod = logic(s.name)
        assert hasattr(mod, "stage_rows") == bool(s.ui), s.name
        own = {k for k, v in vars(mod).items() if k.lower().startswith("stage_")
               and not (callable(v) and v.__module__ != mod.__name__)}   # not an imported function
        assert own - {s.run.partition(":")[2]} <= set(HOOKS), s.name


def test_an_indirect_and_a_function_level_import_are_found(tmp_path):
    """A stage's flow imports a helper, whose function imports another module: both are its code,
    and so is the package data beside them; a declaration module is not."""
    (tmp_path / "flows").mkdir()
    (tmp_path / "tasks" / "sub" / "templates").mkdir(parents=True)
    (tmp_path / "flows" / "__init__.py").write_text("")
    (tmp_path / "flows" / "x.py").write_text("from tasks import helper\nfrom tasks.core import layout\n")
    (tmp_path / "tasks" / "__init__.py").write_text("")
    (tmp_path / "tasks" / "core").mkdir()
    (tmp_path / "tasks" / "core" / "__init__.py").write_text("")
    (tmp_path / "tasks" / "core" / "layout.py").write_text("from tasks import unused\n")
    (tmp_path / "tasks" / "unused.py").write_text("")
    (tmp_path / "tasks" / "helper.py").write_text("def f():\n    from .sub.deep import g\n    return g\n")
    (tmp_path / "tasks" / "sub" / "__init__.py").write_text("")
    (tmp_path / "tasks" / "sub" / "deep.py").write_text("import json\ndef g():\n    return 1\n")
    (tmp_path / "tasks" / "sub" / "templates" / "page.j2").write_text("{{ x }}")
    files = codedeps.code_files("flows.x", tmp_path)
    assert files == ["flows/__init__.py", "flows/x.py", "tasks/__init__.py", "tasks/core/__init__.py",
                     "tasks/helper.py", "tasks/sub/__init__.py", "tasks/sub/deep.py", "tasks/sub/templates/page.j2"]
    assert codedeps.collapse(files, tmp_path) == ["flows", "tasks/__init__.py", "tasks/core/__init__.py",
                                                  "tasks/helper.py", "tasks/sub"]


def test_the_score_stage_depends_on_the_ingest_helper_it_calls():
    """The stale dep this table was built for: score calls ingest.first_per_domain."""
    assert _covered("tasks/stages/ingest.py", _declared("score"))
    assert _covered("tasks/stages/ingest.py", _declared("generic_pairs"))


@pytest.mark.parametrize("stage", ["score", "leaderboard", "report"])
def test_the_cache_key_hashes_the_code_dvc_tracks(stage):
    from flows.common import code_hash

    deps = [d for d in _declared(stage) if not d.startswith(("data/", "metrics/", "prompts", "params", "${"))]
    files = codedeps.code_files(stages.STAGES[stage].code)
    assert all(_covered(f, deps) for f in files)
    assert code_hash(stage) == tree_hash([ROOT / f for f in files])


def test_the_table_order_runs_every_stage_after_what_it_reads():
    """The in-process pipeline runs the table in order: every stage after the stages whose outputs it reads."""
    def producers(path: str) -> set[str]:
        return {t.name for t in stages.TABLE for o in t.out().values() if o == path or o.startswith(path + "/")}

    done: set[str] = set()
    for s in stages.TABLE:
        for path in [*s.inputs.values(), *s.deps]:
            assert producers(path) <= done, f"{s.name} reads {path} before {producers(path) - done} wrote it"
        done.add(s.name)


def test_a_stage_reads_exactly_its_declared_params():
    from tasks.ops.params import load_params

    params = load_params(ROOT / "params.yaml")
    used = stages.used_params(params, "score", "random")
    assert used["scoring"]["rms"] == {"random": params["scoring"]["rms"]["random"]}
    assert set(used["scoring"]) == {"splits", "per_domain_limit", "benchmarks", "strategies",
                                    "generic_strategies", "rms"}
    assert used["scale"] == {"chunk_size": params["scale"]["chunk_size"]}
    assert set(stages.used_params(params, "bon_judge")["bon"]) == {"judge"}
    from tasks.core.errors import ConfigError

    with pytest.raises(ConfigError, match="scoring.rms.nope: no such RM"):
        stages.used_params(params, "score", "nope")


def test_per_rm_stages_fan_out_over_scoring_rms():
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name in stages.PER_RM:
        s = stages.STAGES[name]   # scoring.rms; benchmarks for bench_score; the rl.rms list for rl_train
        own = f"scoring.rms.{s.token}" if s.foreach in stages.LISTS else f"{s.foreach}.{s.token}"
        assert spec[name]["foreach"] == f"${{{s.foreach}}}"
        assert own in s.params, "a key's stage reads its own entry only"
        if s.fingerprint:   # its params are in its fingerprint file, which its own entry alone changes
            assert "params" not in spec[name]["do"]
            assert s.foreach in spec[f"{name}_inputs"]["params"]
        else:
            assert own in spec[name]["do"]["params"], "a key's stage depends on its own entry only"
            assert s.foreach not in spec[name]["do"]["params"], "never on the whole list or mapping"
        assert spec[name]["do"]["cmd"] == f"python -m flows.stage {name} {s.token}"
    assert {n: stages.STAGES[n].foreach for n in stages.PER_RM if stages.STAGES[n].foreach != "scoring.rms"} == \
        {"bench_score": "benchmarks", "rl_train": "rl.rms"}


def test_layout_paths_are_the_table_outputs():
    """tests, flows and dvc.yaml read outputs from one place: each table stage's outputs are exactly
    its dvc.yaml outs, metrics and plots."""
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for s in stages.TABLE:
        entry = spec[s.name].get("do") or spec[s.name]
        declared = {e if isinstance(e, str) else next(iter(e)) for k in ("outs", "metrics", "plots")
                    for e in entry.get(k) or []}
        assert declared == set(s.out().values()), s.name
