"""One-key mutants of a params file, drawn by the schema (tests/test_fuzz_params.py): every key of the file (a
group, an entry, a value, a list item) with what the schema or the plug-in's options say it is (its type, its
range, the names it may refer to), then one mistake made to it: a wrong type, a value just out of its range, a
neighbour key's value, a misspelt name or key, an empty value, the key left out, a list item or a mapping key
given twice."""
from __future__ import annotations

import copy
import typing

import yaml

OPERATORS = ("wrong_type", "out_of_range", "neighbour", "misspell", "empty", "missing", "duplicate", "rename_key")
OTHER_TYPES = ("text", 7, -3, 2.5, True, None, [], {}, ["x", "y"], {"a": 1})


def keys(node, path=()) -> list[tuple]:
    """Every key path of a loaded params file: mappings' keys and list items (an int in the path)."""
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        out.append((*path, k))
        out += keys(v, (*path, k))
    return out


def get(node, path):
    for part in path:
        node = node[part]
    return node


def dotted(path) -> str:
    return ".".join(str(p) for p in path if not isinstance(p, int))


def limits(path, params: dict) -> dict:
    """ge/gt/le/lt of the key at `path`: the schema's Field, or a plug-in option's Annotated range."""
    from tasks.core.params.check import _is_model, _model_values, _optional_model, root_model
    from tasks.core.registry import options_of
    from tasks.core.stage_table import GROUP_SCHEMAS
    from tasks.ops.params import registries

    node = root_model(GROUP_SCHEMAS)
    for i, part in enumerate(path):
        if isinstance(node, tuple):   # a group of named entries (benchmarks): each is the model
            node = node[1]
            continue
        f = node.model_fields.get(part) if isinstance(part, str) else None
        if f is None:
            return {}
        group = f.annotation if _is_model(f.annotation) else _optional_model(f.annotation)
        if group is not None:
            node = group
        elif _model_values(f.annotation):
            node = ("entries", _model_values(f.annotation))
        elif i == len(path) - 1:
            return _bounds(f.metadata)
        else:
            return _option_bounds(path, i + 1, params, registries(), options_of)
    return {}


def _bounds(metadata) -> dict:
    return {k: getattr(m, k) for m in metadata for k in ("ge", "gt", "le", "lt") if hasattr(m, k)}


def _option_bounds(path, i: int, params: dict, named: dict, options_of) -> dict:
    """A plug-in entry's option (scoring.rms.<name>.<option>, pairs.judge.<option>): its Annotated range."""
    key = dotted(path[:i])
    if key not in named:
        return {}
    field, registry = named[key]
    node = get(params, path[:i])
    entry, option = (node, path[i]) if isinstance(node, dict) and field in node else (
        (node.get(path[i]), path[i + 1] if i + 1 < len(path) else None) if isinstance(node, dict) else (None, None))
    if not isinstance(entry, dict) or entry.get(field) not in registry or not isinstance(option, str):
        return {}
    annotation = options_of(registry[entry[field]]).get(option)
    parts = [annotation, *typing.get_args(annotation)]
    return _bounds([m for a in parts if typing.get_origin(a) is typing.Annotated for m in typing.get_args(a)[1:]])


def misspelt(text: str, draw) -> str:
    if not text:
        return "x"
    i = draw(range(len(text)))
    how = draw(("drop", "double", "swap", "case"))
    if how == "drop" and len(text) > 1:
        return text[:i] + text[i + 1:]
    if how == "swap" and i + 1 < len(text):
        return text[:i] + text[i + 1] + text[i] + text[i + 2:]
    if how == "case" and text.lower() != text.upper():
        return text.swapcase()
    return text[:i] + text[i] + text[i:]


def out_of_range(value, lim: dict, draw):
    """A number just outside the key's range (or a generic extreme when it has none)."""
    near = [lim["ge"] - 1, lim["ge"] - 0.5] if "ge" in lim else []
    near += [lim["gt"], lim["gt"] - 1] if "gt" in lim else []
    near += [lim["le"] + 1, lim["le"] + 0.5] if "le" in lim else []
    near += [lim["lt"], lim["lt"] + 1] if "lt" in lim else []
    pool = near or [-1, 0, 10 ** 9, 0.5, -0.5]
    v = draw(pool)
    return int(v) if isinstance(value, int) and float(v).is_integer() else v


class DupMap(list):
    """A mapping written with one key twice (YAML keeps the last one silently; prbench refuses it)."""


def _dump_dup(dumper, data):
    return dumper.represent_mapping("tag:yaml.org,2002:map", list(data))


class Dumper(yaml.SafeDumper):
    pass


Dumper.add_representer(DupMap, _dump_dup)


def text_of(params) -> str:
    return yaml.dump(params, Dumper=Dumper, sort_keys=False, allow_unicode=True)


def mutate(params: dict, path: tuple, op: str, draw) -> tuple[str, str, tuple]:
    """(YAML text of the mutant, what was done, the key path it names: a renamed key's new path)."""
    p = copy.deepcopy(params)
    parent, last = get(p, path[:-1]), path[-1]
    value = parent[last]
    named = path
    if op == "wrong_type":
        choices = [v for v in OTHER_TYPES if type(v) is not type(value)]
        parent[last] = copy.deepcopy(draw(choices))
    elif op == "out_of_range":
        parent[last] = out_of_range(value, limits(path, params), draw) if isinstance(value, (int, float)) \
            and not isinstance(value, bool) else draw((-1, 0, 10 ** 9))
    elif op == "neighbour":
        others = [k for k in keys(params) if k != path and not isinstance(get(params, k), (dict, list))]
        siblings = [k for k in others if k[:-1] == path[:-1]]
        parent[last] = copy.deepcopy(get(params, draw(siblings or others)))
    elif op == "misspell":
        if isinstance(value, str):
            parent[last] = misspelt(value, draw)
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            i = draw(range(len(value)))
            value[i], named = misspelt(value[i], draw), (*path, i)
        else:
            parent[last] = misspelt(str(value), draw)
    elif op == "empty":
        parent[last] = {str: "", list: [], dict: {}}.get(type(value), 0 if isinstance(value, (int, float)) else "")
    elif op == "missing":
        del parent[last]
    elif op == "duplicate":
        if isinstance(value, list) and value:
            value.append(copy.deepcopy(draw(value)))
        elif isinstance(parent, dict):
            pairs = DupMap(parent.items())
            pairs.append((last, copy.deepcopy(value)))
            if len(path) == 1:
                return text_of(pairs), f"{op} {dotted(path)}", path
            get(p, path[:-2])[path[-2]] = pairs
        else:
            parent.append(copy.deepcopy(value))
    elif op == "rename_key" and isinstance(parent, dict):
        new = misspelt(str(last), draw)
        items = [(new if k == last else k, v) for k, v in parent.items()]
        parent.clear()
        parent.update(items)
        named = (*path[:-1], new)
    return text_of(p), f"{op} {dotted(path)}", named
