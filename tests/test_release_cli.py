"""`prbench release status | check | score`: what a user finds from the project folder. status reads
the repo (registered, failed with reason, running, queued, interrupted); check and score start runs
of serve's deployments on its server with nothing exported (the port from params)."""
import json
import subprocess
import sys

import pytest
import yaml

from flows.release_cli import status_lines
from tasks.ops import release_txn, releases
from tests.conftest import ROOT
from tests.serve_project import env, prefect_api

R = releases.Release


def test_status_names_failed_interrupted_and_registered_releases(tmp_path):
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    state = tmp_path / "data/releases/registered.json"
    releases.update_state(state, R("acme/good", "s1", "hub"), "good", "scored")
    releases.update_state(state, R("acme/bad", "s2", "hub"), "bad", "failed",
                          "score-rm acme/bad@s2: download failed: model.safetensors: 404 EntryNotFound")
    with release_txn.Journal(tmp_path, R("acme/cut", "s3", "hub"), "cut", {"kind": "seq-cls"}):
        live = status_lines(tmp_path)
    assert any(line.startswith("running") and "cut = acme/cut@s3" in line for line in live), live
    lines = status_lines(tmp_path)   # its run gone (the lock is free): interrupted
    assert "scored      good = acme/good@s1" in lines
    assert any(line.startswith("failed") and line.endswith("model.safetensors: 404 EntryNotFound") for line in lines)
    assert any(line.startswith("interrupted cut = acme/cut@s3: its run died") for line in lines), lines


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_check_and_score_reach_serves_server_without_exports(tmp_path, seed_prefect_home):
    from flows import server

    srv = server.start(home=seed_prefect_home(tmp_path / "home"))
    try:
        port = int(srv.api_url.rsplit(":", 1)[1].split("/")[0])
        params = yaml.safe_load((ROOT / "params.yaml").read_text())
        params["releases"]["port"] = port
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        e = {**env(PREFECT_HOME=str(tmp_path / "home")), "PYTHONPATH": str(ROOT)}
        apply = ("from flows.deploy import deployments; from tasks.ops.params import load_params\n"
                 "for d in deployments(load_params()): d.apply()")
        subprocess.run([sys.executable, "-c", apply], cwd=tmp_path, env={**e, **srv.client_env()}, check=True,
                       capture_output=True, timeout=180)
        e.pop("PREFECT_API_URL", None)
        sha = "c" * 40
        for args in (["check"], ["score", f"acme/new-rm@{sha}"]):
            out = subprocess.run([sys.executable, "-m", "flows.cli", "release", *args], cwd=tmp_path, env=e,
                                 capture_output=True, text=True, timeout=180)
            assert out.returncode == 0 and "prbench: started " in out.stdout, out.stdout + out.stderr
        deps = {d["id"]: d["name"] for d in prefect_api(srv.api_url, "deployments/filter", {})}
        runs = prefect_api(srv.api_url, "flow_runs/filter", {"limit": 20})
        by = {deps.get(r["deployment_id"]): r for r in runs}
        assert {"watch-releases", "score-rm"} <= set(by), by
        assert by["score-rm"]["parameters"] == {"model": "acme/new-rm", "revision": sha, "name": "new-rm",
                                                "source": "hub"}, json.dumps(by["score-rm"]["parameters"])
    finally:
        srv.stop()
