"""One registry style for every pluggable kind (RM kinds, benchmarks, LLM backends, rubric judges,
retrievers, source formats and ingest sources, profile strategies, RL algorithms, downstream methods and
their report sections, task runners): a plug-in registers itself under its name by decorator;
an unknown name is one ConfigError naming the params key, with "did you mean"; a name registered twice
is one ConfigError naming both places. A plug-in's options are typed — its `OPTIONS` dict (name -> type),
else its constructor's annotations — so a params entry is checked (unknown option, wrong type, missing
required one) before anything is built; a plug-in's `entry_problems(entry, key)`, when it has one, then tells
what it can from its files without building anything (a model folder that is not one)."""
from __future__ import annotations

import functools
import inspect
import os
import sys
import typing
from typing import Callable

from tasks.core.errors import ConfigError, did_you_mean, suggestion, typo_of


class Registry:
    def __init__(self, what: str, load: Callable[[], None] | None = None):
        """`load` imports the modules that register (static imports, so stages' code deps see them)."""
        self.what, self._load, self._items, self._where = what, load, {}, {}

    def register(self, name=None):
        """`@reg.register` (the name is the object's `kind` or `__name__`) or `@reg.register("name")`."""
        where = _caller(sys._getframe(1))

        def add(obj, key=None):
            key = key or getattr(obj, "kind", None) or obj.__name__
            first = self._where.get(key)
            if key in self._items and first != where:   # the same line again is a module re-imported
                raise ConfigError(f"{self.what} '{key}' registered twice: {first or 'set directly'} and {where}")
            self._items[key], self._where[key] = obj, where
            return obj
        if callable(name):
            return add(name)
        return lambda obj: add(obj, name)

    def where(self, name) -> str | None:
        """file:line of the registration of `name` (None for one set directly, e.g. a test's monkeypatch)."""
        self._all()
        return self._where.get(name)

    def _all(self) -> dict:
        if self._load is not None:
            load, self._load = self._load, None
            load()
        return self._items

    def names(self) -> list[str]:
        """In registration order (a display order where it matters, e.g. strategies)."""
        return list(self._all())

    def index(self, name) -> int:
        return self.names().index(name)

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and name in self._all()   # a list or mapping where a name goes: not one

    def __iter__(self):
        return iter(self.names())

    def __getitem__(self, name):
        return self._all()[name]

    def __setitem__(self, name, obj):   # tests plant a kind with monkeypatch.setitem
        self._all()[name] = obj

    def __delitem__(self, name):
        del self._all()[name]

    def get(self, name, default=None):   # a mapping's get (monkeypatch.setitem relies on it)
        return self._all().get(name, default)

    def lookup(self, name, key: str):
        """The plug-in registered as `name`; else one ConfigError naming the params `key`, with "did you mean"."""
        items = self._all()
        if name not in items:
            raise ConfigError(f"{key}: {did_you_mean(str(name), items)}")
        return items[name]

    def check_names(self, names, key: str) -> list[str]:
        """Problems of a list of names (each unknown one, with its position)."""
        if not isinstance(names, (list, tuple)):
            return [f"{key}: a list of {self.what} names, got {names!r}"]
        return [f"{key}[{i}]: {did_you_mean(str(n), self._all())}" for i, n in enumerate(names) if n not in self]


def _caller(frame) -> str:
    """file:line of a frame, relative to the project root when inside it."""
    path = os.path.abspath(frame.f_code.co_filename)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if path.startswith(root + os.sep):
        path = os.path.relpath(path, root)
    return f"{path}:{frame.f_lineno}"


def at_least(n, t=int):
    """An option's type with its lower bound: checked, and said in its line, as a params key's range."""
    from annotated_types import Ge

    return typing.Annotated[t, Ge(n)]


def within(lo, hi, t=float):
    from annotated_types import Ge, Le

    return typing.Annotated[t, Ge(lo), Le(hi)]


URL = r"^https?://[^\s/?#]+(/\S*)?$"


def url():
    """An http(s) URL option (an API's base_url)."""
    from pydantic import StringConstraints

    return typing.Annotated[str, StringConstraints(pattern=URL)]


def options_of(obj) -> dict[str, object]:
    """name -> type of a plug-in's options: its OPTIONS dict, else its constructor's annotated parameters."""
    declared = getattr(obj, "OPTIONS", None)
    if isinstance(declared, dict):
        return dict(declared)
    if isinstance(declared, (tuple, list)):   # names only: any value
        return {name: object for name in declared}
    init = obj.__init__ if inspect.isclass(obj) else obj
    hints = typing.get_type_hints(init, include_extras=True)   # keep a range: Annotated[int, Ge(1)]
    return {p: hints.get(p, object) for p in inspect.signature(init).parameters if p not in ("self", "name", "entry")}


def required_of(obj) -> tuple[str, ...]:
    declared = getattr(obj, "REQUIRED", None)
    if declared is not None:
        return tuple(declared)
    if isinstance(getattr(obj, "OPTIONS", None), (dict, tuple, list)):
        return ()
    init = obj.__init__ if inspect.isclass(obj) else obj
    return tuple(p.name for p in inspect.signature(init).parameters.values()
                 if p.name not in ("self", "name", "entry") and p.default is inspect.Parameter.empty)


