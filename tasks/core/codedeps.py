"""A stage's code, read off the code: the project modules its run executes (the generic flow and the
modules its table entry names, `Stage.code`) and what they import, directly or not (every import
statement in their bytecode, function-level ones included), the packages they sit in, and the package
data (non-Python files, e.g. templates) of those packages. dvc.yaml's code deps and the Prefect cache
key both come from here, so neither can go stale when an import is added.

Bytecode, not `ast.parse`: on CPython 3.11 building Python AST objects uses interpreter-wide state
(gh-106905), so a parse that races another thread's fails ("AST constructor recursion depth
mismatch"), and a flow run has such a thread (Prefect's heartbeat builds pydantic models, whose
`inspect.signature` of a builtin parses). Compiling to bytecode builds none. A file is scanned once
per content per process, one walk at a time (a lock), whichever thread asks; a walk's answer is kept while no
Python file or folder of the packages has changed (`_stamp`), as each stage's process walked it twice afresh."""
from __future__ import annotations

import dis
import hashlib
import os
import threading
import time
import types
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parents[2]   # tasks/core/codedeps.py -> the project root
PACKAGES = ("flows", "tasks")
# Not a stage's code, nor is what they import: declarations whose whole effect on a stage is its dvc.yaml
# entry (paths, params, cmd), which DVC already tracks, so adding a stage does not rerun every stage; and
# the params gate, which only refuses a file (every key a pipeline run reads must be in the file, so a
# schema default never reaches a DVC-tracked output: tasks/core/params/__init__.py, `complete`; its
# plug-in names are checked in tasks/ops/params.py).
DECLARATIONS = ("tasks/core/layout.py", "tasks/core/stage_table.py", "tasks/core/codedeps.py",
                "tasks/core/params/check.py", "tasks/core/params/schema.py", "tasks/core/params/schema_downstream.py",
                "tasks/ops/params.py")
SKIP = {"__pycache__"}


def _module_file(root: Path, module: str) -> Path | None:
    base = root.joinpath(*module.split("."))
    for f in (base / "__init__.py", base.with_suffix(".py")):
        if f.is_file():
            return f
    return None


_LOCK = threading.Lock()   # one walk at a time: each file scanned once, the cache never torn
_IMPORTS: dict[tuple[str, str], frozenset[str]] = {}   # (module, sha256 of its source) -> _scan's names


def _import_ops(source: bytes, path: Path):
    """(level, module, fromlist) of every import statement, function-level ones included: each
    IMPORT_NAME takes its level and fromlist from the two constants loaded just before it
    (EXTENDED_ARG, the prefix of an index over 255, is no instruction of its own here)."""
    todo = [compile(source, str(path), "exec", dont_inherit=True)]
    while todo:
        code = todo.pop()
        ops = [op for op in dis.get_instructions(code) if op.opname != "EXTENDED_ARG"]
        for i, op in enumerate(ops):
            if op.opname == "IMPORT_NAME":
                yield ops[i - 2].argval, op.argval, ops[i - 1].argval
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))


def _scan(source: bytes, path: Path, module: str) -> frozenset[str]:
    """Every project module named by an import anywhere in the file (also `from pkg import mod`)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for level, base, fromlist in _import_ops(source, path):
        if level:
            parts = package.split(".")[:len(package.split(".")) - level + 1]
            base = ".".join([*parts, base] if base else parts)
        names.add(base)
        names.update(f"{base}.{a}" for a in fromlist or ())
    return frozenset(n for n in names if n.split(".")[0] in PACKAGES)


def _imported(path: Path, module: str) -> frozenset[str]:
    """_scan's answer for the file as it is now (the caller holds _LOCK)."""
    source = path.read_bytes()
    key = (module, hashlib.sha256(source).hexdigest())
    if key not in _IMPORTS:
        _IMPORTS[key] = _scan(source, path, module)
    return _IMPORTS[key]


