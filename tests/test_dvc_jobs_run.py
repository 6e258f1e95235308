"""`python -m tasks.ops.dvc_jobs` (what `prbench run --jobs N` runs) end to end on a small DVC project: stages N at a
time in local threads, on a temporary local Dask cluster, and on a running Dask cluster whose worker is SIGKILLed
mid-stage; each run's dvc.lock, outputs and .gitignore files are the bytes plain `dvc repro` writes. A failing
stage stops the run naming it, keeps every finished stage, and the next run completes it."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.dask_cluster import DaskCluster

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
ITEMS = ["a", "b", "c", "d", "e"]

STEP = '''
import os, sys, time
from pathlib import Path
what = sys.argv[1]
if what == "part":
    item = sys.argv[2]
    if os.environ.get("FAIL") == item:
        sys.exit(3)
    if os.environ.get("HOLD") == item and not Path("held").exists():   # the first attempt waits to be killed
        Path("held.tmp").write_text(str(os.getpid()))
        os.replace("held.tmp", "held")
        time.sleep(600)
    time.sleep(0.3)
    Path("parts").mkdir(exist_ok=True)
    Path(f"parts/{item}.txt").write_text(f"part {item}: {sum(map(ord, item * 1000))}\\n")
else:
    parts = sorted(Path("parts").glob("*.txt"))
    Path("total.txt").write_text("".join(p.read_text() for p in parts))
'''

DVC_YAML = f'''stages:
  part:
    foreach: {ITEMS}
    do:
      cmd: python step.py part ${{item}}
      deps:
      - step.py
      outs:
      - parts/${{item}}.txt
  total:
    cmd: python step.py total
    deps:
    - step.py
    - parts
    outs:
    - total.txt
'''


def _sh(argv, cwd, env=None, check=True):
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=check, timeout=600)


def _project(path: Path) -> Path:
    path.mkdir()
    (path / "step.py").write_text(STEP)
    (path / "dvc.yaml").write_text(DVC_YAML)
    _sh(["git", "init", "-q"], path)
    _sh([str(BIN / "dvc"), "init", "-q"], path)
    _sh([str(BIN / "dvc"), "config", "core.analytics", "false"], path)
    return path


def _env(server, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRBENCH_", "HOLD", "FAIL"))}
    return {**env, **server.client_env(), "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", **extra}


def _jobs(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return _sh([sys.executable, "-m", "tasks.ops.dvc_jobs", *args], cwd, env, check=False)


def _bytes(project: Path) -> dict[str, str]:
    """sha256 of dvc.lock, every output and every .gitignore DVC wrote."""
    files = [project / "dvc.lock", project / "total.txt", *sorted((project / "parts").glob("*.txt")),
             *sorted(project.rglob(".gitignore"))]
    return {str(f.relative_to(project)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in files if ".dvc" not in f.parts and ".git" not in f.parts}


@pytest.fixture(scope="module")
def serial(tmp_path_factory, stage_server):
    project = _project(tmp_path_factory.mktemp("serial") / "p")
    _sh([str(BIN / "dvc"), "repro", "-q"], project, _env(stage_server))
    got = _bytes(project)
    assert len([k for k in got if k.endswith(".txt") and k.startswith("parts/")]) == len(ITEMS)
    assert {"dvc.lock", "total.txt", "parts/.gitignore"} <= set(got)
    return got


@pytest.mark.timeout(600)
def test_stages_two_at_a_time_in_threads_and_on_a_temporary_dask_cluster_write_the_serial_bytes(
        tmp_path, stage_server, serial):
    for name, args in (("threads", ["--jobs", "2"]), ("dask", ["--jobs", "2", "--runner", "dask"])):
        project = _project(tmp_path / name)
        out = _jobs(project, _env(stage_server), *args)
        assert out.returncode == 0, out.stdout + out.stderr
        assert _bytes(project) == serial, name
        assert out.stdout.count("Running stage") == len(ITEMS) + 1, out.stdout


@pytest.mark.timeout(600)
def test_a_dask_worker_killed_mid_stage_takes_its_command_along_and_the_run_ends_with_the_serial_bytes(
        tmp_path, stage_server, serial):
    project = _project(tmp_path / "p")
    env = _env(stage_server, HOLD="c", SHELL="/bin/sh")   # dash forks even one command: the hard case
    with DaskCluster(tmp_path / "cluster", env=env).start({"w1": {}, "w2": {}}) as cluster:
        run = subprocess.Popen([sys.executable, "-m", "tasks.ops.dvc_jobs", "--jobs", "2", "--runner", "dask",
                                "--address", cluster.address], cwd=project, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        command = None
        try:
            held = project / "held"
            end = time.monotonic() + 300
            while not held.exists() and time.monotonic() < end and run.poll() is None:
                time.sleep(0.2)
            assert held.exists(), run.communicate()[0]
            command = int(held.read_text())
            worker = next(n for n, p in cluster.procs.items() if n != "scheduler" and _descends(command, p.pid))
            os.kill(cluster.procs[worker].pid, 9)   # the worker process alone: its command must not outlive it
            end = time.monotonic() + 30
            while _alive(command) and time.monotonic() < end:
                time.sleep(0.2)
            assert not _alive(command), "the stage command outlived its killed worker"
            out, _ = run.communicate(timeout=400)
        finally:
            if run.poll() is None:
                run.kill()
            if command is not None and _alive(command):   # an orphan, when the assertion above failed
                os.kill(command, 9)
    assert run.returncode == 0, out
    assert _bytes(project) == serial


@pytest.mark.timeout(600)
def test_a_failing_stage_stops_the_run_naming_it_and_the_next_run_completes_with_the_serial_bytes(
        tmp_path, stage_server, serial):
    project = _project(tmp_path / "p")
    out = _jobs(project, _env(stage_server, FAIL="b"), "--jobs", "2")
    assert out.returncode == 1
    assert "ERROR: failed to reproduce 'part@b'" in out.stdout, out.stdout
    lock = (project / "dvc.lock").read_text()
    assert "part@a" in lock and "part@b" not in lock and "total" not in lock, "finished stages kept, no other"
    assert not (project / "total.txt").exists()
    again = _jobs(project, _env(stage_server), "--jobs", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Stage 'part@a' didn't change, skipping" in again.stdout
    assert _bytes(project) == serial


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
    return False

