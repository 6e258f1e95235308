"""`<stage>_inputs`: one small file per RM that stands, in dvc.yaml, for everything a per-RM stage reads
besides its own entry's outputs: the content hash of each shared data file and code file it declares,
and the params it is given (its own RM's entry among them). The per-RM stage then has this file as its
one DVC dep, so its dvc.lock entry does not repeat ~40 shared deps and the params per RM, and `dvc
status` checks one file per RM (benchmarks/scale.py). A change to any shared input rewrites every RM's
file (each reruns); adding an RM writes one new file and leaves the others' bytes (none reruns).

Each file records its inputs exactly as dvc.lock records this stage's deps (DVC's md5 of every path dvc.yaml lists
for it, tasks/core/dvc_hash.py) and the params it is given: so what the committed files hold can be recomputed
from dvc.lock and params.yaml alone, and a lock refreshed by hand after a code change shows
(tasks/ops/committed_run.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

from tasks.core import codedeps, dag, layout, stage_table as stages
from tasks.core.artifacts import write_json
from tasks.core.dvc_hash import dvc_md5


def dep_paths(params: dict, inputs_stage: stages.Stage, root: Path | None = None) -> list[str]:
    """The paths dvc.yaml lists as the `<name>_inputs` stage's deps that its target reads: every data dep (`${...}`
    read from params) and each code dep holding a file the target imports (dag.stage_deps). Left out: the code
    only this stage runs (this module and what it imports), which changes no score."""
    root = Path.cwd() if root is None else root
    data, code = dag.stage_deps(inputs_stage, root)
    read = codedeps.code_files(inputs_stage.extra_code, root)
    data = [p for p in (stages.resolve(d, params) for d in data) if p]
    return sorted({*data, *(c for c in code if any(f == c or f.startswith(c.rstrip("/") + "/") for f in read))})


def contents(params: dict, target: stages.Stage, files: dict[str, str]) -> dict[str, dict]:
    """{key: what its file holds} for every key of the per-RM stage `target`, given {dep path: DVC md5}."""
    return {key: {"stage": target.name, "key": key, "params": stages.used_params(params, target.name, key),
                  "files": dict(sorted(files.items()))} for key in stages.fan_keys(target, params)}


def fingerprints(params: dict, inputs_stage: stages.Stage) -> dict[str, dict]:
    """{key: what its file holds} for every key of the per-RM stage `inputs_stage` fingerprints."""
    target = stages.get(inputs_stage.name.removesuffix("_inputs"))
    return contents(params, target, {p: dvc_md5(p) for p in dep_paths(params, inputs_stage)})


def run(params: dict, inputs: dict, out: dict) -> dict:
    """Each RM's file written atomically in place (a stopped run leaves whole files; DVC records the folder only
    once the stage has finished), and the files of RMs no longer in params removed."""
    folder = Path(out["fingerprints"])
    target = stages.get(folder.name)   # the folder is named after the stage it fingerprints (layout.rm_inputs)
    prints = fingerprints(params, stages.get(f"{target.name}_inputs"))
    folder.mkdir(parents=True, exist_ok=True)
    names = {Path(layout.rm_inputs(target.name, key)).name: content for key, content in prints.items()}
    for name, content in names.items():
        write_json(content, folder / name)
    for stale in sorted(set(p.name for p in folder.iterdir()) - set(names)):
        path = folder / stale
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return {"keys": len(prints)}


def stage_summary(out: dict, metrics: dict) -> str:
    return f"{Path(out['fingerprints']).name}_inputs: {metrics['keys']} fingerprint file(s) in {out['fingerprints']}"
