"""File hashes kept across processes: every stage runs in a fresh process (a fork of the warm server), which
hashed its inputs again each time: the score stage of a `random` RM spent ~0.7 s of its ~1.2 s hashing an 88 MB
model folder it keys on. A SQLite file under common.cache_dir remembers each file's sha256 by its stat, the key
DVC's own state db uses (path, device, inode, size, mtime_ns); our writes replace files by rename, a new inode.

A hash is stored only once its file is RACY_S old: a file changed again within its mtime's granularity (1-2 s
on some filesystems) would keep a stale stat key (git's "racy" rule). The store is a cache, never a source: one
that cannot be opened, read or written is skipped, and the bytes are hashed as if it were not there."""
from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path

RACY_S = 2.0
_HEX = re.compile(r"[0-9a-f]{64}")
_STORE: dict = {"path": None, "pid": None, "db": None}


def use(path: str | Path | None) -> None:
    """Keep hashes in the SQLite file at `path` from now on in this process and its forks (None: none kept)."""
    _STORE.update(path=None if path is None else os.path.abspath(path), pid=None, db=None)


def _db():
    if _STORE["path"] is None:
        return None
    if _STORE["pid"] != os.getpid():   # a fork opens its own connection: a shared one corrupts the file
        try:
            Path(_STORE["path"]).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(_STORE["path"], timeout=10, isolation_level=None)
            db.execute("CREATE TABLE IF NOT EXISTS file_hash (path TEXT PRIMARY KEY, stat TEXT, sha256 TEXT)")
        except (OSError, sqlite3.Error):
            db = None
        _STORE.update(pid=os.getpid(), db=db)
    return _STORE["db"]


def _stat(sig: tuple) -> str:
    return " ".join(map(str, sig[1:]))


def recall(sig: tuple) -> str | None:
    """The sha256 stored for `sig` (path, device, inode, size, mtime_ns), if its stat still matches."""
    db = _db()
    if db is None:
        return None
    try:
        row = db.execute("SELECT stat, sha256 FROM file_hash WHERE path = ?", (sig[0],)).fetchone()
    except sqlite3.Error:
        return None
    return row[1] if row and row[0] == _stat(sig) and _HEX.fullmatch(str(row[1])) else None


def remember(sig: tuple, sha256: str) -> None:
    db = _db()
    if db is None or time.time() - sig[4] / 1e9 < RACY_S:
        return
    try:
        db.execute("INSERT OR REPLACE INTO file_hash VALUES (?, ?, ?)", (sig[0], _stat(sig), sha256))
    except sqlite3.Error:
        pass
