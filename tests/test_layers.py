"""The shape of the code, kept so it cannot rot: layers with imports only downward and no circle between
rooms (import-linter's contracts in pyproject.toml, run as `lint-imports`), no module over 300 lines, no
function over 60, a tasks/ root that stays small, and a warm-fork client that imports nothing heavy."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("tasks", "flows")
LAYERS = ["tasks.ops", "tasks.downstream", "tasks.stages", "tasks.models", "tasks.core"]
MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_ROOT_MODULES = 300, 60, 10


def _modules() -> list[Path]:
    return sorted(f for p in PACKAGES for f in (ROOT / p).rglob("*.py") if "__pycache__" not in f.parts)


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def test_the_import_contracts_are_declared_and_kept():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert set(config["root_packages"]) == set(PACKAGES)
    contracts = {c["type"]: c for c in config["contracts"]}
    assert contracts["layers"]["layers"] == LAYERS, "the layers, top first"
    assert contracts["forbidden"]["source_modules"] == ["tasks"] and contracts["forbidden"]["forbidden_modules"] == ["flows"]
    assert set(contracts["acyclic_siblings"]["ancestors"]) == set(PACKAGES)
    assert not any("ignore_imports" in c for c in config["contracts"]), "move the code, do not ignore the import"

    lint = Path(sys.executable).with_name("lint-imports")   # the venv's, analysing this checkout
    out = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert f"Contracts: {len(config['contracts'])} kept, 0 broken." in out.stdout


def test_no_module_over_300_lines():
    long = {str(f.relative_to(ROOT)): n for f in _modules()
            if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"split by responsibility: {long}"


def test_no_function_over_60_lines():
    long = {}
    for f in _modules():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"), str(f))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{f.relative_to(ROOT)} {node.name}"] = lines
    assert not long, f"split by responsibility: {long}"


def test_the_tasks_root_holds_at_most_10_modules():
    root = [p.name for p in (ROOT / "tasks").iterdir()
            if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())]
    assert len(root) <= MAX_ROOT_MODULES, sorted(root)


def _room(module: str) -> str:
    """tasks.<layer>.<room> (a package or a module), flows.<module>; a package's own __init__ is a room too."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[0] == "tasks" else parts[:2])


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                on.discard(w)
                comp.append(w)
            on.discard(v)
            if comp:
                out.append(sorted([v, *comp]))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_between_rooms():
    """Also across a package's own __init__, which import-linter's acyclic_siblings leaves out (it was
    the flows <-> flows.warm circle)."""
    import grimp

    graph = grimp.build_graph(*PACKAGES)   # function-level imports count
    edges: dict[str, set[str]] = {}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            if _room(importer) != _room(imported):
                edges.setdefault(_room(importer), set()).add(_room(imported))
    circles = _circles(edges)
    assert not circles, circles


def test_the_warm_client_imports_nothing_heavy():
    """Every stage process imports flows.warm (flows/__init__) before anything else: the hand-off to a
    warm fork must not pay the imports it exists to save."""
    probe = ("import sys; from flows.warm import hand_off; "
             "print(' '.join(sorted(m if m.startswith('tasks') else m.split('.')[0] for m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=_env(), capture_output=True, text=True,
                         timeout=60, check=True)
    # stdlib only: the numerics, pinned before the hand-off, and the environment check before them (and its path kinds)
    pins = {"tasks", "tasks.core", "tasks.core.numerics", "tasks.core.env", "tasks.core.paths"}
    loaded = set(out.stdout.split())
    heavy = {m for m in loaded if m.startswith("tasks") and m not in pins}
    heavy |= loaded & {"prefect", "torch", "transformers", "pyarrow", "pandas", "pydantic"}
    assert not heavy, heavy
