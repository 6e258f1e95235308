"""The warm server (`python -m flows.warm_server <socket>`): preloads what stage processes import, then
forks one child per accepted stage command, refusing any fork that could differ from a plain process
(flows/warm.py tells the whole story)."""
from __future__ import annotations

import gc
import os
import signal
import socket
import sys

from flows.warm import GRACE_S, OWN_KEYS, receive, send
from flows.warm_preload import no_heartbeats, preload, warm_params


def project_files(root: str) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every loaded module's source under the project root."""
    out = {}
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and f.startswith(root + os.sep) and not f.startswith(sys.prefix + os.sep):   # not a venv inside
            try:
                st = os.stat(f)
                out[f] = (st.st_mtime_ns, st.st_size)
            except OSError:
                out[f] = (0, -1)
    return out


def refusal(request: dict, env: dict, code: dict, root: str) -> str | None:
    """Why this request must not run in a fork (None: it may)."""
    import threading

    theirs = {k: v for k, v in request["env"].items() if k not in OWN_KEYS}
    mine = {k: v for k, v in env.items() if k not in OWN_KEYS}
    if theirs != mine:
        keys = sorted(k for k in theirs.keys() | mine.keys() if theirs.get(k) != mine.get(k))
        return f"its environment differs from the warm server's: {', '.join(keys[:5])}"
    now = project_files(root)
    changed = [f for f, stamp in code.items() if now.get(f, stamp) != stamp]
    if changed:
        return f"project code changed since the warm server started: {os.path.relpath(changed[0], root)}"
    # a thread's locks would be held forever in the fork; the lifeline's only sleeps and polls its parent
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread() and t.name != "lifeline"]
    if others:
        return f"the warm server has a Python thread running ({others[0]})"
    return None


def serve(path: str, log=sys.stderr) -> None:
    """Accept stage requests on `path` until killed; fork one child per accepted request."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    signal.signal(signal.SIGTERM, lambda *_: _leave(path))   # what the lifeline sends when `prbench run` died
    env = dict(os.environ)   # what it was started with: a client must come with the same
    preload()
    code = project_files(root)
    added = {k: v for k, v in os.environ.items() if k not in env}   # what imports set (torch's KMP_*), as they would
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    os.rename(path + ".tmp", path)   # ready only once bound: a client sees no socket or a working one
    listener.listen(8)
    listener.settimeout(1.0)
    print(f"warm: ready ({len(code)} project modules loaded)", file=log, flush=True)
    while True:
        _reap()
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        conn.settimeout(None)
        try:
            request, fds = receive(conn, with_fds=3)
        except (OSError, EOFError, ValueError):
            conn.close()
            continue
        why = refusal(request, env, code, root)
        if why:
            print(f"warm: refused {request['module']} {request['args']}: {why}", file=log, flush=True)
            send(conn, {"refused": why})
        else:
            warm_params(request["cwd"])
            sys.stdout.flush()
            sys.stderr.flush()
            # the fork's collections skip what is here now: a full one walked every object torch & co. left,
            # writing to each page it touched (copy-on-write), ~0.2 s of a stage's CPU at a hundred RMs
            gc.freeze()
            pid = os.fork()
            if pid == 0:
                listener.close()
                _child(conn, request, fds, added)   # never returns
            gc.unfreeze()
            print(f"warm: served {request['module']} {' '.join(request['args'])} (pid {pid})", file=log, flush=True)
        for fd in fds:
            os.close(fd)
        conn.close()


def _leave(path: str) -> None:
    """Exit and take the socket's private temp folder along (prbench-warm-*)."""
    import shutil

    shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    os._exit(128 + signal.SIGTERM)


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _child(conn: socket.socket, request: dict, fds: list[int], added: dict) -> None:
    rc = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)   # a stage ends on SIGTERM as a plain process would
        os.setpgid(0, 0)   # a group of its own, as the client forwards signals to it (and its children)
        inherited_finalizers_off()
        send(conn, {"pid": os.getpid()})
        _watch_client(conn)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update({**request["env"], **added})
        _adopt_stdio(fds)
        rc = _run(request["module"], request["args"])
    except BaseException:   # noqa: BLE001 - whatever happens, the client gets a status
        import traceback

        traceback.print_exc()
    finally:
        try:
            send(conn, {"rc": rc})
        except OSError:
            pass
        os._exit(rc)


def inherited_finalizers_off() -> None:
    """The weakref finalizers a fork inherits are the server's (torch's operator libraries, ~180): its exit need
    not run them (~0.03 s a stage, each touching pages copy-on-write), and must not run one that removes a
    resource the server still holds. Finalizers the stage makes itself run at its exit as ever."""
    import weakref

    for finalizer in list(weakref.finalize._registry):   # noqa: SLF001 - the registry atexit runs
        finalizer.atexit = False


def _adopt_stdio(fds: list[int]) -> None:
    """The client's stdin/stdout/stderr become this process's, buffered as Python buffers them for
    such files (line-buffered on a terminal, unbuffered with PYTHONUNBUFFERED)."""
    import io

    for fd, target in zip(fds, (0, 1, 2)):
        os.dup2(fd, target)
        os.close(fd)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    for name, fd in (("stdout", 1), ("stderr", 2)):
        old = getattr(sys, name)
        new = io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding=old.encoding, errors=old.errors,
                               line_buffering=fd == 2 or unbuffered or os.isatty(fd), write_through=unbuffered)
        setattr(sys, name, new)
        setattr(sys, f"__{name}__", new)
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=sys.stdin.encoding)


def _run(module: str, args: list[str]) -> int:
    """`python -m module args` in this process: the early params check, the module as __main__, then
    what interpreter exit does (non-daemon threads joined, atexit handlers) before the status."""
    import atexit
    import runpy
    import threading

    from flows import refuse_bad_params_early

    rc = 0
    sys.argv = [module, *args]
    # `python -m` runs the module's file as __main__ without importing it under its own name first: the copy
    # preload() imported would make runpy warn ("found in sys.modules ... prior to execution") in every stage
    sys.modules.pop(module, None)
    try:
        refuse_bad_params_early(module, args)
        with no_heartbeats():
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            rc = 0
        elif isinstance(code, int):
            rc = code
        else:
            print(code, file=sys.stderr)
            rc = 1
    except BaseException:   # noqa: BLE001 - as the interpreter: the traceback, status 1
        import traceback

        traceback.print_exc()
        rc = 1
    threading._shutdown()   # noqa: SLF001 - what the interpreter runs at exit
    atexit._run_exitfuncs()  # noqa: SLF001
    sys.stdout.flush()
    sys.stderr.flush()
    return rc


def _watch_client(conn: socket.socket) -> None:
    """End this fork (and its group) when the client goes away before it has finished."""
    import threading
    import time

    def watch():
        try:
            while conn.recv(1):
                pass
        except OSError:
            pass
        os.killpg(0, signal.SIGTERM)
        time.sleep(GRACE_S)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="warm-client", daemon=True).start()


if __name__ == "__main__":
    serve(sys.argv[1])
