"""Where LaMP-QA-shaped rows come from: local files (official JSON arrays, JSONL, Parquet,
the released-benchmark Parquet layout) or the HF hub. Yields raw rows with their location."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq

from tasks.core.errors import ConfigError, DataError, did_you_mean, suggestion
from tasks.core.registry import Registry

CONFIGS = {
    "Art_and_Entertainment": "Art",
    "Lifestyle_and_Personal_Development": "Lifestyle",
    "Society_and_Culture": "Society",
}
SPLITS = ("train", "validation", "test")
FORMATS = {".json": "json", ".jsonl": "jsonl", ".parquet": "parquet"}   # file suffix -> reader
READERS = Registry("source format")       # SourceFile.fmt -> rows
SOURCES = Registry("ingest source")       # params ingest.source -> the SourceFiles to read


@dataclass(frozen=True)
class SourceFile:
    label: str        # shown in error messages: a path or hf://id/config/split
    config: str
    split: str
    fmt: str          # json | jsonl | parquet | hub
    hub_id: str | None = None
    revision: str | None = None   # hub: ingest.revision as asked (null = main), resolved to a sha when read


@dataclass
class RawRow:
    file: str
    index: int
    row: object             # parsed JSON value; should be a dict
    error: DataError | None = None   # set when the row itself could not be parsed
    config: str | None = None        # the hub config it was read from (a domain, for ours)
    revision: str | None = None      # the hub commit sha it was read at


def check_config(name: str, where: str) -> str:
    if name not in CONFIGS:
        raise ConfigError(f"{where}: unknown config: {did_you_mean(name, CONFIGS)}")
    return name


def name_to_config_split(path: Path) -> tuple[str, str]:
    """`{Config}_{split}.json`, `{Config}/{split}-0000-of-0001.parquet` or `{Config}.parquet` (test)."""
    stem = path.name[: -len(path.suffix)]
    m = re.fullmatch(r"(.+)_(train|validation|test)", stem)
    if m:
        config, split = m.groups()
    elif path.parent.name in CONFIGS:
        config, split = path.parent.name, stem.split("-")[0]
        split = split if split in SPLITS else "test"
    else:
        config, split = re.sub(r"-\d+-of-\d+$", "", stem), "test"
    if config not in CONFIGS:
        raise DataError(str(path), f"unknown config name '{config}' in the file name"
                        f"{suggestion(config, CONFIGS)}; valid: {', '.join(CONFIGS)}")
    return config, split


def data_files(root: Path) -> list[Path]:
    """The data files under `root` (a file or folder), sorted; hidden folders (an `hf download --local-dir`
    copy's .cache/huggingface metadata) are not data."""
    if not root.is_dir():
        return [root] if root.is_file() and root.suffix in FORMATS else []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in FORMATS
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def discover(path: str | Path, configs, splits) -> list[SourceFile]:
    """Data files under `path` (a file or folder) for the wanted configs and splits, sorted."""
    root = Path(path)
    if not root.exists():
        raise ConfigError(f"ingest.path: '{root}' does not exist")
    candidates = data_files(root)
    found = []
    for p in candidates:
        config, split = name_to_config_split(p)
        if config in configs and split in splits:
            found.append(SourceFile(str(p), config, split, FORMATS[p.suffix]))
    if not found:
        raise ConfigError(f"ingest.path: no data files for configs {list(configs)} and splits "
                          f"{list(splits)} under '{root}' (expected names like "
                          f"Art_and_Entertainment_test.json)")
    order = {c: i for i, c in enumerate(CONFIGS)}
    return sorted(found, key=lambda s: (order[s.config], SPLITS.index(s.split), s.label))


def read_rows(src: SourceFile) -> Iterator[RawRow]:
    yield from READERS.lookup(src.fmt, "source format")(src)


def read_file(path) -> Iterator[RawRow]:
    """The rows of one local data file, read by the source format its suffix names."""
    fmt = FORMATS[Path(path).suffix]
    return read_rows(SourceFile(str(path), "", "", fmt))


def _text(path: str) -> str:
    # surrogateescape keeps bad bytes visible, so validation can name the field holding them
    return Path(path).read_bytes().decode("utf-8", errors="surrogateescape")


def _line_col(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    return f"line {line} column {pos - (text.rfind(chr(10), 0, pos) + 1) + 1}"


@READERS.register("json")
def _json_file(src: SourceFile) -> Iterator[RawRow]:
    return _json_array(src.label)


@READERS.register("jsonl")
def _jsonl_file(src: SourceFile) -> Iterator[RawRow]:
    return _jsonl(src.label)


@READERS.register("parquet")
def _parquet_file(src: SourceFile) -> Iterator[RawRow]:
    return _parquet(src.label)


def _json_array(path: str) -> Iterator[RawRow]:
    """Parse a JSON array element by element, so a syntax error names the row it broke in."""
    text, dec, ws = _text(path), json.JSONDecoder(), re.compile(r"\s*")
    pos = ws.match(text, 0).end()
    if text[pos:pos + 1] != "[":
        raise DataError(path, f"JSON syntax error at {_line_col(text, pos)}: expected a JSON array of rows")
    pos = ws.match(text, pos + 1).end()
    index = 0
    if text[pos:pos + 1] == "]":
        return
    while True:
        try:
            row, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"JSON syntax error at {_line_col(text, exc.pos)}: {exc.msg}", row=index) from None
        yield RawRow(path, index, row)
        index += 1
        pos = ws.match(text, pos).end()
        sep = text[pos:pos + 1]
        if sep == "]":
            break
        if sep != ",":
            raise DataError(path, f"JSON syntax error at {_line_col(text, pos)}: expected ',' or ']' after a row",
                            row=index)
        pos = ws.match(text, pos + 1).end()
    rest = ws.match(text, pos + 1).end()
    if rest != len(text):
        raise DataError(path, f"JSON syntax error at {_line_col(text, rest)}: extra data after the array")


def _jsonl(path: str) -> Iterator[RawRow]:
    index = 0
    for lineno, line in enumerate(_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield RawRow(path, index, json.loads(line))
        except json.JSONDecodeError as exc:
            yield RawRow(path, index, line, DataError(
                path, f"JSON syntax error at line {lineno} column {exc.colno}: {exc.msg}", row=index))
        index += 1


def _parquet(path: str) -> Iterator[RawRow]:
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise DataError(path, f"not a readable Parquet file: {exc}") from None
    index = 0
    for batch in pf.iter_batches(batch_size=256):
        for row in batch.to_pylist():
            yield RawRow(path, index, row)
            index += 1


@READERS.register("hub")
def _hub(src: SourceFile) -> Iterator[RawRow]:
    from tasks.stages import hub

    sha = hub.resolve("ingest.hub_id", src.hub_id, src.revision, src.config, src.split)
    label = hub.label(src.hub_id, sha, src.config, src.split)
    for index, row in enumerate(hub.rows("ingest.hub_id", src.hub_id, src.config, src.split, sha)):
        yield RawRow(label, index, row, config=src.config, revision=sha)


@SOURCES.register("files")
def file_sources(params: dict, configs, splits) -> list[SourceFile]:
    return discover(params["path"], configs, splits)


@SOURCES.register("hub")
def hub_params_sources(params: dict, configs, splits) -> list[SourceFile]:
    return hub_sources(params["hub_id"], configs, splits, params.get("revision"))


def hub_sources(hub_id: str, configs, splits, revision: str | None = None) -> list[SourceFile]:
    """One source per config and split at `revision` (null = main): resolved to a sha when read, not here
    (checking params needs no network)."""
    from tasks.stages import hub

    return [SourceFile(hub.label(hub_id, revision, c, s), c, s, "hub", hub_id, revision) for c in configs
            for s in splits]
