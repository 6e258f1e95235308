"""Warm stage processes (flows/warm.py): a stage command handed to a fork of a server that imported
everything once behaves as the plain process would (argv, cwd, environment, stdio, exit status, the
early params check), and is refused back to a plain process whenever the fork could differ."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows import warm, warm_server
from tasks.core import numerics
from tests.conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]   # the server imports torch, transformers, sentence-transformers: ~10 s

CLIENT = "import sys; from flows.warm import hand_off; hand_off(sys.argv[1], sys.argv[2:]); print('ran plain')"


def _env(**extra) -> dict:
    # pytest changes PYTEST_CURRENT_TEST per test; the numerics are left for flows/__init__ to pin, as in a shell
    env = {k: v for k, v in os.environ.items()
           if k not in (warm.ENV, "PYTEST_CURRENT_TEST", numerics.REPLACED_ENV, *numerics.MKL_PINS, *numerics.ISA_PINS)}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm")
    sock, log = folder / "sock", folder / "log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "flows.warm_server", str(sock)], env=_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 180
    while not sock.exists():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)
    yield sock, log
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _client(sock, cwd, *args, env=None, stdin="", **kw):
    return subprocess.run([sys.executable, "-c", CLIENT, *args], cwd=cwd, input=stdin, text=True,
                          capture_output=True, env=env or _env(**{warm.ENV: str(sock)}), timeout=120, **kw)


def test_a_handed_off_command_sees_what_a_plain_process_sees(server, tmp_path):
    sock, log = server
    env = _env(**{warm.ENV: str(sock), "DVC_STAGE": "probe"})   # DVC's own per-stage variables may differ
    done = _client(sock, tmp_path, "tests.fakes.warm_probe", "exit", "3", env=env, stdin="hello")
    assert done.returncode == 3, done.stderr
    assert "ran plain" not in done.stdout, "the fork's status ended the client"
    first = done.stdout.splitlines()
    assert first[0].startswith(f"argv=['exit', '3'] cwd={tmp_path} probe=None")
    assert first[1] == "stdin=hello"
    assert "to stderr" in done.stderr
    assert f"pid={done.stdout.split('pid=')[1].split()[0]}" in log.read_text().replace("(pid ", "pid=").replace(")", "")


def test_a_warm_fork_computes_under_the_pinned_numerics(server, tmp_path):
    """torch and numpy are imported once, in the server: its forks inherit the kernels they chose, which must be
    the pinned ones."""
    sock, log = server
    done = _client(sock, tmp_path, "tests.fakes.numerics_probe")
    assert done.returncode == 0 and "ran plain" not in done.stdout, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got.pop("openblas")[0] == "Haswell"   # numpy's (scipy's as well once a stage imports scipy.linalg)
    assert got == {"preloaded": True, "capability": "AVX2", "numpy": ["X86_V3"], "ATEN_CPU_CAPABILITY": "avx2",
                   "ONEDNN_MAX_CPU_ISA": "AVX2", "OMP_NUM_THREADS": "2"}


def test_a_warm_fork_skips_the_servers_finalizers_and_shares_its_tls_context(server, tmp_path):
    """The server's ~180 weakref finalizers (torch's operator libraries) are not run again at each fork's exit, and
    Prefect's clients in a fork take the CA context the server built (tests/test_warm_fork_costs.py: each part)."""
    sock, _ = server
    done = _client(sock, tmp_path, "tests.fakes.warm_probe", "costs")
    assert done.returncode == 0 and "ran plain" not in done.stdout, done.stderr
    got = dict(kv.split("=") for kv in done.stdout.splitlines()[2].split())
    assert int(got["finalizers"]) > 100 and got["at_exit"] == "0" and got["tls_shared"] == "True", got
    plain = subprocess.run([sys.executable, "-m", "tests.fakes.warm_probe", "costs"], cwd=ROOT, text=True,
                           capture_output=True, env=_env(), timeout=120, input="")
    assert "tls_shared=False" in plain.stdout, "a plain process is left as it is"


