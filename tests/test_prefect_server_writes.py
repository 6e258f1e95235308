"""The Prefect server prbench starts begins its SQLite write transactions IMMEDIATE (flows/prefect_server.py):
a DEFERRED one that read before a concurrent commit gets SQLITE_BUSY at once, a 503 and a 2 s client retry."""
import asyncio
import subprocess
import sys
from contextlib import asynccontextmanager

from flows import server


class _Session:
    @asynccontextmanager
    async def begin(self):
        yield "transaction"


def _mode_inside(with_for_update: bool) -> str:
    from prefect.server.database.configurations import SQLITE_BEGIN_MODE, AioSqliteConfiguration

    async def go():
        config = AioSqliteConfiguration("sqlite+aiosqlite:///:memory:")
        async with config.begin_transaction(_Session(), with_for_update=with_for_update):
            return SQLITE_BEGIN_MODE.get()
    return asyncio.run(go())


def test_every_write_transaction_begins_immediate():
    code = ("from tests.test_prefect_server_writes import _mode_inside; from flows.prefect_server import immediate_writes;"
            "print(_mode_inside(False)); immediate_writes(); immediate_writes(); print(_mode_inside(False), _mode_inside(True))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["DEFERRED", "IMMEDIATE", "IMMEDIATE"]   # Prefect's own default first, then ours


def test_the_run_server_is_started_through_it(monkeypatch, tmp_path):
    seen = []

    class Stop(Exception):
        pass

    def popen(argv, *a, **k):
        seen.append(argv)
        raise Stop

    monkeypatch.setattr(server.subprocess, "Popen", popen)
    try:
        server.start(tmp_path)
    except Stop:
        pass
    assert "flows.prefect_server" in seen[0] and seen[0][seen[0].index("flows.prefect_server") + 1] == "start"
