"""Every problem of a params dict at once, one line each naming the key: unknown keys (with "did you
mean"), wrong types and values outside an enum (naming what is allowed), entries of pluggable kinds
checked by their registries, and names that must refer to something (an LLM under `llms`, an RM
under `scoring.rms`, a strategy, a retriever). Nothing is built and nothing is loaded."""
from __future__ import annotations

import inspect

from pydantic import BaseModel

from tasks.core.errors import ConfigError, suggestion
from tasks.core.registry import check_value


def _is_model(annotation) -> bool:
    return inspect.isclass(annotation) and issubclass(annotation, BaseModel)


def _optional_model(annotation):
    """The model of a `Model | None` field (a group that may be null), else None."""
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0] if len(args) == 1 and _is_model(args[0]) and type(None) in typing.get_args(annotation) else None


def _model_values(annotation):
    """The model of a `dict[str, Model]` field (named entries, each a group), else None."""
    import typing

    args = typing.get_args(annotation)
    return args[1] if typing.get_origin(annotation) is dict and len(args) == 2 and _is_model(args[1]) else None


def fields_of(model: type[BaseModel]) -> dict:
    return dict(model.model_fields)


def root_model(groups: dict | None = None) -> type[BaseModel]:
    """The schema's Root plus the params groups stages bring (the stage table's GROUP_SCHEMAS, handed in
    by tasks/ops/params.py: the table imports this package's schema, so this package must not import it)."""
    from pydantic import create_model

    from tasks.core.params.schema_downstream import Root

    extra = {g: (m, None) for g, m in (groups or {}).items() if g not in Root.model_fields}
    return create_model("Root", __base__=Root, **extra) if extra else Root


def check_group(raw, model: type[BaseModel], key: str) -> list[str]:
    """Types and unknown keys of one group (recursing into nested groups)."""
    fields, problems = fields_of(model), []
    if not isinstance(raw, dict):
        return [f"{key}: a mapping of {', '.join(fields)}, got {raw!r}"]
    for name, value in raw.items():
        path = f"{key}.{name}" if key else str(name)
        if name not in fields:
            hint = suggestion(str(name), fields)
            problems.append(f"{path}: unknown key{hint}" + ("" if hint else f"; valid: {', '.join(fields)}"))
        elif _is_model(fields[name].annotation):
            problems += check_group(value, fields[name].annotation, path)
        elif value is not None and _optional_model(fields[name].annotation):
            problems += check_group(value, _optional_model(fields[name].annotation), path)
        elif _model_values(fields[name].annotation) and isinstance(value, dict):   # name -> group (benchmarks)
            problems += key_problems(value, fields[name], path) + size_problems(value, fields[name], path)
            for entry, sub in value.items():
                problems += check_group(sub, _model_values(fields[name].annotation), f"{path}.{entry}")
        else:
            problems += check_field(value, fields[name], path)
    required = [name for name, f in fields.items() if f.is_required() and name not in raw]
    if not raw and len(required) > 1:   # an entry left empty: one mistake, one line
        return problems + [f"{key}: empty: it needs {', '.join(required)} (required)"]
    return problems + [f"{key}.{name}: missing: required ({fields[name].description})" for name in required]


NAME_USE = ("names a DVC stage and its files (e.g. score@<name>, <name>.parquet): letters, digits, '-' and '_', "
            "starting with a letter or digit")


NAME = r"[A-Za-z0-9][A-Za-z0-9_-]*"


def key_problems(value, f, key: str) -> list[str]:
    """The keys of a mapping whose field says they are names (F(..., names=True)) that no stage can use as a file
    name: each becomes a DVC stage (score@<name>) and file names."""
    import re

    if not (f.json_schema_extra or {}).get("names") or not isinstance(value, dict):
        return []
    return [f"{key}.{k}: {str(k)!r} is not usable as a name: it {NAME_USE} (e.g. '{_slug(k)}')"
            for k in value if not isinstance(k, str) or not re.fullmatch(NAME, k)]


def _slug(name) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(name)).strip("-_") or "rm"


EMPTY = "is empty"   # a value of the right type: the plug-in names can still be checked


def size_problems(value, f, key: str) -> list[str]:
    """A list or mapping the schema says must hold at least `min_length` items (Field(min_length=))."""
    least = next((m.min_length for m in f.metadata if getattr(m, "min_length", None)), None)
    if least is None or not isinstance(value, (list, dict)) or len(value) >= least:
        return []
    return [f"{key}: {value!r} {EMPTY}: {f.description or 'it'}: name at least {least}"]


OUT_OF_RANGE = "is out of range"   # a value of the right type: the plug-in names can still be checked
LIMITS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def limits(f) -> str:
    """A key's range as a user reads it ('>= 1', '> 0 and < 1'), or ''."""
    return " and ".join(f"{op} {getattr(m, k)}" for m in f.metadata for k, op in LIMITS if hasattr(m, k))