def test_a_failing_stage_fails_the_same_way(server, tmp_path):
    sock, _ = server
    raised = _client(sock, tmp_path, "tests.fakes.warm_probe", "raise")
    assert raised.returncode == 1 and "RuntimeError: the probe failed" in raised.stderr
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    bad = _client(sock, tmp_path, "flows.stage", "score", "no-such-rm")   # the early params check runs in the fork
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines()[-1].startswith("scoring.rms: unknown name 'no-such-rm'")
    assert "Traceback" not in bad.stderr


def test_a_stage_prints_no_warning_warm_or_plain(server, tmp_path):
    """A clean stage run says nothing but its log: no RuntimeWarning from runpy (a preloaded flows.stage), no
    warning of ours or of a library, in the warm fork `prbench run` uses as in a plain process."""
    from tests.stage_project import project_params

    sock, log = server
    project_params(tmp_path, limit=1)
    served = log.read_text().count("warm: served flows.stage ingest")
    for env in (_env(**{warm.ENV: str(sock)}), _env()):
        done = subprocess.run([sys.executable, "-m", "flows.stage", "ingest"], cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Flow run 'ingest'" in done.stderr and not re.search("warn", done.stderr, re.I), done.stderr[-3000:]
    assert log.read_text().count("warm: served flows.stage ingest") == served + 1, "the first ran in a warm fork"


def test_another_environment_runs_as_a_plain_process(server, tmp_path):
    sock, log = server
    done = _client(sock, tmp_path, "tests.fakes.warm_probe", "exit", "0",
                   env=_env(**{warm.ENV: str(sock), "PROBE_VALUE": "set"}))
    assert done.returncode == 0 and done.stdout.strip().endswith("ran plain")
    assert "its environment differs from the warm server's: PROBE_VALUE" in done.stderr
    assert "refused tests.fakes.warm_probe" in log.read_text()


def test_no_server_runs_as_a_plain_process(tmp_path):
    done = _client(tmp_path / "gone.sock", tmp_path, "tests.fakes.warm_probe", "exit", "0")
    assert done.returncode == 0 and done.stdout.strip().endswith("ran plain")


def test_the_fork_dies_with_its_client(server, tmp_path):
    sock, _ = server
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, "tests.fakes.warm_probe", "sleep", "120"], cwd=tmp_path,
                            env=_env(**{warm.ENV: str(sock)}), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    fork = int(line.split("pid=")[1])
    assert fork != proc.pid, "it runs in the fork, not the client"
    proc.kill()   # SIGKILL: the client cannot forward anything
    proc.wait()
    deadline = time.monotonic() + 30
    while Path(f"/proc/{fork}").exists() and "zombie" not in _state(fork):
        assert time.monotonic() < deadline, "the fork outlived its client"
        time.sleep(0.2)
    after = _client(sock, tmp_path, "tests.fakes.warm_probe", "exit", "0")   # it took its own group only
    assert after.returncode == 0 and "ran plain" not in after.stdout, "the server survived the fork's end"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0]
    except (OSError, IndexError):
        return "zombie"


def test_code_edited_after_the_server_started_is_refused(monkeypatch):
    """A fork would run the code the server imported, while dvc.lock records the files on disk."""
    import threading
    # this pytest process may hold other tests' threads (tqdm's monitor); the server would not
    monkeypatch.setattr(threading, "enumerate", lambda: [threading.main_thread()])
    root = str(ROOT)
    code = warm_server.project_files(root)
    assert code, "the project's modules are tracked"
    env = dict(os.environ)
    request = {"module": "flows.stage", "args": ["score"], "env": env}
    assert warm_server.refusal(request, env, code, root) is None
    stale = {**code, next(iter(code)): (0, 0)}
    assert warm_server.refusal(request, env, stale, root).startswith("project code changed since the warm server started")
