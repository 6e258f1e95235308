"""A real Dask cluster on 127.0.0.1 for tests and benchmarks: `dask scheduler` and `dask worker`
processes from this venv, each the leader of its own process group, so stopping (or killing) one
takes its children along and nothing outlives the test."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DASK = str(Path(sys.executable).parent / "dask")


class DaskCluster:
    def __init__(self, workdir: Path, env: dict | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "PREFECT_HOME": str(self.workdir / "prefect-home"), **(env or {})}
        self.procs: dict[str, subprocess.Popen] = {}
        self.address: str | None = None

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, cwd=self.workdir, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs[name] = proc
        return proc

    def start(self, workers: dict[str, dict] | None = None, timeout: float = 180) -> "DaskCluster":
        """Scheduler plus workers {name: {resource: amount}} (one thread each, no nanny: a killed worker stays dead)."""
        info = self.workdir / "scheduler.json"
        info.unlink(missing_ok=True)
        self._spawn("scheduler", [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  "--scheduler-file", str(info)])
        self._wait(lambda: info.exists() and json.loads(info.read_text() or "{}").get("address"), timeout, "scheduler")
        self.address = json.loads(info.read_text())["address"]
        for name, resources in (workers or {}).items():
            self.add_worker(name, resources)
        self.wait_for_workers(len(workers or {}), timeout)
        return self

    def add_worker(self, name: str, resources: dict | None = None) -> None:
        argv = [DASK, "worker", self.address, "--name", name, "--nthreads", "1", "--no-nanny", "--no-dashboard"]
        if resources:
            argv += ["--resources", ",".join(f"{k}={v}" for k, v in resources.items())]
        self._spawn(name, argv)

    def client(self):
        from distributed import Client

        return Client(self.address, timeout=60)

    def workers(self) -> dict[str, str]:
        """{worker name: address} as the scheduler sees them now."""
        with self.client() as c:
            return {w["name"]: addr for addr, w in c.scheduler_info(n_workers=-1)["workers"].items()}

    def wait_for_workers(self, n: int, timeout: float = 180) -> None:
        self._wait(lambda: len(self.workers()) >= n, timeout, f"{n} workers")

    def kill(self, name: str) -> None:
        """SIGKILL a process's whole group, as a machine dying would."""
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop(self) -> None:
        for name, proc in reversed(list(self.procs.items())):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=15)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    self.kill(name)

    def alive(self) -> list[str]:
        """Names whose process group still has a member (the process or anything it started), as `ps` would list."""
        out = []
        for name, proc in self.procs.items():
            try:
                os.killpg(proc.pid, 0)
                out.append(name)
            except ProcessLookupError:
                pass
        return out

    def _wait(self, ready, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if ready():
                    return
            except (OSError, ValueError):
                pass
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{dead} exited; see {self.workdir}/{dead[0]}.log")
            time.sleep(0.5)
        raise TimeoutError(f"no {what} after {timeout:.0f} s; logs in {self.workdir}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
