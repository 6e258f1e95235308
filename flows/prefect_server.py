"""`prefect server start`, with the server's SQLite write transactions begun IMMEDIATE.

Prefect begins a write transaction DEFERRED: it reads, then asks for the write lock. In WAL mode, when
another connection committed in between, SQLite answers SQLITE_BUSY at once (the busy timeout does not
apply to a stale snapshot); the server turns that into a 503 and the client sleeps 2 s before retrying.
With two stages creating flow runs while the server records their task runs, that was one retry in six
flow runs at 100 RMs (~72 s of sleep in a 160 s `prbench run --jobs 2`). BEGIN IMMEDIATE takes the write
lock first, so a writer waits its turn (SQLite's busy timeout, 60 s in Prefect) instead: SQLite's own
advice for writers. Reads outside a transaction are unchanged; other databases (PostgreSQL) untouched.

    python -m flows.prefect_server start --host 127.0.0.1 --port 4200   # as `prefect server start ...`
"""
from __future__ import annotations

import runpy
import sys
from contextlib import asynccontextmanager


def immediate_writes() -> None:
    from prefect.server.database import configurations

    sqlite = configurations.AioSqliteConfiguration
    if getattr(sqlite.begin_transaction, "immediate", False):
        return
    deferred = sqlite.begin_transaction

    @asynccontextmanager
    async def begin_transaction(self, session, with_for_update: bool = False):
        async with deferred(self, session, with_for_update=True) as transaction:
            yield transaction

    begin_transaction.immediate = True
    sqlite.begin_transaction = begin_transaction


def main(argv: list[str]) -> None:
    immediate_writes()
    sys.argv = ["prefect", "server", *argv]
    runpy.run_module("prefect", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
