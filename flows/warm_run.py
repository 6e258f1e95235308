"""The warm stage server's life under `prbench run` (flows/warm.py): started before `dvc repro`, its
socket handed to the stage commands, stopped after with one line on what it served."""
from __future__ import annotations

import os
import signal

from flows.warm import ENV, GRACE_S

SUN_PATH_MAX = 107   # an AF_UNIX path: 108 bytes with its NUL


def socket_folder() -> str:
    """A private temp folder (0700: only this user can hand the server code) whose socket path binds: in
    TMPDIR, else in /tmp when TMPDIR is so deep that the path would pass the limit (pytest's under xdist did,
    and the server never started)."""
    import tempfile

    folder = tempfile.mkdtemp(prefix="prbench-warm-")
    if len(os.path.join(folder, "sock.tmp").encode()) <= SUN_PATH_MAX:
        return folder
    os.rmdir(folder)
    return tempfile.mkdtemp(prefix="prbench-warm-", dir="/tmp")


class Warm:
    """A started server: `env` is what the stage commands' environment adds (nothing when it failed)."""

    def __init__(self, env: dict, log_path: str):
        import subprocess

        from flows import lifeline

        self.folder = socket_folder()
        self.socket, self.log_path, self.env = os.path.join(self.folder, "sock"), log_path, {}
        self.start = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(lifeline.command("flows.warm_server", self.socket), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True, env=env)

    def wait_ready(self, timeout: float = 180) -> dict:
        import time

        deadline = time.monotonic() + timeout
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                return {}   # the stages run as plain processes
            time.sleep(0.2)
        self.env = {ENV: self.socket}
        return self.env

    def stop(self) -> str:
        """Stop the server; one line on what it did this run."""
        import shutil

        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=GRACE_S)
        except ProcessLookupError:
            pass
        except Exception:   # noqa: BLE001 - it did not stop: take it down
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
        with open(self.log_path, "rb") as log:
            log.seek(self.start)
            lines = log.read().decode(errors="replace").splitlines()
        served = sum(line.startswith("warm: served") for line in lines)
        refused = [line for line in lines if line.startswith("warm: refused")]
        if not self.env:
            return f"prbench: the warm stage server did not start (see {self.log_path}); stages ran as plain processes"
        return (f"prbench: {served} stage command(s) ran in warm forks, {len(refused)} as plain processes"
                + (f" ({refused[0].split(': ', 2)[-1]})" if refused else ""))
