"""Adding a stage touches the stage table, its tasks module and params — nothing else (no flow: the one
generic flow runs it): in a copy of the repo, a new stage is declared once, naming its logic; dvc.yaml
is regenerated with the code deps read off the generic flow's and its module's imports, its params group
is checked like every other, and `dvc repro` runs it alone."""
import json
import subprocess
import sys

import pytest
import yaml

from tests.test_dvc import _clone_env, _copy_repo

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TASK = '''"""hello: a stage that only greets (what a new stage brings: its logic and its params group)."""
from pydantic import BaseModel, ConfigDict, Field

from tasks.core.runlog import write_metrics


class HelloParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = Field("hi", description="what the stage writes")
    times: int = Field(1, description="how often")


def run(params: dict, inputs: dict, out: dict) -> dict:
    metrics = {"greeting": " ".join([params["hello"]["greeting"]] * params["hello"]["times"])}
    write_metrics(metrics, out["metrics"])
    return metrics
'''
ENTRY = '''    Stage("hello", "a stage that only greets", {"metrics": "metrics/hello.json"}, params=("hello",),
          schema=__import__("tasks.hello", fromlist=["HelloParams"]).HelloParams, run="tasks.hello:run"),
'''


def _run(repo, *cmd, ok=True):
    out = subprocess.run(cmd, cwd=repo, env=_clone_env(), capture_output=True, text=True, timeout=600)
    assert (out.returncode == 0) == ok, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout + out.stderr


def test_a_new_stage_is_the_table_its_task_and_params(tmp_path, stage_server, monkeypatch):
    for key, value in stage_server.client_env().items():   # the stage reports to the session's server
        monkeypatch.setenv(key, value)
    repo = tmp_path / "repo"
    _copy_repo(repo)
    _run(repo, "git", "add", "-A")
    _run(repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")

    table = (repo / "tasks/core/stage_table.py").read_text()
    assert "TABLE = (\n" in table
    (repo / "tasks/core/stage_table.py").write_text(table.replace("TABLE = (\n", "TABLE = (\n" + ENTRY, 1))
    (repo / "tasks/hello.py").write_text(TASK)
    with open(repo / "params.yaml", "a") as fh:
        fh.write("\nhello:                             # the new stage's group\n  greeting: hello\n  times: 2\n")

    _run(repo, sys.executable, "-m", "flows.cli", "dag", "--write")
    spec = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]["hello"]
    assert spec["cmd"] == "python -m flows.stage hello"
    assert {"flows/stage.py", "tasks/hello.py", "tasks/core/runlog.py", "flows/common.py"} <= set(spec["deps"])
    assert spec["params"] == ["hello"] and "metrics" not in spec, "DVC's metrics are the headline alone"
    assert spec["outs"] == [{"metrics/hello.json": {"cache": False}}], "its metrics file: a plain output, in git"

    bad = (repo / "params.yaml").read_text()
    (repo / "params.yaml").write_text(bad.replace("  times: 2", "  tims: 2"))
    err = _run(repo, sys.executable, "-m", "flows.stage", "hello", ok=False)
    assert "params.yaml: hello.tims: unknown key (did you mean 'times'?)" in err
    (repo / "params.yaml").write_text(bad)

    log = _run(repo, "dvc", "repro", "hello")
    assert "Running stage 'hello'" in log and "Running stage 'ingest'" not in log
    assert json.loads((repo / "metrics/hello.json").read_text())["greeting"] == "hello hello"
    assert "Data and pipelines are up to date" in _run(repo, "dvc", "status", "hello")
    changed = {line[3:] for line in _run(repo, "git", "status", "--porcelain", "--untracked-files=all").splitlines()}
    assert changed - {"runs/history.jsonl", "runs/hello.json"} == {
        "tasks/core/stage_table.py", "tasks/hello.py", "params.yaml", "dvc.yaml", "dvc.lock",
        "metrics/hello.json"}, changed
