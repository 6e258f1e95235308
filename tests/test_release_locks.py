"""The locks of the served runs (tasks/ops/repo_lock.py): freed when the holder is SIGKILLed, a queued
run says whom it waits for (its log, and its Prefect state "Waiting"), and two watcher runs started
together announce a release once."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml

from tasks.ops import repo_lock
from tests.conftest import ROOT, flow_log_lines
from tests.serve_project import env, git, wait_for

HOLD = ("import sys, time; from tasks.ops import repo_lock\n"
        "with repo_lock.held(sys.argv[1], 'dvc', 'score-rm acme/x@abc'):\n"
        "    print('held', flush=True); time.sleep(600)\n")


def _git_repo(path):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    return path


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_slot_is_freed_the_moment_its_holder_is_killed_and_a_waiter_names_it(tmp_path):
    repo = _git_repo(tmp_path / "repo")
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(repo)], env={**env(), "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        who = repo_lock.holder(repo, "dvc")
        assert who["what"] == "score-rm acme/x@abc" and who["pid"] == proc.pid
        said, waits = [], []
        got = threading.Event()

        def wait():
            with repo_lock.held(repo, "dvc", "score-rm acme/y@def", log=said.append, on_wait=waits.append, poll_s=0.1):
                got.set()

        t = threading.Thread(target=wait)
        t.start()
        wait_for(lambda: said, 10, step=0.1, what="the waiter's log line")
        assert said[0].startswith("score-rm acme/y@def: waiting for the dvc lock, held by score-rm acme/x@abc "
                                  f"(pid {proc.pid}"), said
        assert [w["what"] for w in repo_lock.waiters(repo)] == ["score-rm acme/y@def"]
        assert not got.is_set()
        start = time.monotonic()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert got.wait(5), "the slot is free once its holder is dead (no lease to run out)"
        print(f"slot free {time.monotonic() - start:.2f} s after the SIGKILL")
        t.join()
        assert waits[0]["pid"] == proc.pid and waits[-1] is None, "waiting, then running again"
        assert repo_lock.holder(repo, "dvc") is None and repo_lock.waiters(repo) == []
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.timeout(300)
def test_a_queued_run_is_in_state_waiting_naming_the_holder(tmp_path, monkeypatch, prefect_harness):
    from prefect import flow, get_run_logger
    from prefect.client.orchestration import get_client

    from flows import deploy

    repo = _git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    ids = []

    @flow(name="queued-run")
    def queued():
        from prefect.runtime import flow_run

        ids.append(flow_run.id)
        with repo_lock.held(".", "dvc", "score-rm acme/y@def", log=get_run_logger().info, on_wait=deploy._waiting,
                            poll_s=0.2):
            return "ran"

    release = threading.Event()

    def holder():
        with repo_lock.held(repo, "dvc", "score-rm acme/x@abc"):
            release.wait(120)

    h = threading.Thread(target=holder)
    h.start()
    wait_for(lambda: repo_lock.holder(repo, "dvc"), 10, what="the holder")
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", queued()))
    t.start()
    try:
        def state():
            if not ids:
                return None
            with get_client(sync_client=True) as client:
                s = client.read_flow_run(ids[0]).state
            return s if s.name == "Waiting" else None

        s = wait_for(state, 120, step=0.5, what="the queued run's state 'Waiting'")
        assert s.type.value == "RUNNING" and "score-rm acme/x@abc" in s.message, s
    finally:
        release.set()
        h.join()
        t.join(120)
    assert result["r"] == "ran"
    lines = flow_log_lines("queued-run")
    assert any(line.startswith("score-rm acme/y@def: waiting for the dvc lock, held by score-rm acme/x@abc")
               for line in lines), lines


@pytest.mark.timeout(300)
def test_two_watcher_runs_started_together_announce_a_release_once(tmp_path, monkeypatch, prefect_harness):
    from flows.deploy import watch_releases_flow

    repo = _git_repo(tmp_path / "repo")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["releases"]["watch"] = [{"source": "local", "path": "incoming"}]
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (repo / "incoming" / "new-rm").mkdir(parents=True)
    (repo / "incoming" / "new-rm" / "config.json").write_text(json.dumps({"architectures": ["BertForSequenceClassification"]}))
    git(repo, "add", "-A")
    monkeypatch.chdir(repo)
    from tasks.ops import releases

    looked_up = releases.new_releases   # widen the window two runs would race in: between look-up and record
    monkeypatch.setattr(releases, "new_releases", lambda *a: (looked_up(*a), time.sleep(2))[0])
    out = []
    runs = [threading.Thread(target=lambda: out.append(watch_releases_flow())) for _ in range(2)]
    for t in runs:
        t.start()
    for t in runs:
        t.join(240)
    assert sorted(len(a) for a in out) == [0, 1], out
    state = json.loads((repo / "data/releases/registered.json").read_text())["models"]
    assert list(state) == ["incoming/new-rm"] and state["incoming/new-rm"]["status"] == "announced"
