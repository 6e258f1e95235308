"""Code hashes from many threads at once, as a Prefect flow run computes them (issue 36): on CPython
3.11 two threads building Python AST objects at once corrupt each other (gh-106905: "AST constructor
recursion depth mismatch"), and Prefect's heartbeat thread does so (a pydantic model built lazily
calls `inspect.signature` on a builtin, which is `ast.parse`). tasks/core/codedeps.py builds none, scans
each file once per content, and walks one thread at a time."""
import gc
import os
import inspect
import sys
import threading
import time

import pytest

from flows.common import code_hash
from tasks.core import codedeps
from tasks.core.stage_table import STAGES as STAGES_TABLE
from tests.conftest import ROOT

STAGES = ["leaderboard", "score", "bon_score", "report", "correlation", "pairs", "ingest", "rubrics"]


@pytest.fixture
def thread_switches_in_gc():
    """What makes the race likely: a GC pass runs Python code (here a callback, in a flow run the
    finalizers of Prefect's objects), so the thread that allocates can lose the GIL mid-parse."""
    old = sys.getswitchinterval(), gc.get_threshold()
    yield_gil = lambda phase, info: time.sleep(0)   # noqa: E731
    gc.callbacks.append(yield_gil)
    gc.set_threshold(50)
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        gc.callbacks.remove(yield_gil)
        sys.setswitchinterval(old[0])
        gc.set_threshold(*old[1])


def _at_once(fn, args: list, also=None) -> tuple[list, list]:
    """fn(arg) in one thread per arg, all released together (and `also` running beside them):
    results in order, and every exception raised in any thread."""
    results, errors, stop = [None] * len(args), [], threading.Event()
    start = threading.Barrier(len(args))

    def one(i):
        start.wait()
        try:
            results[i] = fn(args[i])
        except Exception as exc:   # noqa: BLE001 - collected, asserted on below
            errors.append(exc)

    def beside():
        while not stop.is_set():
            try:
                also()
            except Exception as exc:   # noqa: BLE001
                errors.append(exc)

    side = threading.Thread(target=beside) if also else None
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(args))]
    for t in [*threads, *([side] if side else [])]:
        t.start()
    for t in threads:
        t.join(120)
    stop.set()
    if side:
        side.join(60)
    return results, errors


def _heartbeat():
    """What Prefect's heartbeat thread does at a flow run's start: inspect.signature of builtins."""
    for f in (len, sorted, divmod, abs, repr, isinstance):
        inspect.signature(f)


@pytest.mark.timeout(300)
def test_code_hashes_from_many_threads_at_once_agree_and_never_fail(thread_switches_in_gc, monkeypatch):
    expected = {s: code_hash(s) for s in STAGES}
    monkeypatch.setattr(codedeps, "_IMPORTS", {})   # a fresh process: nothing scanned yet
    monkeypatch.setattr(codedeps, "_WALKS", {})
    results, errors = _at_once(code_hash, STAGES * 2, also=_heartbeat)
    assert errors == [], sorted({f"{type(e).__name__}: {e}" for e in errors})
    assert results == [expected[s] for s in STAGES * 2]


def test_one_walk_at_a_time_and_each_file_scanned_once(monkeypatch):
    """The lock: concurrent callers never scan at the same time, and no file content is scanned twice."""
    scanned, inside, overlap = [], [0], [0]
    real = codedeps._scan

    def scan(source, path, module):
        inside[0] += 1
        overlap[0] = max(overlap[0], inside[0])
        time.sleep(0.001)   # a window another thread would enter, were there no lock
        scanned.append((module, source))
        inside[0] -= 1
        return real(source, path, module)

    monkeypatch.setattr(codedeps, "_IMPORTS", {})
    monkeypatch.setattr(codedeps, "_WALKS", {})
    monkeypatch.setattr(codedeps, "_scan", scan)
    results, errors = _at_once(lambda m: codedeps.code_files(m, ROOT), [STAGES_TABLE[s].code for s in STAGES] * 2)
    assert errors == []
    assert overlap[0] == 1, f"{overlap[0]} threads scanned at once"
    assert len(scanned) == len(set(scanned)), "a file content scanned twice"
    assert results[:len(STAGES)] == results[len(STAGES):]


def test_an_edited_file_is_scanned_again(tmp_path):
    """The cache is keyed by content: an import added in the same process is seen at once."""
    for d in ("flows", "tasks"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "__init__.py").write_text("")
    (tmp_path / "flows" / "x.py").write_text("import json\n")
    (tmp_path / "tasks" / "helper.py").write_text("")
    assert codedeps.code_files("flows.x", tmp_path) == ["flows/__init__.py", "flows/x.py"]
    (tmp_path / "flows" / "x.py").write_text("def f():\n    from tasks import helper\n")
    assert codedeps.code_files("flows.x", tmp_path) == ["flows/__init__.py", "flows/x.py", "tasks/__init__.py",
                                                        "tasks/helper.py"]


def test_imports_read_off_bytecode_are_those_the_syntax_tree_names():
    """The bytecode scan names what an AST walk names, for every project module (ast here: one thread)."""
    import ast

    def by_ast(path, module):
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                names.update([base, *(f"{base}.{a.name}" for a in node.names)])
        return {n for n in names if n.split(".")[0] in codedeps.PACKAGES}

    files = sorted(f for p in codedeps.PACKAGES for f in (ROOT / p).rglob("*.py") if "__pycache__" not in f.parts)
    assert len(files) > 50
    for f in files:
        module = ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        assert codedeps._scan(f.read_bytes(), f, module) == by_ast(f, module), f


def test_a_walk_is_kept_until_a_package_file_or_folder_changes(tmp_path, monkeypatch):
    """Each stage process asked for its code twice (its task's key, then its chunks'): the walk is kept while
    no Python file or folder changed, and redone after an edit, an added module, or while files are fresh."""
    for d in ("flows", "tasks"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "__init__.py").write_text("")
    (tmp_path / "flows" / "x.py").write_text("import json\n")
    walks = []
    real = codedeps._closure
    monkeypatch.setattr(codedeps, "_closure", lambda root, m: walks.append(m) or real(root, m))

    def age(*paths, by=3600):
        for p in paths:
            os.utime(p, (time.time() - by, time.time() - by))

    assert codedeps.code_files("flows.x", tmp_path) == ["flows/__init__.py", "flows/x.py"]
    assert codedeps.code_files("flows.x", tmp_path) == ["flows/__init__.py", "flows/x.py"]
    assert len(walks) == 2, "files written just now: never kept (their mtime may not move on the next edit)"
    age(*tmp_path.rglob("*"), tmp_path / "flows", tmp_path / "tasks")
    codedeps.code_files("flows.x", tmp_path)
    assert codedeps.code_files("flows.x", tmp_path) == ["flows/__init__.py", "flows/x.py"]
    assert len(walks) == 3, "nothing changed: the kept walk answers"
    (tmp_path / "flows" / "x.py").write_text("from tasks import helper\n")   # an edit...
    (tmp_path / "tasks" / "helper.py").write_text("")                       # ...and a new module
    age(*tmp_path.rglob("*"), tmp_path / "flows", tmp_path / "tasks", by=1800)
    assert codedeps.code_files("flows.x", tmp_path) == ["flows/__init__.py", "flows/x.py", "tasks/__init__.py",
                                                        "tasks/helper.py"]
    (tmp_path / "tasks" / "helper.py").unlink()   # a removed module: its folder's mtime moves
    age(tmp_path / "tasks", by=600)
    assert codedeps.code_files("flows.x", tmp_path) == ["flows/__init__.py", "flows/x.py", "tasks/__init__.py"]