def describe(annotation) -> str:
    """A type as a user reads it: 'an integer or null', 'one of strict, half, drop'."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(describe(a) for a in args)
    if origin in (list, tuple):
        return f"a list of {_plural(describe(args[0]))}" if args else "a list"
    if origin is dict:
        return f"a mapping of {_plural(describe(args[1]))}" if len(args) == 2 else "a mapping"
    if origin is typing.Annotated:   # a plug-in option's range: Annotated[int, Ge(1)] (annotated_types)
        limits = [f"{op} {getattr(m, k)}" for m in args[1:] for k, op in (("ge", ">="), ("gt", ">"), ("le", "<="),
                                                                           ("lt", "<")) if hasattr(m, k)]
        if any(getattr(m, "pattern", None) == URL for m in args[1:]):
            return "an http(s) URL"
        return describe(args[0]) + (f" {' and '.join(limits)}" if limits else "")
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string", type(None): "null",
            dict: "a mapping", list: "a list", object: "any value"}.get(annotation, getattr(annotation, "__name__",
                                                                                             str(annotation)))


def _plural(text: str) -> str:
    words = {"an integer": "integers", "a number": "numbers", "a string": "strings", "a mapping": "mappings",
             "a list": "lists", "true or false": "true or false"}
    return words.get(text, text.removeprefix("an ").removeprefix("a "))


def check_value(value, annotation, key: str) -> list[str]:
    """[] when `value` has the type, else one line naming the key, the value and what is allowed."""
    from pydantic import ValidationError

    if annotation is object:
        return []
    names = _literal_items(value, annotation, key)
    if names is not None:
        return names
    try:
        _adapter(annotation).validate_python(value)
        return []
    except ValidationError:
        pass
    except Exception:   # an annotation pydantic cannot take: accept rather than block the run
        return []
    hint = ""
    if typing.get_origin(annotation) is typing.Literal and isinstance(value, str):
        hint = suggestion(value, [str(a) for a in typing.get_args(annotation)])
    return [f"{key}: {value!r} is not allowed: {describe(annotation)}{hint}"]


def _adapter(annotation):
    """pydantic's validator of `annotation`, strict unless it brings its own config; built once per annotation
    (a params check asks for hundreds: building them was most of its time)."""
    try:
        return _cached_adapter(annotation)
    except TypeError:   # an unhashable annotation
        return _build_adapter(annotation)


def _build_adapter(annotation):
    from pydantic import ConfigDict, TypeAdapter

    return TypeAdapter(annotation, config=None if _has_config(annotation) else ConfigDict(strict=True))


_cached_adapter = functools.lru_cache(maxsize=None)(_build_adapter)


def _literal_items(value, annotation, key: str) -> list[str] | None:
    """A list of names from a fixed set (`list[Literal[...]]`: splits, benchmarks): each item that is not one,
    by its position, with "did you mean"; None when `annotation` is no such list or `value` no list of strings."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is not list or len(args) != 1 or typing.get_origin(args[0]) is not typing.Literal:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    valid = [str(a) for a in typing.get_args(args[0])]
    return [f"{key}[{i}]: {v!r} is not allowed: {describe(args[0])}{suggestion(v, valid)}"
            for i, v in enumerate(value) if v not in valid]


def _has_config(annotation) -> bool:
    return inspect.isclass(annotation) and hasattr(annotation, "model_config")


def check_entry(entry, registry: Registry, key: str, *, field: str = "kind", shared: dict | None = None) -> list[str]:
    """Problems of one plug-in entry ({field: name, option: value, ...}): unknown kind or option (with
    "did you mean"), a wrong type, a required option missing. `shared` options are accepted by every kind."""
    if not isinstance(entry, dict):
        return [f"{key}: a mapping like {{{field}: ...}}, got {entry!r}"]
    if field not in entry:
        known = {o for n in registry.names() for o in options_of(registry[n])}   # `kidn: seq-cls`: name the typo
        typo = typo_of(field, entry, known)
        if typo:
            return [f"{key}.{typo}: not an option (did you mean '{field}'?): the entry names its {registry.what} "
                    f"with '{field}'"]
        return [f"{key}.{field}: missing; valid: {', '.join(registry.names())}"]
    name = entry[field]
    if not isinstance(name, str):
        return [f"{key}.{field}: {name!r} is not allowed: a {registry.what}'s name, one of {', '.join(registry.names())}"]
    if name not in registry:
        return [f"{key}.{field}: {did_you_mean(str(name), registry.names())}"]
    obj = registry.lookup(name, f"{key}.{field}")
    options = {**(shared or {}), **options_of(obj)}
    problems = []
    for opt, value in entry.items():
        if opt == field:
            continue
        if opt not in options:
            problems.append(f"{key}.{opt}: not an option of {registry.what} '{name}'{suggestion(opt, options)}; "
                            f"valid: {', '.join(sorted(options))}")
        else:
            problems += check_value(value, options[opt], f"{key}.{opt}")
    problems += [f"{key}.{opt}: required for {registry.what} '{name}'" for opt in required_of(obj) if opt not in entry]
    told = getattr(obj, "entry_problems", None)   # what the plug-in tells from its files, once the types hold
    return problems or (told(entry, key) if callable(told) else [])
