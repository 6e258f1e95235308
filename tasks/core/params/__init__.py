"""params.yaml access: one group per stage, plus `common`. Every load is checked against the schema
(tasks/core/params/schema*.py) before anything runs: each problem is one line naming the file and the key,
all of them at once, as a ConfigError (never retried, never a traceback)."""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from tasks.core.errors import ConfigError

DEFAULT = "params.yaml"
_CHECKED: dict[tuple, dict] = {}   # (path, mtime, size, plugin check, groups) -> params: a stage loads its file more than once


def params_path(path: str | Path | None = None) -> Path:
    return Path(path or os.environ.get("PRBENCH_PARAMS", DEFAULT))


def read_yaml(path: Path):
    """The file's YAML, or one ConfigError line with the place of a syntax error."""
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: {where}YAML syntax error: {what}") from None


def validate(raw, label: str = DEFAULT, plugin_check=None, groups=None) -> dict:
    """The params with schema defaults filled in, or a ConfigError with one line per problem.
    `plugin_check`, `groups`: see check_params (tasks/ops/params.py passes the registries' check and the
    stage table's groups)."""
    from tasks.core.params.check import check_params

    params, problems = check_params(raw, plugin_check, groups)
    if problems:
        raise ConfigError("\n".join(f"{label}: {p}" for p in problems))
    return params


def load_params(path: str | Path | None = None, *, complete=False, plugin_check=None, groups=None) -> dict:
    """The checked params. `complete`: also refuse a file that leaves out a key a run reads — True for
    every key, or the params keys of the stages that run (`tasks.core.stage_table.read_keys`): DVC tracks the
    file's values, so a schema default must never be what a stage reads."""
    path = params_path(path)
    if not path.exists():
        raise ConfigError(f"{path}: params file not found (run from the project root)")
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size, plugin_check, tuple((groups or {}).items()))
    if key not in _CHECKED:
        _CHECKED.clear()
        raw = read_yaml(path)
        _CHECKED[key] = (validate(raw, str(path), plugin_check, groups), raw)
    params, raw = _CHECKED[key]
    if complete:
        from tasks.core.params.check import missing_keys, root_model

        missing = [m for m in missing_keys(raw, root_model(groups)) if complete is True or _under(m.split(":")[0], complete)]
        if missing:
            raise ConfigError("\n".join(f"{path}: {m}" for m in missing))
    return _copy(params)


def _under(key: str, prefixes) -> bool:
    return any(key == p or key.startswith(p + ".") or p == "params.yaml" for p in prefixes)


def _copy(params: dict) -> dict:
    import copy

    return copy.deepcopy(params)   # callers may edit what they get (e.g. rl_train narrows rl.rms)


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