def check_field(value, f, key: str) -> list[str]:
    """Its type (as check_value), then its range (the schema's Field(ge=, gt=, le=, lt=))."""
    import typing

    problems = check_value(value, f.annotation, key)
    if problems or value is None:
        return problems
    problems = key_problems(value, f, key) + size_problems(value, f, key)
    if problems or not limits(f):
        return problems
    if check_value(value, typing.Annotated[f.annotation, *f.metadata], key):
        return [f"{key}: {value!r} {OUT_OF_RANGE}: must be {limits(f)}"]
    return []


def with_defaults(raw: dict, model: type[BaseModel], key: str = "") -> dict:
    """The user's values as written, plus the schema's default for every key left out."""
    out = dict(raw)
    for name, f in fields_of(model).items():
        if _is_model(f.annotation):
            out[name] = with_defaults(out.get(name) or {}, f.annotation, name)
        elif isinstance(out.get(name), dict) and _optional_model(f.annotation):
            out[name] = with_defaults(out[name], _optional_model(f.annotation), name)
        elif isinstance(out.get(name), dict) and _model_values(f.annotation):   # named entries (benchmarks)
            out[name] = {k: with_defaults(v, _model_values(f.annotation), f"{name}.{k}") if isinstance(v, dict) else v
                         for k, v in out[name].items()}
        elif name not in out and not f.is_required():
            default = f.get_default(call_default_factory=True)
            out[name] = default.model_dump() if isinstance(default, BaseModel) else default
    return out


def missing_keys(raw: dict, model: type[BaseModel], key: str = "") -> list[str]:
    """Keys of the schema the file leaves out, with the default they would take."""
    import json

    out = []
    for name, f in fields_of(model).items():
        path = f"{key}.{name}" if key else name
        if _is_model(f.annotation) and isinstance(raw, dict) and name not in raw:   # a whole group: one line
            out.append(f"{path}: missing (a group of {len(fields_of(f.annotation))} keys); a pipeline run reads every "
                       "key from the file, so that dvc tracks what it reads: add it (`prbench params --doc` lists them)")
        elif _is_model(f.annotation):
            out += missing_keys((raw or {}).get(name) or {}, f.annotation, path)
        elif _optional_model(f.annotation) and isinstance((raw or {}).get(name), dict):
            out += missing_keys(raw[name], _optional_model(f.annotation), path)
        elif name not in (raw or {}):
            default = f.get_default(call_default_factory=True)
            out.append(f"{path}: missing (its default: {json.dumps(default)}); a pipeline run reads every key from "
                       "the file, so that dvc tracks what it reads: add it")
    return out


def _keys(problems: list[str]) -> set[str]:
    """The keys problem lines name (each key of a line that names several), with and without a list position."""
    import re

    keys = {k.strip().split(" (")[0] for line in problems for k in line.split(": ")[0].replace(" and ", ", ").split(", ")}
    for line in problems:   # `lms:` for llms: llms took its default, so names pointing into it say nothing new
        typo = re.match(r"(\S+): unknown key \(did you mean '([^']+)'\?\)", line)
        if typo:
            keys.add(".".join([*typo.group(1).split(".")[:-1], typo.group(2)]))
    return keys | {k.split("[")[0] for k in keys}


def check_params(raw, plugin_check=None, groups=None, root=None, scope=True) -> tuple[dict | None, list[str]]:
    """(params with defaults, []) or (None, every problem): types and ranges, the rules across keys
    (rules.py), the files it names (relative to `root`; None: not checked; `scope`: True or the keys whose
    files are checked) and, once the types passed, `plugin_check(params) -> problems`: the names of
    pluggable kinds, checked where every registry is in sight (tasks/ops/params.py), above this layer;
    `groups`: see root_model."""
    from tasks.core.params.refs import ref_problems
    from tasks.core.params.rules import cross_problems, path_problems

    Root = root_model(groups)
    if not isinstance(raw, dict):
        return None, [f"the file holds {type(raw).__name__}, not a mapping of params groups"]
    if raw and not any(name in Root.model_fields for name in raw):   # another file (a metrics JSON, say)
        return None, [f"no params group in it (it holds {', '.join(map(str, list(raw)[:3]))}"
                      f"{', ...' if len(raw) > 3 else ''}): is it a params file? `prbench params --doc` lists the groups"]
    typed = check_group(raw, Root, "")
    try:
        full = with_defaults(raw, Root)
    except (TypeError, ValueError, AttributeError):   # a group that is not a mapping: already a problem above
        return None, typed
    problems = typed + cross_problems(full, _keys(typed))
    if plugin_check is not None and all(OUT_OF_RANGE in t or EMPTY in t or NAME_USE in t for t in typed):
        problems += plugin_check(full)
    # a key with a problem of its own gets no second line (a name no split at all is not "not scored" too)
    problems += ref_problems(full, _keys(problems))
    problems += path_problems(full, root, scope) if root is not None else []
    return (None, problems) if problems else (full, [])
