"""Adding an RM to params.yaml without losing a comment: one flow-style line under `scoring.rms`,
inserted after the last entry (or replacing the RM's own one-line entry). The edited text must
parse to exactly the old params plus that entry, else nothing is written."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

from tasks.core.errors import ConfigError

_KEY = re.compile(r"^(\s*)([^\s#:][^:#]*?):(\s|$)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#")


def _block(lines: list[str], start: int, indent: int) -> int:
    """End (exclusive) of the block under lines[start]: up to the next content line at <= indent."""
    end = start + 1
    for i in range(start + 1, len(lines)):
        if _content(lines[i]) and _indent(lines[i]) <= indent:
            break
        end = i + 1
    return end


def _find_key(lines, lo, hi, key, indent=None):
    for i in range(lo, hi):
        m = _KEY.match(lines[i])
        if m and m.group(2).strip() == key and (indent is None or len(m.group(1)) == indent):
            return i
    return None


def flow_mapping(entry: dict) -> str:
    """{k: v, ...} on one line. Strings are double-quoted where a YAML 1.2 reader (DVC's) could
    take them for a number (a commit sha like 1234e567), plain where they read the same anyway."""
    def scalar(v):
        plain = yaml.safe_dump(v, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()
        if isinstance(v, str) and (plain != v or re.fullmatch(r"[-+.\deE_]+|[0-9a-fA-F]{7,}", v)):
            return json.dumps(v)
        return plain
    return "{" + ", ".join(f"{k}: {scalar(v)}" for k, v in entry.items()) + "}"


def with_rm(text: str, name: str, entry: dict, comment: str | None = None, where: str = "params.yaml") -> str:
    """`text` with `scoring.rms.<name>: <entry>` set; comments and every other line unchanged."""
    lines = text.splitlines(keepends=True)
    scoring = _find_key(lines, 0, len(lines), "scoring", indent=0)
    if scoring is None:
        raise ConfigError(f"{where}: no top-level `scoring:` group to add the RM to")
    end = _block(lines, scoring, 0)
    rms = _find_key(lines, scoring + 1, end, "rms")
    if rms is None:
        raise ConfigError(f"{where}: no `scoring.rms:` mapping to add the RM to")
    rms_indent = _indent(lines[rms])
    rms_end = _block(lines, rms, rms_indent)
    entries = [i for i in range(rms + 1, rms_end) if _content(lines[i])]
    indent = _indent(lines[entries[0]]) if entries else rms_indent + 2
    line = " " * indent + f"{name}: {flow_mapping(entry)}" + (f"   # {comment}" if comment else "") + "\n"
    own = _find_key(lines, rms + 1, rms_end, name, indent=indent)
    if own is not None:
        if _block(lines, own, indent) > own + 1 and any(_content(x) for x in lines[own + 1:_block(lines, own, indent)]):
            raise ConfigError(f"{where}: scoring.rms.{name} spans several lines; write it on one line to let "
                              "prbench update it, or give the release another name")
        lines[own] = line
    else:
        at = (entries[-1] + 1) if entries else rms + 1
        if not lines[at - 1].endswith("\n"):
            lines[at - 1] += "\n"
        lines.insert(at, line)
    new = "".join(lines)
    _check(text, new, name, entry, where)
    return new


def _check(old: str, new: str, name: str, entry: dict, where: str) -> None:
    expected = yaml.safe_load(old) or {}
    if not isinstance((expected.get("scoring") or {}).get("rms"), dict):
        expected.setdefault("scoring", {})["rms"] = {}
    expected["scoring"]["rms"][name] = entry
    try:
        got = yaml.safe_load(new)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: adding scoring.rms.{name} would break the file ({exc}); not written") from None
    if got != expected:
        raise ConfigError(f"{where}: cannot add scoring.rms.{name} by a one-line edit (unusual layout of "
                          "scoring.rms); add it by hand")


def set_rm(path: str | Path, name: str, entry: dict, comment: str | None = None) -> None:
    """Write params with the RM set (atomically: a crash leaves the old file or the new one)."""
    path = Path(path)
    new = with_rm(path.read_text(encoding="utf-8"), name, entry, comment, where=str(path))
    from tasks.core.artifacts import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(new, encoding="utf-8")
        os.chmod(tmp, path.stat().st_mode & 0o7777)
