"""params.yaml access: one group per stage, plus `common`. Every load is checked against the schema
(tasks/core/params/schema*.py) before anything runs: each problem is one line naming the file and the key,
all of them at once, as a ConfigError (never retried, never a traceback)."""
from __future__ import annotations

import os
from pathlib import Path

from tasks.core.errors import ConfigError
from tasks.core.params.yaml_load import read_yaml  # noqa: F401 - the params API in one place

DEFAULT = "params.yaml"
_CHECKED: dict[tuple, dict] = {}   # (path, mtime, size, plugin check, groups) -> params: a stage loads its file more than once


def params_path(path: str | Path | None = None) -> Path:
    return Path(path or os.environ.get("PRBENCH_PARAMS", DEFAULT))


def validate(raw, label: str = DEFAULT, plugin_check=None, groups=None, root: Path | None = None,
             scope=True) -> dict:
    """The params with schema defaults filled in, or a ConfigError with one line per problem.
    `plugin_check`, `groups`: see check_params (tasks/ops/params.py passes the registries' check and the
    stage table's groups); `root`: the folder relative paths resolve in (None: paths are not checked);
    `scope`: True, or the keys whose paths are checked (see load_params)."""
    from tasks.core.params.check import check_params

    params, problems = check_params(raw, plugin_check, groups, root, scope)
    if problems:
        raise ConfigError("\n".join(f"{label}: {p}" for p in problems))
    return params


def load_params(path: str | Path | None = None, *, complete=False, plugin_check=None, groups=None,
                paths=False) -> dict:
    """The checked params. `complete`: also refuse a file that leaves out a key a run reads — True for
    every key, or the params keys of the stages that run (`tasks.core.stage_table.read_keys`): DVC tracks the
    file's values, so a schema default must never be what a stage reads. `paths`: also refuse a file or
    folder it names that is not there (relative to the params file's folder, where dvc runs stages) — True
    for every key, or those under these keys (the stages that run)."""
    path = params_path(path)
    if not path.exists():
        raise ConfigError(f"{path}: params file not found (run from the project root)")
    st = path.stat()
    scope = paths if isinstance(paths, bool) else tuple(paths)
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size, plugin_check, tuple((groups or {}).items()), scope)
    if key not in _CHECKED:
        _CHECKED.clear()
        raw = read_yaml(path)
        root = path.resolve().parent if paths else None
        _CHECKED[key] = (validate(raw, str(path), plugin_check, groups, root, scope), raw)
    params, raw = _CHECKED[key]
    if complete:
        from tasks.core.params.check import missing_keys, root_model

        missing = [m for m in missing_keys(raw, root_model(groups)) if complete is True or _under(m.split(":")[0], complete)]
        if missing:
            raise ConfigError("\n".join(f"{path}: {m}" for m in missing))
    return _copy(params)


def _under(key: str, prefixes) -> bool:
    return any(key == p or key.startswith(p + ".") or p.startswith(key + ".") or p == "params.yaml" for p in prefixes)


def _copy(params: dict) -> dict:
    import copy

    return copy.deepcopy(params)   # callers may edit what they get


def stage_params(params: dict, stage: str) -> dict:
    if stage not in params:
        raise ConfigError(f"params: missing group '{stage}'")
    return params[stage]


def group_keys(params: dict, group: str, keys: tuple[str, ...]) -> dict:
    """Only these keys of one group (what a stage declares it reads), each required."""
    p = stage_params(params, group)
    missing = [k for k in keys if k not in p]
    if missing:
        raise ConfigError(f"params: {group}.{missing[0]} is missing")
    return {k: p[k] for k in keys}
