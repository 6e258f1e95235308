"""Reading a params file: YAML refused in one line each — a syntax error as `file:line:col: message`, a key
given twice in one mapping (YAML would keep the last silently: two RMs of one name) naming both lines, an
empty file. Never a traceback."""
from __future__ import annotations

from pathlib import Path

import yaml

from tasks.core.errors import ConfigError

HINTS = {"'\\t'": " (a tab: YAML indents with spaces only)"}


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """The safe loader (libyaml's where PyYAML has it: ~10x faster); the document's node tree is checked for
    repeated keys before it is built."""


class _PureLoader(yaml.SafeLoader):
    """PyYAML's own parser: a syntax error's words (libyaml's say less: no character named)."""


def duplicate_keys(node, path: str = "") -> list[tuple[str, int, str]]:
    """(key path, its first line, the repeat's line:column) for every key given twice in one mapping."""
    out = []
    if isinstance(node, yaml.MappingNode):
        seen: dict = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            here = f"{path}.{name}" if path else str(name)
            if name is not None and name in seen:
                out.append((here, seen[name], f"{key.start_mark.line + 1}:{key.start_mark.column + 1}"))
            elif name is not None:
                seen[name] = key.start_mark.line + 1
            out += duplicate_keys(value, here)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out += duplicate_keys(item, f"{path}[{i}]")
    return out


def parse(text: str, label: str, loader_class=_Loader):
    """The YAML of `text` (None when it holds no document), or a ConfigError: one line per problem."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        dups = duplicate_keys(node)
        if dups:
            raise ConfigError("\n".join(f"{label}:{again}: {key}: duplicate key (first at line {first}); YAML keeps "
                                        "only the last: rename or remove one" for key, first, again in dups))
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        if loader_class is not _PureLoader:
            return parse(text, label, _PureLoader)
        raise ConfigError(syntax_line(exc, label)) from None
    finally:
        loader.dispose()


def syntax_line(exc: yaml.YAMLError, label: str) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"{label}:{mark.line + 1}:{mark.column + 1}" if mark else label
    what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    hint = next((h for k, h in HINTS.items() if k in what), "")
    return f"{where}: YAML syntax error: {what}{hint}"


def read_yaml(path: Path):
    """The file's params mapping, or one ConfigError line per problem; an empty file is refused (a params
    file names its groups; `{}` takes every schema default)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    data = parse(text, str(path))
    if data is None:
        raise ConfigError(f"{path}: empty: no params groups (write `{{}}` for every default; "
                          "`prbench params --doc` lists the keys)")
    return data
