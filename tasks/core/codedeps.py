"""A stage's code, read off the code: the project modules its run executes (the generic flow and the
modules its table entry names, `Stage.code`) and what they import, directly or not (an AST walk,
function-level imports included), the packages they sit in, and the package data (non-Python files,
e.g. templates) of those packages. dvc.yaml's code deps and the Prefect cache
key both come from here, so neither can go stale when an import is added."""
from __future__ import annotations

import ast
from functools import lru_cache
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


def _imported(root: Path, path: Path, module: str) -> set[str]:
    """Every project module named by an import anywhere in the file (also `from pkg import mod`)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return {n for n in names if n.split(".")[0] in PACKAGES}


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


@lru_cache(maxsize=None)
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
                    todo.extend(_imported(root, f, cand))
    files = set(seen.values())
    for f in list(files):
        if f.name == "__init__.py":
            files.update(_package_data(f.parent))
    rel = {f.relative_to(root).as_posix() for f in files}
    return tuple(sorted(rel - set(DECLARATIONS)))


def code_files(modules: str | Iterable[str], root: Path = ROOT) -> list[str]:
    """Files (relative to the project root) that running these modules executes or reads as code."""
    names = [modules] if isinstance(modules, str) else list(modules)
    return sorted(set().union(*(_closure(Path(root), m) for m in names)))


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
