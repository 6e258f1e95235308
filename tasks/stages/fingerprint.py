"""`<stage>_inputs`: one small file per RM that stands, in dvc.yaml, for everything a per-RM stage reads
besides its own entry's outputs: the content hash of each shared data file and code file it declares,
and the params it is given (its own RM's entry among them). The per-RM stage then has this file as its
one DVC dep, so its dvc.lock entry does not repeat ~40 shared deps and the params per RM, and `dvc
status` checks one file per RM (benchmarks/scale.py). A change to any shared input rewrites every RM's
file (each reruns); adding an RM writes one new file and leaves the others' bytes (none reruns)."""
from __future__ import annotations

import shutil
from pathlib import Path

from tasks.core import codedeps, layout, stage_table as stages
from tasks.core.artifacts import file_hash, tree_hash, write_json


def _hash(path: str) -> str:
    p = Path(path)
    return tree_hash([p]) if p.is_dir() else file_hash(p) if p.exists() else "absent"


def fingerprints(params: dict, target: stages.Stage) -> dict[str, dict]:
    """{key: what its file holds} for every key of the per-RM stage `target` in params."""
    shared = [*target.inputs.values(), *target.deps]
    code = codedeps.code_files(target.code, Path.cwd())
    hashes: dict[str, str] = {}
    out = {}
    for key in stages.fan_keys(target, params):
        paths = [p for p in (stages.resolve(d, params, key, target) for d in shared) if p]
        files = {p: hashes.setdefault(p, _hash(p)) for p in sorted({*paths, *code})}
        out[key] = {"stage": target.name, "key": key, "params": stages.used_params(params, target.name, key),
                    "files": files}
    return out


def run(params: dict, inputs: dict, out: dict) -> dict:
    """Each RM's file written atomically in place (a stopped run leaves whole files; DVC records the folder only
    once the stage has finished), and the files of RMs no longer in params removed."""
    folder = Path(out["fingerprints"])
    target = stages.get(folder.name)   # the folder is named after the stage it fingerprints (layout.rm_inputs)
    prints = fingerprints(params, target)
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
