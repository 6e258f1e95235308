"""Reading and writing artifacts: atomic, deterministic, schema-checked."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.core import hash_store
from tasks.core.schemas import SCHEMAS, conform


def umask() -> int:
    """The process's umask, read without setting it (os.umask sets it, for every thread at once)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1], 8) for line in fh if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        old = os.umask(0o022)
        os.umask(old)
        return old


def _atomic_target(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, 0o666 & ~umask())   # what open() would give; mkstemp's 0600 locks others out of a shared run
    os.close(fd)
    return Path(tmp)


def _commit(tmp: Path, path: Path) -> None:
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary file beside `path` to write to: once the block ends it replaces `path` (fsynced
    first); if the block raises, it is removed and `path` is as it was (a crash midway, a full disk)."""
    path = Path(path)
    tmp = _atomic_target(path)
    try:
        yield tmp
        _commit(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_table(table: pa.Table | list[dict], path: str | Path, schema: str) -> Path:
    """Validate against the named schema and write Parquet via temp file + rename.

    Bytes depend only on the rows: no pandas metadata, no timestamps, fixed writer options.
    """
    path = Path(path)
    if isinstance(table, list):
        _no_unknown_keys(table, schema)
        table = pa.Table.from_pylist(table, schema=SCHEMAS[schema])
    table = conform(table, schema).replace_schema_metadata({"prbench.schema": schema})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", compression_level=3,
                       use_dictionary=True, write_statistics=True, row_group_size=64_000)
    return path


def _no_unknown_keys(rows: list[dict], schema: str) -> None:
    """No row holds a key the schema lacks: pyarrow would drop it without a word, so a misspelt column (a row's
    `rm` written as `RM`) would leave the column null. A key left out is a null, as the schema allows."""
    want = set(SCHEMAS[schema].names)
    for i, row in enumerate(rows):
        extra = row.keys() - want
        if extra:
            raise ValueError(f"{schema} row {i}: not in the schema: {', '.join(sorted(extra))}")


def read_table(path: str | Path, schema: str) -> pa.Table:
    return conform(pq.read_table(path), schema)


def json_bytes(obj) -> bytes:
    """A JSON artifact's bytes: sorted keys, indented, UTF-8, a final newline (what write_json writes)."""
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def write_json(obj, path: str | Path) -> Path:
    return write_bytes(json_bytes(obj), path)


def write_text(text: str, path: str | Path) -> Path:
    """A text artifact (e.g. the report page), UTF-8, via temp file + rename."""
    return write_bytes(text.encode("utf-8"), path)


def write_bytes(data: bytes, path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def replace_dir(src: Path, dst: Path) -> None:
    """Put a finished folder in place: the old one stays until the new one is complete."""
    old = dst.with_name(f".{dst.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if dst.exists():
        os.replace(dst, old)
    os.replace(src, dst)
    shutil.rmtree(old, ignore_errors=True)


def existing(paths: dict) -> dict:
    """The entries of {name: path} whose file or folder exists: e.g. the outputs of the RMs in params that
    have run (a removed RM's stale file is not among them)."""
    return {k: v for k, v in paths.items() if Path(v).exists()}


_HASHED: dict[tuple, str] = {}   # (path, device, inode, size, mtime_ns) -> sha256, for this process


def file_hash(path: str | Path) -> str:
    """sha256 of a file's bytes, remembered by the file's stat as DVC's state db does: per process, and across
    processes in the store tasks/core/hash_store.py keeps when a stage sets one up. A chunked stage keys its task
    and then its chunks on the same inputs; each stage's fresh process keyed on an 88 MB model folder again."""
    st = os.stat(path)
    sig = (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if sig not in _HASHED:
        known = hash_store.recall(sig)
        if known is None:
            h = hashlib.sha256()
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            known = h.hexdigest()
            hash_store.remember(sig, known)
        _HASHED[sig] = known
    return _HASHED[sig]


def tree_hash(paths) -> str:
    """One hash over files or folders (relative names and contents), for task cache keys.
    Location-independent, so a moved checkout keeps its cache."""
    h = hashlib.sha256()
    for p in sorted(Path(p) for p in paths):
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            name = f.relative_to(p).as_posix() if p.is_dir() else p.name
            h.update(name.encode() + b"\0" + (file_hash(f) if f.exists() else "absent").encode() + b"\0")
    return h.hexdigest()


def text_hash(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
