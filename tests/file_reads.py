"""Which project files each stage run reads, for the check that every artifact's reader is in the stage
table: Python's `open` audit events (json, text, models' config files, hashes) and pyarrow's Parquet
readers (C++, no audit event), attributed to the stage the generic flow is running."""
from __future__ import annotations

import os
import re
import sys
from collections import defaultdict
from pathlib import Path

CHECKED = ("data/", "metrics/", "plots/", "prompts/")   # artifacts and the files stages declare as deps
_state = {"on": False, "stage": None, "root": None, "reads": None}
_hooked = False


def _note(path) -> None:
    if not (_state["on"] and _state["stage"] and isinstance(path, (str, bytes, os.PathLike))):
        return
    try:
        rel = Path(os.fsdecode(path)).resolve().relative_to(_state["root"]).as_posix()
    except ValueError:   # outside the project
        return
    if rel.startswith(CHECKED):
        _state["reads"][_state["stage"]].add(rel)


def _hook(event: str, args) -> None:
    if event == "open" and _state["on"]:
        path, mode, flags = (tuple(args) + (None, None))[:3]
        reading = ("r" in mode and "+" not in mode) if isinstance(mode, str) else \
            isinstance(flags, int) and flags & os.O_ACCMODE == os.O_RDONLY
        if reading:
            _note(path)


def record(root: Path, monkeypatch) -> dict:
    """{(stage, key or None): {project-relative paths read}}, filled by every stage run until stop() (or
    the test's end: monkeypatch takes the attribution away, and with no stage running nothing is noted)."""
    global _hooked
    import pyarrow.parquet as pq

    import flows.stage as st

    if not _hooked:   # an audit hook stays for the process: it is idle outside this block
        sys.addaudithook(_hook)
        _hooked = True
    reads: dict = defaultdict(set)
    _state.update(on=True, root=Path(root).resolve(), reads=reads, stage=None)

    def reader(original):
        def read(source, *args, **kwargs):
            _note(source)
            return original(source, *args, **kwargs)
        return read

    for name in ("read_table", "read_schema", "ParquetFile"):
        monkeypatch.setattr(pq, name, reader(getattr(pq, name)))
    run_named = st.run_named

    def attributed(name, key, params_path):
        _state["stage"] = (name, key)
        try:
            return run_named(name, key, params_path)
        finally:
            _state["stage"] = None
    monkeypatch.setattr(st, "run_named", attributed)
    return reads


def stop() -> None:
    _state.update(on=False, stage=None)


def _target(path: str) -> str:
    """An atomic write's temp file or folder (tasks/core/artifacts.py, fsynced through a read-only open;
    a folder may hold one) as what it becomes: writing its own output is no read."""
    return "/".join(re.sub(r"^\.(.+)\.[A-Za-z0-9_]+\.tmp$", r"\1", part) for part in path.split("/"))


def undeclared(reads: dict, params: dict) -> dict:
    """{stage run: paths it read that are none of its declared inputs, deps or own outputs}."""
    from tasks.core import stage_table as stages

    bad = {}
    for (name, key), paths in reads.items():
        s = stages.STAGES[name]
        allowed = [*(stages.resolve(d, params, key, s) for d in [*s.inputs.values(), *s.deps]),
                   *s.out(key).values()]
        allowed = [a.rstrip("/") for a in allowed if a]
        extra = sorted(p for p in map(_target, paths) if not any(p == a or p.startswith(a + "/") for a in allowed))
        if extra:
            bad[f"{name}@{key}" if key else name] = extra
    return bad
