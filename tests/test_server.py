"""prbench's Prefect servers and `prbench run`: the local server starts, answers /health, serves a
UI that reaches its own API on any port, stops by process group, and -- like Prefect's ephemeral
server inside a stage process -- never outlives a SIGKILLed parent."""
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from flows import server
from tests.conftest import ROOT, SAMPLE
from tests.serve_project import (PRBENCH, alive, children, cmdline, env, group_members, kill_group, make_repo,
                                 prefect_api, wait_for)

ORPHAN_GRACE_S = 15   # the lifeline polls every 0.5 s, then SIGTERM; uvicorn needs a moment to exit


def _flows_with_runs(api_url: str) -> set[str]:
    """Names of the flows the server holds completed runs of."""
    names = {f["id"]: f["name"] for f in prefect_api(api_url, "flows/filter", {"limit": 200})}
    runs = prefect_api(api_url, "flow_runs/filter",
                       {"limit": 200, "flow_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}})
    return {names[r["flow_id"]] for r in runs}


def _kill_group_of(pid):
    try:
        if pid:
            os.killpg(pid, signal.SIGKILL)   # the server leads its own group
    except ProcessLookupError:
        pass


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_server_starts_answers_health_and_stops_by_process_group(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_UI_API_URL", "http://127.0.0.1:4200/api")   # a stale setting must not win
    start = time.monotonic()
    srv = server.start(home=tmp_path / "home")
    print(f"server up in {time.monotonic() - start:.1f} s")
    try:
        assert server.healthy(srv.api_url) and srv.api_url.startswith("http://127.0.0.1:")
        group = os.getpgid(srv.process.pid)
        assert group == srv.process.pid != os.getpgid(0), "its own process group: stopping it spares the caller"
        assert server.ui_api_url(srv.api_url) == srv.api_url, "the UI asks this server's API, not :4200's"
        with urllib.request.urlopen(srv.ui_url, timeout=10) as r:
            assert r.status == 200 and "text/html" in r.headers["Content-Type"]
        assert (tmp_path / "home" / "prefect.db").exists(), "state lives in the given PREFECT_HOME"
    finally:
        srv.stop()
    assert not server.healthy(srv.api_url)
    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)   # nothing of the group is left


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_prbench_server_dies_with_a_sigkilled_parent(tmp_path, seed_prefect_home):
    code = ("import flows, sys, time; from flows import server; s = server.start(home=sys.argv[1]); "
            "print(s.process.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", code, str(seed_prefect_home(tmp_path / "home"))], stdout=subprocess.PIPE,
                              text=True, start_new_session=True, env=env())
    server_pid = None
    try:
        server_pid = int(parent.stdout.readline())
        assert server_pid in group_members(server_pid), "the server leads a process group of its own"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_for(lambda: not group_members(server_pid), ORPHAN_GRACE_S, what="the orphaned server's group to exit")
    finally:
        kill_group(parent)
        _kill_group_of(server_pid)   # when the test fails: leave nothing running


def _ingest_project(root: Path) -> Path:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["ingest"].update(path=str(SAMPLE / "rewardbench"), limit_per_split=2)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return root


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_no_ephemeral_server_outlives_a_sigkilled_stage(tmp_path):
    """A stage without PREFECT_API_URL starts Prefect's own ephemeral server (uvicorn) as a child;
    SIGKILL the stage and that server must go too (it used to stay up, parent pid 1)."""
    project = _ingest_project(tmp_path)
    e = env(PREFECT_HOME=str(tmp_path / "home"))
    e.pop("PREFECT_API_URL", None)
    stage = subprocess.Popen([sys.executable, "-m", "flows.stage", "ingest"], cwd=project, env=e, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        uvicorn = wait_for(lambda: [p for p in children(stage.pid) if "uvicorn" in cmdline(p)], 120, step=0.1,
                           what="the stage's ephemeral server")[0]
        stage.send_signal(signal.SIGKILL)
        stage.wait()
        wait_for(lambda: not alive(uvicorn), ORPHAN_GRACE_S, what=f"the ephemeral server {uvicorn} to exit")
    finally:
        kill_group(stage)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_no_server_outlives_a_sigkilled_prbench_run(tmp_path, seed_prefect_home):
    repo, srv = make_repo(tmp_path / "repo"), None
    run = subprocess.Popen([*PRBENCH, "run"], cwd=repo, text=True,
                           env=env(PREFECT_HOME=str(seed_prefect_home(tmp_path / "home"))), start_new_session=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        def first_line():   # but the lock notice: the test project's shrunk params drop dvc.lock entries first
            line = run.stdout.readline()
            return None if line.startswith("prbench: dvc.lock: dropped") else line
        line = wait_for(first_line, 180, step=0, what="prbench run's first line")
        assert "Prefect server at http://127.0.0.1:" in line, line
        srv = next(p for p in children(run.pid) if "server start" in cmdline(p))
        assert srv in group_members(srv), "the server leads a process group of its own"
        run.send_signal(signal.SIGKILL)   # dvc and its stage carry on without a server; the test's group kill ends them
        run.wait()
        wait_for(lambda: not group_members(srv), ORPHAN_GRACE_S, what="prbench run's server (its group) to exit")
    finally:
        kill_group(run)
        _kill_group_of(srv)


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_prbench_run_reproduces_with_dvc_reporting_to_its_own_server(tmp_path, seed_prefect_home):
    repo = make_repo(tmp_path / "repo")
    home = seed_prefect_home(tmp_path / "home")
    proc = subprocess.run([*PRBENCH, "run", "ingest", "profiles"], cwd=repo,
                          env=env(PREFECT_HOME=str(home)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    url = proc.stdout.split("Prefect server at ")[1].split()[0]
    out = proc.stdout + proc.stderr
    assert "Starting temporary server" not in out, "no stage started an ephemeral server of its own"
    assert not server.healthy(f"{url}/api"), "the run's server is stopped at the end"
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    assert {"ingest", "profiles"} <= set(lock) and (repo / "data/profiles/context.parquet").exists()
    with server.local_server(home=home) as api:   # the runs were recorded by that server, in PREFECT_HOME
        flows_seen = _flows_with_runs(api)
    assert {"ingest", "profiles"} <= flows_seen, f"stage processes reported to the run's server: {flows_seen}"


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_prbench_run_no_dvc_runs_the_pipeline_in_process(tmp_path, seed_prefect_home):
    """`--no-dvc` runs flows/pipeline.py in this process, in DAG order, stopping after `--until`
    (the whole in-process pipeline is tests/test_flows.py's); DVC is not used, no server started."""
    repo = make_repo(tmp_path / "repo")
    lock = (repo / "dvc.lock").read_bytes() if (repo / "dvc.lock").exists() else None
    proc = subprocess.run([*PRBENCH, "run", "--no-dvc", "--until", "profiles"], cwd=repo,
                          env=env(PREFECT_HOME=str(seed_prefect_home(tmp_path / "home"))), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (repo / "data/ingest/questions.parquet").exists() and (repo / "data/profiles/context.parquet").exists()
    assert not (repo / "data/rubrics/inferred.parquet").exists(), "the pipeline stopped after --until"
    assert ((repo / "dvc.lock").read_bytes() if (repo / "dvc.lock").exists() else None) == lock, "DVC was not used"
    assert "Prefect server at" not in proc.stdout
    bad = subprocess.run([*PRBENCH, "run", "--no-dvc", "--until", "profile"], cwd=repo, env=env(),
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and bad.stderr.strip().startswith("--until: unknown name 'profile' (did you mean "
                                                                   "'profiles'?); valid: ")


def _api(url: str, route: str, body=None):
    return prefect_api(url, route, body, "POST" if body is not None else "GET")


def _serve(repo: Path, home: Path, port: int, log: Path) -> subprocess.Popen:
    """`prbench serve`, once its runner is up: it has polled for work (deployments READY), so a
    SIGTERM now is its graceful stop, the one that would pause schedules."""
    e = env(PREFECT_HOME=str(home))
    e.pop("PREFECT_API_URL", None)
    with open(log, "w") as out:
        proc = subprocess.Popen([*PRBENCH, "serve", "--port", str(port)], cwd=repo, env=e, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: "being served" in log.read_text(), 600, step=1, what=f"prbench serve to serve (see {log})")
        api = f"http://127.0.0.1:{port}/api"
        wait_for(lambda: {d["status"] for d in _api(api, "deployments/filter", {})} == {"READY"}, 300, step=1,
                 what="the runner to poll")
    except BaseException:
        kill_group(proc)
        raise
    return proc


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_serve_runs_a_persistent_server_whose_schedules_survive_a_restart(tmp_path, seed_prefect_home):
    repo, port = make_repo(tmp_path / "repo"), server.free_port()
    home = seed_prefect_home(repo / ".prefect")
    api = f"http://127.0.0.1:{port}/api"
    deployments = lambda: {d["name"]: d for d in _api(api, "deployments/filter", {})}  # noqa: E731
    serve = _serve(repo, home, port, tmp_path / "serve-1.log")
    try:
        assert server.healthy(api)
        assert server.ui_api_url(api) == api, "the UI on a non-default port reaches its own API"
        deps = wait_for(lambda: (d := deployments()) and {"reproduce", "watch-releases", "score-rm"} <= set(d) and d,
                        300, step=1, what="the three deployments")
        schedules = {n: [s["schedule"].get("cron") for s in d["schedules"] if s["active"]] for n, d in deps.items()}
        assert schedules["reproduce"] == ["0 3 * * *"] and schedules["watch-releases"] == ["0 * * * *"]
        # one DVC run at a time is a file lock now (tasks/ops/repo_lock.py, tests/test_release_locks.py), not a
        # Prefect concurrency limit, which a crashed run kept held
        serve.send_signal(signal.SIGTERM)   # a graceful stop: the runner would pause every schedule here
        serve.wait(timeout=120)
        wait_for(lambda: not server.healthy(api), 60, what="the server to stop with prbench serve")
        with server.local_server(home=home) as again:   # the state persisted in the project's PREFECT_HOME
            after = {d["name"]: d for d in _api(again, "deployments/filter", {})}
        for name in ("reproduce", "watch-releases"):
            assert not after[name]["paused"] and all(s["active"] for s in after[name]["schedules"]), \
                f"{name}: paused when prbench serve stopped; its schedule must stay active"
        serve = _serve(repo, home, port, tmp_path / "serve-2.log")
        wait_for(lambda: len(_api(api, "deployments/filter", {})) == 3 and not deployments()["reproduce"]["paused"],
                 300, step=1, what="the same three deployments, active")
    finally:
        kill_group(serve)
