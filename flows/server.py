"""A Prefect server on 127.0.0.1 that prbench starts and stops: one per `prbench run`, so every DVC
stage process reports to it (about 3 s per stage instead of a 7-15 s ephemeral server each), or a
persistent one for `prbench serve` (a project-local PREFECT_HOME keeps runs across restarts).

The server runs in its own process group (stopped by signalling the group) and dies with the
process that started it even on SIGKILL (flows/lifeline.py). Its UI asks its API at
PREFECT_UI_API_URL, so that is set to the server's own address whatever the port."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from flows import lifeline


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def healthy(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as r:
            return r.status == 200
    except (OSError, ValueError):   # ValueError: not a URL urllib can open
        return False


def ui_api_url(api_url: str) -> str | None:
    """The API address the server's UI tells the browser to use (its /ui-settings)."""
    base = api_url.removesuffix("/api")
    with urllib.request.urlopen(f"{base}/ui-settings", timeout=5) as r:
        return json.load(r).get("api_url")


@dataclass
class Server:
    api_url: str
    process: subprocess.Popen
    log: Path

    @property
    def ui_url(self) -> str:
        return self.api_url.removesuffix("/api")

    def client_env(self) -> dict:
        """What a client process needs to report to this server (and print links into its UI)."""
        return {"PREFECT_API_URL": self.api_url, "PREFECT_UI_URL": self.ui_url}

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM the server's process group; SIGKILL it if it is still up after `timeout`."""
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=timeout)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


# What a server that lives for one `prbench run` leaves off: schedules, automations, the sweeps of late,
# paused and cancelled runs and the database's housekeeping act for a server that outlives its runs. The
# run's flow and task runs, logs, events and artifacts are recorded as ever. (~0.7 s of CPU at its start.)
RUN_ONLY_OFF = ("SCHEDULER", "LATE_RUNS", "FOREMAN", "PAUSE_EXPIRATIONS", "CANCELLATION_CLEANUP", "REPOSSESSOR",
                "DB_VACUUM", "CLEANUP_RECONCILER", "TRIGGERS")


def start(home: str | Path | None = None, port: int | None = None, timeout: float = 300,
          for_one_run: bool = False) -> Server:
    """Start `prefect server start` on 127.0.0.1:`port` (a free one by default) with PREFECT_HOME
    = `home` (default: the environment's) and wait until /health answers. `for_one_run`: the services
    only a lasting server needs are off (RUN_ONLY_OFF)."""
    home = Path(home or os.environ["PREFECT_HOME"]).resolve()
    home.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    if port_in_use(port):
        from tasks.core.errors import ConfigError

        raise ConfigError(f"port {port} on 127.0.0.1 is in use; pick another (--port) or stop what runs there")
    url = f"http://127.0.0.1:{port}/api"
    log = home / "server.log"
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_API_URL": url, "PREFECT_UI_API_URL": url,
           "PREFECT_UI_URL": url.removesuffix("/api"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           **({f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false" for name in RUN_ONLY_OFF} if for_one_run else {})}
    with open(log, "ab") as out:
        proc = subprocess.Popen(lifeline.command("flows.prefect_server", "start", "--host", "127.0.0.1", "--port", str(port)),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    server = Server(url, proc, log)
    deadline = time.monotonic() + timeout
    while not healthy(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            server.stop()
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"Prefect server did not start on port {port}; see {log}:\n{tail}")
        time.sleep(0.3)
    return server


@contextmanager
def local_server(timeout: float = 300, home: str | Path | None = None, port: int | None = None):
    """Yield the API URL of a fresh server; stop it (its process group) afterwards."""
    server = start(home, port, timeout)
    try:
        yield server.api_url
    finally:
        server.stop()
