"""`prbench params --doc`: every key of the schema with its type, default and one-line doc."""
from __future__ import annotations

import json

from pydantic import BaseModel

from tasks.core.params.check import _is_model
from tasks.core.registry import describe


def rows(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str, str]]:
    out = []
    for name, f in model.model_fields.items():
        key = f"{prefix}{name}"
        if _is_model(f.annotation):
            out.append((key, "group", "", f.description or ""))
            out += rows(f.annotation, key + ".")
        else:
            default = f.get_default(call_default_factory=True)
            out.append((key, describe(f.annotation), json.dumps(default), f.description or ""))
    return out


def schema_doc() -> str:
    from tasks.core.params.schema_downstream import Root

    table = rows(Root)
    width = max(len(k) for k, *_ in table)
    return "\n".join(f"{k.ljust(width)}  {t}" + (f" = {d}" if d else "") + f"  # {doc}" for k, t, d, doc in table)
