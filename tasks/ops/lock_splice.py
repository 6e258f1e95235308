"""dvc.lock written one stage entry at a time. After each stage DVC parses the whole lock as round-trip
YAML, updates one entry and dumps it all again: 2.1 s a stage at 12k lines on the 2-core box, more than
the stage itself for most of ours. `prbench run` runs DVC with `install()`, which replaces only that write:
the stage's entry is dumped with DVC's own dumper and put in place of its old lines (or appended, where
DVC's dict update puts a new key), so the bytes are those DVC would write (tests/test_lock_splice.py).
A lock of any other shape (a `datasets:` section, hand-written layout) goes to DVC's own code."""
from __future__ import annotations

import logging
from pathlib import Path

HEAD = "schema: '2.0'\nstages:\n"
logger = logging.getLogger("dvc.dvcfile")


def _blocks(body: str) -> dict[str, str] | None:
    """The stages section as {key line: the entry's text}, or None when a line is not of an entry
    (keys at two spaces, everything inside them at four or more)."""
    blocks: dict[str, str] = {}
    key = None
    for line in body.splitlines(keepends=True):
        if line.startswith("  ") and line[2] != " ":
            if not line.endswith(":\n"):
                return None
            key = line
            blocks[key] = ""
        elif key is not None and (line.startswith("    ") or line == "\n"):
            blocks[key] += line
        else:
            return None
    return blocks


def entry_text(name: str, entry: dict) -> tuple[str, str]:
    """(key line, entry lines) as DVC's dumper writes them under `stages:`."""
    from dvc.utils.serialize import dumps_yaml

    text = dumps_yaml({"stages": {name: entry}})
    key, _, rest = text[len("stages:\n"):].partition("\n")
    return key + "\n", rest


def _name(key: str) -> str:
    """The stage name of a key line (quoted or not)."""
    from dvc.utils.serialize import loads_yaml

    plain = key.strip()[:-1]
    if plain[:1] not in ("'", '"'):
        return plain
    return next(iter(loads_yaml(key.strip())))


def splice(text: str, entries: dict[str, dict], drop: tuple[str, ...] | set[str] = ()) -> str | None:
    """The lock text with these stage entries replaced or appended and the `drop` ones removed; None if
    the text is not a plain `schema` + `stages` lock (the caller then leaves it to DVC)."""
    if not text.startswith(HEAD):
        return None
    blocks = _blocks(text[len(HEAD):])
    if blocks is None:
        return None
    if drop:
        blocks = {k: v for k, v in blocks.items() if _name(k) not in drop}
    for name, entry in entries.items():
        key, rest = entry_text(name, entry)
        blocks[key] = rest
    return HEAD + "".join(k + v for k, v in blocks.items())


def names(text: str) -> list[str] | None:
    """The stage names of a plain lock, in order, from its key lines alone (no YAML parse of the
    entries); None for a lock of another shape."""
    blocks = _blocks(text[len(HEAD):]) if text.startswith(HEAD) else None
    return None if blocks is None else [_name(k) for k in blocks]


def install() -> None:
    """Route DVC's per-stage lock write through splice() in this process."""
    from dvc import dvcfile
    from dvc.stage import serialize

    from tasks.core.artifacts import write_text

    original = dvcfile.Lockfile.dump_stages

    def dump_stages(self, stages, **kwargs):
        path = Path(self.path)
        if not stages or not path.is_file() or type(self.repo.fs).__name__ != "LocalFileSystem":
            return original(self, stages, **kwargs)
        text = path.read_text(encoding="utf-8")
        entries = {}
        for stage in stages:
            entries.update(serialize.to_lockfile(stage, **kwargs))
        new = splice(text, entries)
        if new is None:
            return original(self, stages, **kwargs)
        if new != text:
            logger.info("Updating lock file '%s'", self.relpath)
            write_text(new, path)   # temp file + rename: a kill leaves the old lock or the new one
            self.repo.scm_context.track_file(self.relpath)

    dvcfile.Lockfile.dump_stages = dump_stages
