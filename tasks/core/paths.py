"""What a path a user names must be, declared by kind: the params keys that name files (rules.PATHS) and the
CLI flags that do (flows/boundary.py) share these words, so a file given where a folder is expected (or the
reverse), a folder that is not there, or an output that cannot be made is one line naming it, before any
work. Stdlib only."""
from __future__ import annotations

import re
from pathlib import Path

# kind -> what it is, as the one line says it
KINDS = {"file": "a file", "folder": "a folder", "any": "a file or folder",
         "new_file": "a file to write (made if missing)", "new_folder": "a folder (made if missing)"}


def problem(value: str, kind: str, root: Path | None = None) -> str | None:
    """Why `value` (relative to `root`, default the current folder) is not a path of `kind`, or None."""
    if not value:
        return f"an empty path: name {KINDS[kind]}"
    path = (Path(root) if root is not None else Path()) / Path(value).expanduser()
    if kind in ("new_file", "new_folder"):
        if path.exists():
            return _wrong_type(value, path, "file" if kind == "new_file" else "folder")
        blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        return f"'{value}' cannot be made: '{blocker}' is a file, not a folder" if blocker else None
    if not path.exists():
        return f"no such {'file or folder' if kind == 'any' else kind} '{value}'{near(path, value)}"
    return None if kind == "any" else _wrong_type(value, path, kind)


def _wrong_type(value: str, path: Path, kind: str) -> str | None:
    if kind == "file" and path.is_dir():
        return f"'{value}' is a folder, not a file"
    if kind == "folder" and not path.is_dir():
        return f"'{value}' is a file, not a folder"
    return None


HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def looks_local(model: str) -> bool:
    """A model named by a path rather than a hub id: explicitly relative or absolute, deeper than owner/name, or
    under a folder that exists here (a hub id's owner is no folder of the project)."""
    if model.startswith(("/", "./", "../", "~")) or not HUB_ID.fullmatch(model):
        return True
    return "/" in model and Path(model.split("/")[0]).is_dir()


def near(path: Path, value: str) -> str:
    """' (did you mean 'prompts/planner.txt'?)' for a misspelt name in a folder that exists, or ''."""
    import difflib

    folder = path.parent
    names = sorted(c.name for c in folder.iterdir()) if folder.is_dir() else []
    close = difflib.get_close_matches(path.name, names, n=1, cutoff=0.6)
    return f" (did you mean '{(Path(value).parent / close[0]).as_posix()}'?)" if close else ""