def _package_data(package_dir: Path) -> list[Path]:
    """Non-Python files of a package, outside its sub-packages (those count when imported)."""
    out = []
    for f in sorted(package_dir.iterdir()):
        if f.name in SKIP or (f.is_dir() and (f / "__init__.py").exists()):
            continue
        if f.is_dir():
            out += [g for g in sorted(f.rglob("*")) if g.is_file() and not SKIP & set(g.parts)]
        elif f.suffix not in (".py", ".pyc"):
            out.append(f)
    return out


def _closure(root: Path, module: str) -> tuple[str, ...]:
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for cand in (".".join(parts[:i]) for i in range(len(parts), 0, -1)):   # a module and its packages
            f = _module_file(root, cand)
            if f is not None and cand not in seen:
                seen[cand] = f
                if f.relative_to(root).as_posix() not in DECLARATIONS:   # what they import serves declarations
                    todo.extend(_imported(f, cand))
    files = set(seen.values())
    for f in list(files):
        if f.name == "__init__.py":
            files.update(_package_data(f.parent))
    rel = {f.relative_to(root).as_posix() for f in files}
    return tuple(sorted(rel - set(DECLARATIONS)))


_WALKS: dict[tuple, tuple[tuple, tuple[str, ...]]] = {}   # (root, module) -> (stamp, _closure's answer)


def _stamp(root: Path) -> tuple:
    """Every folder of the packages and every Python file in them, with mtime and size: what a walk's answer
    depends on (an edit can change a file's imports; an added or removed file changes its folder's mtime)."""
    out = []
    for package in PACKAGES:
        for folder, subs, names in os.walk(root / package):
            subs[:] = sorted(d for d in subs if d not in SKIP)
            out.append((folder, os.stat(folder).st_mtime_ns))
            for name in sorted(n for n in names if n.endswith(".py")):
                st = os.stat(os.path.join(folder, name))
                out.append((name, st.st_mtime_ns, st.st_size))
    return tuple(out)


def _racy(stamp: tuple, within_s: float = 2.0) -> bool:
    """A file changed this recently may change again under the same mtime (its clock ticks in ms, or in
    seconds on some filesystems): its walk is not kept (git's racy rule)."""
    newest = max((entry[1] for entry in stamp), default=0)
    return time.time() - newest / 1e9 < within_s


def code_files(modules: str | Iterable[str], root: Path = ROOT) -> list[str]:
    """Files (relative to the project root) that running these modules executes or reads as code.
    Walked again whenever a package's file or folder changed (an edit shows at once); a file's imports are
    scanned once per content."""
    names = [modules] if isinstance(modules, str) else list(modules)
    with _LOCK:
        stamp = _stamp(Path(root))
        walks = []
        for m in names:
            kept = _WALKS.get((str(root), m))
            if kept is None or kept[0] != stamp:
                kept = (stamp, _closure(Path(root), m))
                if not _racy(stamp):
                    _WALKS[(str(root), m)] = kept
            walks.append(kept[1])
        return sorted(set().union(*walks))


def collapse(files: list[str], root: Path = ROOT) -> list[str]:
    """The same set, with a folder named instead of its files when every file under it is listed
    (what dvc.yaml shows; DVC hashes a folder dep over all its files)."""
    chosen = set(files)

    def all_in(folder: Path) -> bool:
        inside = [f.relative_to(root).as_posix() for f in folder.rglob("*")
                  if f.is_file() and not SKIP & set(f.relative_to(root).parts)]
        return bool(inside) and all(f in chosen for f in inside)

    out, covered = [], set()
    for f in sorted(chosen):
        if f in covered:
            continue
        top = None
        for parent in list(Path(f).parents)[:-1][::-1]:   # the outermost folder that is wholly listed
            if all_in(root / parent):
                top = parent
                break
        if top is None:
            out.append(f)
        else:
            out.append(top.as_posix())
            covered.update(x for x in chosen if Path(x).is_relative_to(top))
    return sorted(set(out))
