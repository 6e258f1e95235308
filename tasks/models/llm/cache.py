"""Durable store of LLM call results, keyed by a hash of everything that determines the answer.

Every put commits at once (WAL mode), so a killed run loses nothing already answered and a
rerun resumes from the cache. Safe to share between the client's worker threads.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path


def call_key(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


class CallCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=60)
        with self._lock, self._db:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, op TEXT, "
                             "response TEXT, tokens_in INTEGER, tokens_out INTEGER, "
                             "latency_s REAL, created REAL)")

    def get(self, key: str) -> dict | None:
        """{"op", "response" (decoded JSON), "tokens_in", "tokens_out", "latency_s"} or None."""
        with self._lock:
            row = self._db.execute("SELECT op, response, tokens_in, tokens_out, latency_s "
                                   "FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        op, response, tokens_in, tokens_out, latency_s = row
        return {"op": op, "response": json.loads(response), "tokens_in": tokens_in,
                "tokens_out": tokens_out, "latency_s": latency_s}

    def put(self, key: str, op: str, response: dict, *, tokens_in: int = 0, tokens_out: int = 0,
            latency_s: float = 0.0) -> None:
        with self._lock, self._db:   # the `with db` block commits before the lock is released
            self._db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (key, op, json.dumps(response, ensure_ascii=False), int(tokens_in),
                              int(tokens_out), float(latency_s), time.time()))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __repr__(self) -> str:
        return f"CallCache({str(self.path)!r})"
