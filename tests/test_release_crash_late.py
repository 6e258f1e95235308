"""A killed score-rm's release is never lost, not even when what follows the kill goes wrong (issue
36): its processes reaped late (DVC's rwlock still names the dead dvc, whose pid a zombie keeps),
or its rescore by the next run failing. The toy project and driver are tests/test_release_crash.py's."""
import json
import subprocess
import sys

import pytest

from tasks.ops.release_score import RESCORE_TRIES
from tests.test_release_crash import (A, B, DRIVER, _announce, _commits_of, _consistent, _driver, _env,  # noqa: F401
                                      _kill_at, _run, git, repo, toy)

pytestmark = pytest.mark.slow

# Runs a score-rm, SIGKILLs its process group at its stop, then runs the next one while the killed
# run's orphans (its dvc, its stage) are still zombies: this process is their subreaper and reaps
# them only after -- a PID 1 that reaps late. argv: the killed run's command and environment, the
# next run's command (JSON).
LATE_REAPER = """\
import ctypes, json, os, signal, subprocess, sys, time
import psutil

assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0   # PR_SET_CHILD_SUBREAPER
killed, env, after = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
run = subprocess.Popen(killed, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
while not os.path.exists("hanging"):
    assert run.poll() is None, "the killed run ended before its stop"
    time.sleep(0.2)
os.killpg(run.pid, signal.SIGKILL)
run.wait()
os.unlink("hanging")
orphans = psutil.Process().children()
deadline = time.monotonic() + 30
while any(p.status() != psutil.STATUS_ZOMBIE for p in orphans) and time.monotonic() < deadline:
    time.sleep(0.1)
zombies = [p.pid for p in orphans if p.status() == psutil.STATUS_ZOMBIE]
out = subprocess.run(after, capture_output=True, text=True)
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
print(json.dumps({"zombies": zombies, "rc": out.returncode, "out": out.stdout + out.stderr}))
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("point", ["during score@rm-a", "during leaderboard"])
def test_a_crash_whose_processes_are_reaped_late_loses_nothing(repo, point):
    """Killed mid-stage, the dead dvc's entries stay in DVC's rwlock, and DVC counts them as held while
    the pid exists: a zombie not yet reaped keeps it. The next run still scores both releases once."""
    _announce(repo, A)
    _announce(repo, B)
    killed, env = _driver(A, point)
    after, _ = _driver(B)
    proc = subprocess.run([sys.executable, "-c", LATE_REAPER, json.dumps(killed), json.dumps(env), json.dumps(after)],
                          cwd=repo, env=_env(), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["zombies"], "the killed run's dvc was a zombie during the next run"
    assert out["rc"] == 0, out["out"]
    _consistent(repo, A, B)


# The driver, with its first `dvc repro` failing as DVC fails while it still sees a dead run's dvc.
FIRST_REPRO_FAILS = """\
from tasks.ops import repro as _repro
_real, _repros = _repro.dvc, []

def _dvc(root, *args, **kwargs):
    if args[:1] == ("repro",):
        _repros.append(args)
        if len(_repros) == 1:
            return _repro.DvcResult(1, [], ["ERROR: failed to reproduce 'score@rm-a': blocked by: (PID 42)"])
    return _real(root, *args, **kwargs)

_repro.dvc = _dvc
""" + DRIVER


def _first_repro_fails(repo, rel):
    cmd, env = _driver(rel)
    cmd[2] = FIRST_REPRO_FAILS
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=240)


def _record(repo, rel) -> dict:
    return json.loads((repo / "data/releases/registered.json").read_text())["models"][rel["model"]]


@pytest.mark.timeout(300)
def test_a_release_whose_rescore_fails_stays_queued_announced_and_pending(repo):
    """The next run scores its own release; the killed one stays queued (shown as interrupted), its
    record announced with why; serve's next start hands it on, and it is scored once."""
    from flows.release_cli import status_lines

    _announce(repo, A)
    _kill_at(repo, A, "repro:ran score@rm-a")
    _announce(repo, B)
    out = _first_repro_fails(repo, B)
    assert out.returncode == 0, out.stdout + out.stderr
    assert _commits_of(repo, B) == 1 and _commits_of(repo, A) == 0
    record = _record(repo, A)
    assert record["status"] == "announced" and "the next score-rm, reproduce" in record["message"], record
    assert any(line.startswith("interrupted rm-a = acme/rm-a@") for line in status_lines(repo)), status_lines(repo)
    code = "from flows.deploy import recover_at_start; print([j.release.model for j in recover_at_start()])"
    start = subprocess.run([sys.executable, "-c", code], cwd=repo, env=_env(), capture_output=True, text=True,
                           timeout=240)
    assert start.stdout.strip().splitlines()[-1] == str([A["model"]]), start.stdout + start.stderr
    again = _run(repo, A)   # the run serve starts for it
    assert again.returncode == 0, again.stdout + again.stderr
    _consistent(repo, A, B)


@pytest.mark.timeout(300)
def test_a_rescore_that_keeps_failing_counts_as_failed_after_its_tries(repo):
    _announce(repo, A)
    _kill_at(repo, A, "during score@rm-a")
    _announce(repo, B)
    for n in range(1, RESCORE_TRIES + 1):
        out = _first_repro_fails(repo, B)   # after the first, B is already scored: only A's rescore runs
        assert out.returncode == 0, out.stdout + out.stderr
        assert _record(repo, A)["status"] == ("failed" if n == RESCORE_TRIES else "announced"), _record(repo, A)
    assert f"(tried {RESCORE_TRIES} times)" in _record(repo, A)["message"]
    assert git(repo, "status", "--porcelain", "--", "params.yaml", "dvc.lock") == ""
    assert _commits_of(repo, A) == 0 and not list((repo / ".git/prbench/txn").glob("*.json")), "given up: dequeued"
