"""Servers die with their parent, even when the parent is SIGKILLed.

`command(MODULE, ARGS...)` is the argv of a child that runs MODULE as `python -m MODULE ARGS...`
would, plus a watchdog thread: once the process that built the argv is no longer its parent (it
died and the child was re-parented), the child SIGTERMs itself (its whole process group when it
leads one), then SIGKILLs after a grace period. A polled parent pid rather than
prctl(PR_SET_PDEATHSIG): that signal fires when the *thread* that forked the child ends, and
Prefect starts its ephemeral server from worker threads.

`install()` routes Prefect's own ephemeral server (SubprocessASGIServer, which runs
`python -m uvicorn ...`) through this wrapper. It patches lazily, when Prefect's server module is
first imported, so the ~3 s import is paid only by processes that start a server."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import types

SERVER_MODULE = "prefect.server.api.server"
_MAIN = "import sys; from flows.lifeline import main; main(sys.argv[1:])"
POLL_S = 0.5
GRACE_S = 10.0


def command(module: str, *args: str) -> list[str]:
    """The argv that runs `python -m module args...` tied to this process's life."""
    # -c, not -m: flows/__init__ imports this module, and runpy warns when re-running it as __main__
    return [sys.executable, "-c", _MAIN, "--parent", str(os.getpid()), module, *args]


def _stop(sig: int) -> None:
    if os.getpgid(0) == os.getpid():   # a session/group leader (start_new_session): take the group along
        os.killpg(os.getpid(), sig)
    else:                              # Prefect's ephemeral server shares the stage's group: only us
        os.kill(os.getpid(), sig)


def watch_parent(parent: int) -> None:
    def watch():
        while os.getppid() == parent:
            time.sleep(POLL_S)
        _stop(signal.SIGTERM)          # uvicorn shuts down cleanly on SIGTERM
        time.sleep(GRACE_S)
        _stop(signal.SIGKILL)

    threading.Thread(target=watch, name="lifeline", daemon=True).start()


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[0] != "--parent":
        sys.exit("usage: main(['--parent', PID, MODULE, *ARGS])")
    parent, module = int(argv[1]), argv[2]
    if os.getppid() != parent:         # the parent died before we got here
        sys.exit(1)
    watch_parent(parent)
    sys.argv = [module, *argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


# --- Prefect's ephemeral server ----------------------------------------------------------------
class _Subprocess(types.ModuleType):
    """`subprocess` as Prefect's server module sees it: Popen of `python -m X` goes via the lifeline."""

    def __init__(self):
        super().__init__("subprocess")

    def __getattr__(self, name):
        return getattr(subprocess, name)

    @staticmethod
    def Popen(args, *rest, **kwargs):   # noqa: N802 - the name Prefect calls
        args = list(args)
        if args[:2] == [sys.executable, "-m"] and len(args) > 2:
            args = command(*args[2:])
        return subprocess.Popen(args, *rest, **kwargs)


def patch(module) -> None:
    module.subprocess = _Subprocess()


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != SERVER_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


def install() -> None:
    """Make every ephemeral Prefect server this process starts die with it."""
    if SERVER_MODULE in sys.modules:
        patch(sys.modules[SERVER_MODULE])
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
