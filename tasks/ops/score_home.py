"""Where `prbench score` runs from: inside a project (a folder with params.yaml and dvc.yaml, the current
one or one above it; or a params.yaml in the current folder) it scores under that project's params, from
its root; anywhere else under the shipped defaults — the params schema's own defaults (tasks/core/params/
schema*.py, inside the package, so a wheel install has them; `prbench params --doc` lists them), with the
cache in the user's cache folder instead of the current one. No second copy of params.yaml is kept."""
from __future__ import annotations

import os
from pathlib import Path

from tasks.core.params import DEFAULT

DEFAULTS = "defaults"


def find_project(start: Path | None = None) -> Path | None:
    """The nearest folder from `start` (default: the current one) up that holds params.yaml and dvc.yaml;
    else `start` itself when it holds a params.yaml; else None."""
    start = (start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / DEFAULT).is_file() and (folder / "dvc.yaml").is_file():
            return folder
    return start if (start / DEFAULT).is_file() else None


def user_cache() -> Path:
    """$XDG_CACHE_HOME/prbench (default ~/.cache/prbench): shared by every folder `prbench score` runs in."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "prbench"


def score_params(path: str | None) -> tuple[dict, str, Path | None]:
    """(params, where they came from, the project root to run in or None). `path`: --params, used as given."""
    from tasks.ops.params import load_params, validate

    if path:
        return load_params(path), str(Path(path).resolve()), None
    root = find_project()
    if root is not None:
        return load_params(root / DEFAULT), str(root / DEFAULT), root
    params = validate({}, DEFAULTS)
    params["common"]["cache_dir"] = str(user_cache())
    return params, DEFAULTS, None


def enter(root: Path | None, args, keys=("data", "out", "params")) -> None:
    """Run from the project's root (its params name paths relative to it): the flags that name local files
    are made absolute first, so they still mean what they meant where the command was typed."""
    if root is None or root == Path.cwd().resolve():
        return
    for key in keys:
        value = getattr(args, key, None)
        if value and (key == "out" or Path(value).exists()):   # a hub id stays as it is
            setattr(args, key, str(Path(value).resolve()))
    os.chdir(root)
