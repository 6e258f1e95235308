"""Ctrl-C (SIGINT to the terminal's process group) or SIGTERM (`kill PID`) while `prbench run` is in the
middle of a stage: within 10 s no process of the run is left and no prbench-warm-* temp folder, and the
next `prbench run` resumes (the stages that finished are not run again) and finishes."""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.conftest import Deadline
from tests.fakes.openai_server import FakeOpenAIServer
from tests.stage_project import DUMMY
from tests.test_dvc import _clone_env, _copy_repo

LIMIT_S = 420   # ~2 min measured on 2 shared cores: two warm-server starts (torch imports) and two Prefect servers


def _params(repo: Path, llm: dict) -> None:
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["ingest"].update(configs=params["ingest"]["configs"][:1], limit_per_split=2)
    params["profiles"]["retriever"] = "bm25"
    params["llms"]["planner-llm"] = llm
    params["rubrics"].update(llm="planner-llm", per_domain_limit=1)
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def _start(repo: Path, tmp: Path, log: Path) -> subprocess.Popen:
    env = {**_clone_env(), "TMPDIR": str(tmp)}   # the warm server's temp folder lands here
    with open(log, "w") as out:   # its own session: a terminal's Ctrl-C goes to the whole process group
        return subprocess.Popen([sys.executable, "-m", "flows.cli", "run", "rubrics"], cwd=repo, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _left(procs: list[psutil.Process], repo: Path) -> list[str]:
    """What still runs: a process the run had started, or any process working in the project."""
    left = set()
    for p in [*procs, *psutil.process_iter()]:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and (p in procs or p.cwd().startswith(str(repo))):
                left.add(f"{p.pid} {' '.join(p.cmdline())[:120]}")
        except psutil.Error:
            pass
    return sorted(left)


@pytest.fixture(scope="module")
def project(tmp_path_factory, seed_prefect_home):
    repo = tmp_path_factory.mktemp("interrupt") / "repo"
    repo.mkdir()
    _copy_repo(repo)
    seed_prefect_home(repo / ".prefect")
    return repo


@pytest.fixture
def reaped():
    """The runs a test started: killed with their process group if the test failed before stopping them, so a
    failure leaves no run holding the shared project's DVC lock for the next test."""
    procs: list[subprocess.Popen] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


@pytest.mark.slow
@pytest.mark.timeout(LIMIT_S)
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_a_stopped_run_leaves_nothing_and_the_next_one_resumes(project, tmp_path, how, reaped):
    deadline, gate = Deadline(LIMIT_S), threading.Event()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with FakeOpenAIServer(lambda messages, seed: gate.wait() and "- too late") as server:
        _params(project, {"backend": "openai", "model": f"planner-{how}", "base_url": f"{server.url}/v1"})
        proc = _start(project, tmp, tmp_path / "stopped.log")
        reaped.append(proc)
        while server.requests == 0:   # the planner stage waits on its first LLM call: mid-stage
            assert proc.poll() is None and time.monotonic() < deadline.end, (tmp_path / "stopped.log").read_text()[-3000:]
            time.sleep(0.2)
        tree = psutil.Process(proc.pid).children(recursive=True)
        assert any("warm_server" in " ".join(p.cmdline()) for p in tree), "the stage runs under the warm server"
        start = time.monotonic()
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=10)
        while _left(tree, project) and time.monotonic() - start < 10:
            time.sleep(0.2)
        took = time.monotonic() - start
        gate.set()
    log = (tmp_path / "stopped.log").read_text()
    assert rc == 128 + (signal.SIGINT if how == "ctrl-c" else signal.SIGTERM), log[-3000:]
    assert not _left(tree, project), f"still running {took:.1f} s after the signal: {_left(tree, project)}"
    assert took < 10
    assert not list(tmp.glob("prbench-warm-*")), "the warm server's temp folder is left behind"
    assert "Running stage 'rubrics'" in log and "stopped by" in log, log[-3000:]

    _params(project, {**DUMMY, "model": f"dummy-{how}"})   # a setting no earlier run has: no run-cache hit
    rerun = _start(project, tmp, tmp_path / "rerun.log")
    reaped.append(rerun)
    rerun.wait(timeout=deadline.left())
    out = (tmp_path / "rerun.log").read_text()
    assert rerun.returncode == 0, out[-3000:]
    assert "Running stage 'rubrics'" in out and "Stage 'ingest' didn't change" in out, "it resumes after what finished"
    assert not list(tmp.glob("prbench-warm-*"))
