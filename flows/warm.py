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

The server lives as long as `prbench run` (lifeline); its socket lives in a private temp folder. This module
is the client and the wire, which every stage process imports: it imports nothing heavy. The server is
flows/warm_server.py, its life under `prbench run` flows/warm_run.py."""
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
