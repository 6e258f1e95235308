"""Warm stage processes: `prbench run` starts one process that imports Prefect, torch, transformers,
sentence-transformers and every stage's code once; each stage command DVC runs (`python -m flows.stage ...`)
then hands itself to it and runs in a fork of it, instead of paying those imports (2-10 s) again.

DVC still runs one command per stage, in its order, and sees its exit status and output: the client
(this module's `hand_off`, reached from flows/__init__ before anything heavy is imported) passes its
argv, cwd, environment and stdin/stdout/stderr over a unix socket, forwards signals to the fork and
exits with its status. The fork runs the stage exactly as `python -m` would (runpy, the same early
params check). It is refused, and the command runs as a plain process instead, whenever the fork
could differ from one: another environment than the server's, project code edited since the server
imported it, a Python thread in the server. A fork whose client dies (SIGKILL) ends itself, as a
stage process would die with it.

The server lives as long as `prbench run` (lifeline); its socket lives in a private temp folder."""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys

ENV = "PRBENCH_WARM"          # the server's socket path, in the environment of `dvc repro` only
# what DVC (and prbench run) add for each stage command, and what the shell DVC runs it in sets
OWN_KEYS = {ENV, "DVC_ROOT", "DVC_STAGE", "PS1", "PS2", "PS4", "SHLVL", "_", "PWD", "OLDPWD", "COLUMNS", "LINES"}
GRACE_S = 10.0


# --- the wire: length-prefixed JSON messages -----------------------------------------------------

def send(conn: socket.socket, msg: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(msg).encode()
    head = struct.pack("!I", len(data))
    if fds:
        socket.send_fds(conn, [head + data], fds)
    else:
        conn.sendall(head + data)


def _exactly(conn: socket.socket, n: int, first: bytes = b"") -> bytes:
    buf = first
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError("the other end closed")
        buf += chunk
    return buf


def receive(conn: socket.socket, with_fds: int = 0) -> tuple[dict, list[int]]:
    fds: list[int] = []
    if with_fds:
        first, fds, _, _ = socket.recv_fds(conn, 1 << 16, with_fds)
        if not first:
            raise EOFError("the other end closed")
    else:
        first = b""
    head = _exactly(conn, 4, first[:4])
    size = struct.unpack("!I", head)[0]
    return json.loads(_exactly(conn, size, first[4:])), fds


# --- the client: what a stage command does first ---------------------------------------------------

def hand_off(module: str, args: list[str]) -> None:
    """Run `python -m module args` in a fork of the warm server and exit with its status; return
    (having done nothing) when there is no server or it refuses, so the caller runs it itself."""
    path = os.environ.get(ENV)
    if not path:
        return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        send(conn, {"module": module, "args": args, "cwd": os.getcwd(), "env": dict(os.environ)}, [0, 1, 2])
        reply, _ = receive(conn)
    except (OSError, EOFError):
        conn.close()
        return
    if "pid" not in reply:   # refused: say why once, run as a plain process
        conn.close()
        print(f"prbench: {module} runs in its own process ({reply.get('refused', 'refused')})", file=sys.stderr)
        return
    pgid = reply["pid"]

    def forward(sig, _frame):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        rc = receive(conn)[0].get("rc", 1)
    except (OSError, EOFError):
        print(f"prbench: the warm process of {module} ended without an exit status", file=sys.stderr)
        rc = 1
    os._exit(rc)


# --- the server ------------------------------------------------------------------------------------

def preload() -> None:
    """What stage processes import: every stage's modules, and the heavy libraries their tasks import late."""
    import importlib

    from tasks.core.stage_table import TABLE

    for name in ("torch", "transformers", "sentence_transformers", "llama_cpp", "trl", "sklearn.metrics",
                 "scipy.stats", "matplotlib.pyplot"):
        try:
            importlib.import_module(name)
        except Exception:   # an optional extra not installed: its stages import it (or fail) themselves
            pass
    for module in dict.fromkeys(m for stage in TABLE for m in stage.code):   # each stage's flow, logic, runner
        importlib.import_module(module)


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
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                _child(conn, request, fds, added)   # never returns
            print(f"warm: served {request['module']} {' '.join(request['args'])} (pid {pid})", file=log, flush=True)
        for fd in fds:
            os.close(fd)
        conn.close()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _child(conn: socket.socket, request: dict, fds: list[int], added: dict) -> None:
    rc = 1
    try:
        os.setpgid(0, 0)   # a group of its own, as the client forwards signals to it (and its children)
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

    import flows

    rc = 0
    sys.argv = [module, *args]
    try:
        flows.refuse_bad_params_early(module, args)
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


# --- its life under `prbench run` -------------------------------------------------------------------

class Warm:
    """A started server: `env` is what the stage commands' environment adds (nothing when it failed)."""

    def __init__(self, env: dict, log_path: str):
        import subprocess
        import tempfile

        from flows import lifeline

        self.folder = tempfile.mkdtemp(prefix="prbench-warm-")   # 0700: only this user can hand it code
        self.socket, self.log_path, self.env = os.path.join(self.folder, "sock"), log_path, {}
        self.start = os.path.getsize(log_path) if os.path.exists(log_path) else 0
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(lifeline.command("flows.warm", self.socket), stdout=log,
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


if __name__ == "__main__":
    serve(sys.argv[1])
