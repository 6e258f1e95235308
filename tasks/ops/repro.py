"""`dvc repro` (or any dvc command) as a child process, its output streamed line by line, with
the stages that ran and the tail of the output kept for the run's result and failure message."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

RUNNING = re.compile(r"Running stage '([^']+)'")


@dataclass
class DvcResult:
    rc: int
    ran: list[str] = field(default_factory=list)   # stages DVC ran, in order
    tail: list[str] = field(default_factory=list)  # last output lines

    def error(self, lines: int = 6) -> str:
        """The last few lines of output: the stage's own one-line error and DVC's verdict."""
        return " | ".join(line for line in self.tail[-lines:] if line.strip())


def dvc_env() -> dict:
    """The environment of a dvc child: this venv's tools first on PATH (stages run `python -m ...`),
    and none of Prefect's per-run variables, so stage processes start flow runs of their own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT__")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("DVC_NO_ANALYTICS", "1")
    return env


def _end_tree(proc: subprocess.Popen, grace: float = 20) -> None:
    """SIGTERM a child and all its descendants (dvc's stage processes), SIGKILL what is left after `grace`."""
    import psutil   # a dependency of dvc

    try:
        procs = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait()


def dvc(root, *args: str, log=print, tail: int = 40, env: dict | None = None) -> DvcResult:
    """Run `dvc ARGS` in `root` (`env`: more variables for it); every output line goes to `log` as it comes."""
    exe = Path(sys.executable).with_name("dvc")
    proc = subprocess.Popen([str(exe) if exe.exists() else "dvc", *args], cwd=root, env={**dvc_env(), **(env or {})},
                            text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1)
    ran, last = [], deque(maxlen=tail)
    try:
        for line in proc.stdout:
            line = line.rstrip("\n")
            log(line)
            last.append(line)
            if m := RUNNING.search(line):
                ran.append(m.group(1))
    except BaseException:   # stopped (SIGTERM, Ctrl-C): dvc and its stage go too, before the caller rolls back
        _end_tree(proc)
        raise
    return DvcResult(proc.wait(), ran, list(last))
