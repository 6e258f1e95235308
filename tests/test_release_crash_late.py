"""A killed score-rm's release is never lost, not even when what follows the kill goes wrong (issue
36): its processes reaped late (DVC's rwlock still names the dead dvc, whose pid a zombie keeps).
The toy project and driver are tests/test_release_crash.py's."""
import json
import subprocess
import sys

import pytest

from tests.test_release_crash import A, B, _announce, _consistent, _driver, _env, repo, toy  # noqa: F401

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
