"""Is a checkout's committed run what its code and params would write? What dvc.lock records, checked against
what the checkout holds, without running anything:

- every path the lock records that git holds (code, params files' values, prompts, the bundled sample, and the
  outputs kept in git: metrics/, plots/, the page) hashes as the lock says;
- what a produced file records about the code: each per-RM fingerprint file (tasks/stages/fingerprint.py) is
  recomputed from params.yaml and the lock's hashes of its stage's deps, and its md5 must be the one the lock
  holds for it (a lock refreshed by hand after a code change keeps the old fingerprints); the page's code
  version must be the checkout's.

`problems(root)` lists each stale entry in one line; tests/test_committed_run.py runs it on HEAD's tree and on
planted stale locks, and `make committed-run` on the run it has just made."""
from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

from tasks.core import layout, stage_table as stages
from tasks.core.artifacts import json_bytes
from tasks.core.dvc_hash import dvc_md5, listing_md5
from tasks.ops.params import load_params
from tasks.ops.report import provenance
from tasks.stages import fingerprint

CODE_VERSION = re.compile(r'<code id="code-version">([0-9a-f]{64})</code>')


def read_yaml(path: Path):
    """A YAML file as DVC reads it (ruamel, YAML 1.2: `5e-05` is a float there, a string to PyYAML)."""
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(path.read_text(encoding="utf-8")) if path.exists() else {}


def tracked_files(root: Path) -> set[str]:
    """The files git holds in `root` (a work tree), or every file under it (a `git archive` of a commit)."""
    if (root / ".git").exists():
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True).stdout
        return {p for p in out.split("\0") if p}
    return {f.relative_to(root).as_posix() for f in root.rglob("*") if f.is_file()}


def _held(root: Path, path: str, tracked: set[str], produced: set[str]) -> bool:
    """Does git hold what the lock records for `path`? A file git tracks; a folder only when git tracks every file
    in it. A stage's output folder, or a folder holding some, is data (its .gitignore aside): not git's."""
    if path in tracked:
        return True
    inside = lambda a, b: a.startswith(b.rstrip("/") + "/")  # noqa: E731
    if any(o == path or inside(o, path) or inside(path, o) for o in produced):
        return False
    files = [f.relative_to(root).as_posix() for f in (root / path).rglob("*") if f.is_file()] \
        if (root / path).is_dir() else []
    return bool(files) and all(f in tracked for f in files)


def _lookup(tree, key: str):
    """A dotted params key in a YAML mapping, as DVC reads it (a name may hold dots: the longest key first)."""
    parts = key.split(".")
    while parts:
        for n in range(len(parts), 0, -1):
            head = ".".join(parts[:n])
            if isinstance(tree, dict) and head in tree:
                tree, parts = tree[head], parts[n:]
                break
        else:
            return KeyError
    return tree


def git_held(root: Path, lock: dict, tracked: set[str]) -> list[str]:
    """Each recorded dep or out that git holds, hashed again; each recorded param, read again."""
    out, files = [], {}
    produced = {o["path"] for entry in lock.get("stages", {}).values() for o in entry.get("outs") or []}
    for name, entry in lock.get("stages", {}).items():
        for kind in ("deps", "outs"):
            for item in entry.get(kind) or []:
                path = item["path"]
                if not _held(root, path, tracked, produced):
                    continue
                got = files.setdefault(path, dvc_md5(root / path))
                if got != item.get("md5"):
                    out.append(f"{name}: {path} is not what dvc.lock records (md5 {got}, lock {item.get('md5')})")
        for file, values in (entry.get("params") or {}).items():
            current = read_yaml(root / file)
            for key, value in values.items():
                if _lookup(current, key) != value:
                    out.append(f"{name}: param {key} in {file} is not what dvc.lock records")
    return out


def fingerprints(root: Path, lock: dict, params: dict) -> list[str]:
    """Each per-RM stage's fingerprint files, recomputed from params and the lock's hashes of its stage's deps."""
    out, recorded = [], lock.get("stages", {})
    for inputs in (s for s in stages.TABLE if s.name.endswith("_inputs") and s.extra_code):
        target = stages.get(inputs.name.removesuffix("_inputs"))
        if inputs.name not in recorded:
            out.append(f"{inputs.name}: not in dvc.lock")
            continue
        deps = {d["path"]: d.get("md5") for d in recorded[inputs.name].get("deps") or []}
        wanted = fingerprint.dep_paths(params, inputs, root)
        missing = [p for p in wanted if p not in deps]
        if missing:
            out.append(f"{inputs.name}: dvc.lock records no hash for {', '.join(missing)} (dvc.yaml changed since)")
            continue
        made = {key: hashlib.md5(json_bytes(content)).hexdigest()
                for key, content in fingerprint.contents(params, target, {p: deps[p] for p in wanted}).items()}
        for key, md5 in made.items():
            path = layout.rm_inputs(target.name, key)
            held = {d["path"]: d.get("md5") for d in recorded.get(f"{target.name}@{key}", {}).get("deps") or []}
            if held.get(path) != md5:
                out.append(f"{target.name}@{key}: {path} is not what {inputs.name} writes for this code and params "
                           f"(md5 {md5}, lock {held.get(path)}): make the committed run with `make committed-run`")
        folder = {o["path"]: o.get("md5") for o in recorded[inputs.name].get("outs") or []}
        outs = inputs.out()["fingerprints"]
        want = listing_md5({f"{key}.json": md5 for key, md5 in made.items()})
        if folder.get(outs) != want:
            out.append(f"{inputs.name}: {outs} is not what it writes for this code and params (md5 {want}, lock "
                       f"{folder.get(outs)})")
    return out


def page_version(root: Path) -> list[str]:
    """The committed page names the code version of the checkout it is committed with."""
    page = root / layout.REPORT["page"]
    if not page.exists():
        return []
    found = CODE_VERSION.search(page.read_text(encoding="utf-8"))
    want = provenance.code_version(root, layout.REPORT_CODE_VERSION)
    if not found or found.group(1) != want:
        return [f"{layout.REPORT['page']}: its code version is {found.group(1)[:16] if found else 'missing'}, this "
                f"code's is {want[:16]}"]
    return []


def problems(root: str | Path) -> list[str]:
    """Every stale entry of root's committed run, one line each (empty: dvc.lock is what a run of this code wrote)."""
    root = Path(root)
    lock = read_yaml(root / "dvc.lock") or {}
    params = load_params(root / "params.yaml")
    return [*git_held(root, lock, tracked_files(root)), *fingerprints(root, lock, params), *page_version(root)]
