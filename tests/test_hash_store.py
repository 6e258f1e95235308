"""File hashes kept across stage processes (tasks/core/hash_store.py): a file unchanged since a stage hashed
it is not read again by the next stage; any change of its stat is hashed afresh; a store that is fresh,
unreadable or tampered with never changes a hash, it only costs the reading."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import time

import pytest

from tasks.core import artifacts, hash_store


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "_HASHED", {})
    db = tmp_path / "cache" / "file-hashes.sqlite"
    hash_store.use(db)
    yield db
    hash_store.use(None)


def _old(path, by=3600):
    os.utime(path, (time.time() - by, time.time() - by))
    return path


def _new_process(monkeypatch):
    """What a stage's fresh process has: no hashes in memory (the store on disk stays)."""
    monkeypatch.setattr(artifacts, "_HASHED", {})
    hash_store._STORE.update(pid=None, db=None)


class NoHashing:
    def sha256(self):
        raise AssertionError("the file was read and hashed again")


def test_a_file_hashed_by_one_stage_is_not_read_by_the_next(store, tmp_path, monkeypatch):
    f = tmp_path / "model.bin"
    f.write_bytes(b"weights" * 1000)
    _old(f)
    first = artifacts.file_hash(f)
    assert first == hashlib.sha256(b"weights" * 1000).hexdigest()
    _new_process(monkeypatch)
    monkeypatch.setattr(artifacts, "hashlib", NoHashing())
    assert artifacts.file_hash(f) == first


def test_any_change_of_the_file_is_hashed_afresh(store, tmp_path, monkeypatch):
    f = tmp_path / "data.parquet"
    f.write_bytes(b"a" * 100)
    _old(f)
    artifacts.file_hash(f)
    for content, by in ((b"b" * 100, 1800), (b"c" * 101, 1800), (b"d" * 101, 900)):   # same size; same mtime; both new
        f.write_bytes(content)
        _old(f, by)
        _new_process(monkeypatch)
        assert artifacts.file_hash(f) == hashlib.sha256(content).hexdigest()
    g = tmp_path / "replaced"
    g.write_bytes(b"e" * 101)
    _old(g, 900)
    os.replace(g, f)   # our writes: a rename, a new inode with the old size and mtime
    _new_process(monkeypatch)
    assert artifacts.file_hash(f) == hashlib.sha256(b"e" * 101).hexdigest()


def test_a_file_written_just_now_is_not_remembered(store, tmp_path, monkeypatch):
    """Its next edit may keep the same mtime (the clock's granularity) and size: such a stat is not trusted."""
    f = tmp_path / "fresh"
    f.write_bytes(b"x" * 10)
    artifacts.file_hash(f)
    rows = sqlite3.connect(store).execute("SELECT count(*) FROM file_hash").fetchone()[0]
    assert rows == 0


@pytest.mark.parametrize("damage", ["not a database", "a wrong hash", "no folder to write in"])
def test_a_broken_store_changes_no_hash(store, tmp_path, monkeypatch, damage):
    f = tmp_path / "in.bin"
    f.write_bytes(b"payload")
    _old(f)
    truth = hashlib.sha256(b"payload").hexdigest()
    if damage == "not a database":
        store.parent.mkdir(parents=True)
        store.write_bytes(b"garbage" * 200)
    elif damage == "a wrong hash":
        artifacts.file_hash(f)
        with sqlite3.connect(store) as db:
            db.execute("UPDATE file_hash SET sha256 = ?", ("not hex; " + "0" * 55,))
    else:
        store.parent.write_text("a file where the folder should be")
    _new_process(monkeypatch)
    assert artifacts.file_hash(f) == truth


def test_a_forked_stage_opens_its_own_connection(store, tmp_path, monkeypatch):
    f = tmp_path / "shared.bin"
    f.write_bytes(b"s" * 50)
    _old(f)
    artifacts.file_hash(f)   # the parent's connection is open
    monkeypatch.setattr(artifacts, "_HASHED", {})
    pid = os.fork()
    if pid == 0:
        ok = artifacts.file_hash(f) == hashlib.sha256(b"s" * 50).hexdigest() and hash_store._STORE["pid"] == os.getpid()
        os._exit(0 if ok else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert artifacts.file_hash(f) == hashlib.sha256(b"s" * 50).hexdigest()
