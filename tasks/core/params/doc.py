"""`prbench params --doc`: every key of the schema with its type, default and one-line doc. The names a
registry holds for a key come from above (flows/cli.py passes tasks/ops/params.py's `plugin_doc()`):
the registries live in higher layers than this one."""
from __future__ import annotations

import json

from pydantic import BaseModel

from tasks.core.params.check import _is_model, _optional_model, limits
from tasks.core.registry import describe


def rows(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str, str]]:
    out = []
    for name, f in model.model_fields.items():
        key = f"{prefix}{name}"
        group = f.annotation if _is_model(f.annotation) else _optional_model(f.annotation)
        if group is not None:
            kind = "group" if group is f.annotation else "group or null"
            default = "" if group is f.annotation else json.dumps(f.get_default(call_default_factory=True))
            out.append((key, kind, default, f.description or ""))
            out += rows(group, key + ".")
        else:
            default = f.get_default(call_default_factory=True)
            kind = describe(f.annotation) + "".join(f", {c}" for c in constraints(f))
            out.append((key, kind, json.dumps(default), f.description or ""))
    return out


def constraints(f) -> list[str]:
    """What check.py holds a key's value to beyond its type, as --doc shows it."""
    least = next((m.min_length for m in f.metadata if getattr(m, "min_length", None)), None)
    return [c for c in (limits(f), least and f"at least {least}",
                        (f.json_schema_extra or {}).get("names") and "keys are names: letters, digits, '-', '_'") if c]


def schema_doc(plugins: dict[str, str] | None = None) -> str:
    """The table; `plugins`: key -> the names its registry holds ("one of: ..."), shown after the type."""
    from tasks.core.params.schema_downstream import Root

    plugins = plugins or {}
    table = [(k, f"{t} ({plugins[k]})" if k in plugins else t, d, doc) for k, t, d, doc in rows(Root)]
    width = max(len(k) for k, *_ in table)
    return "\n".join(f"{k}  {t}" + (f" = {d}" if d else "") + f"  # {doc}" for k, t, d, doc in table)
