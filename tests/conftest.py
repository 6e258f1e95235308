"""Test setup: never touch the network, never touch the developer's Prefect state."""
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_PREFECT_HOME = tempfile.mkdtemp(prefix="prbench-prefect-")
os.environ.update({
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "PREFECT_HOME": _PREFECT_HOME,
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "DVC_NO_ANALYTICS": "1",
})
os.environ.pop("PREFECT_API_URL", None)

from tasks.core.numerics import pin  # noqa: E402 - the pinned numerics, before any test imports torch

pin(2)   # params.yaml's common.torch_threads; stage subprocesses inherit these (flows/__init__ pins them too)

import pytest  # noqa: E402

from tests.figures import figures  # noqa: E402,F401 - the fixture: plots read back before they are saved

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_PREFECT_HOME, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)   # before `-m "not slow"` deselects
def pytest_collection_modifyitems(config, items):
    """A test on the Prefect harness starts a server (the ephemeral API: 10-120 s to come up), so it is
    slow even where a new test forgot the marker: `make test-fast` never waits for that server.
    Every slow test carries its own `@pytest.mark.timeout(s)`, sized from its measured time: the
    default (pyproject.toml) fits fast tests, so a hang fails with the test's name, not CI's limit."""
    for item in items:
        if "prefect_harness" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
    unsized = [item.nodeid for item in items if item.get_closest_marker("slow") and not item.get_closest_marker("timeout")]
    if unsized:
        raise pytest.UsageError("slow tests without their own @pytest.mark.timeout(seconds): " + ", ".join(unsized))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Tell tests/browser.py which test runs, so a fast test that opens Chromium fails with the reason."""
    from tests import browser

    browser.RUNNING.append(item)
    try:
        return (yield)
    finally:
        browser.RUNNING.remove(item)


class Deadline:
    """What is left of a test's own time limit, for the waits inside it: each gives up before
    pytest-timeout ends the test, with its own message (what it waited for, a log)."""

    def __init__(self, seconds: float, margin: float = 60):
        self.end = time.monotonic() + seconds - margin

    def left(self) -> float:
        return max(1.0, self.end - time.monotonic())


def migrated_prefect_db(base: Path) -> Path:
    """A Prefect database with every migration applied, built once under `base` (shared by the test
    processes, a lock between them): Prefect migrates a new database on its first start, ~12 s of
    CPU per server."""
    template = base / "migrated-prefect" / "prefect.db"
    with open(base / "migrated-prefect.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            build = Path(tempfile.mkdtemp(prefix="migrating-", dir=base))
            env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_DATABASE")}
            subprocess.run([str(Path(sys.executable).with_name("prefect")), "server", "database", "upgrade", "-y"],
                           env={**env, "PREFECT_HOME": str(build)}, check=True, capture_output=True, timeout=180)
            template.parent.mkdir(exist_ok=True)
            os.replace(build / "prefect.db", template)
    return template


@pytest.fixture(scope="session")
def seed_prefect_home(tmp_path_factory):
    """`seed(home)`: a Prefect home whose database is migrated already, as a project's is after its
    first run. For tests of what a server does, not of its first start: the fresh home's path stays
    covered by test_server's start test and the dvc end-to-end test's fresh clones."""
    base = tmp_path_factory.getbasetemp()
    template = migrated_prefect_db(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)

    def seed(home) -> Path:
        home = Path(home)
        home.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, home / "prefect.db")
        return home
    return seed


@pytest.fixture(scope="session")
def stage_server(tmp_path_factory, seed_prefect_home):
    """One local Prefect server for the stage processes tests start, as `prbench run` gives its
    stages: without it each process starts an ephemeral one (10-60 s apiece on 2 busy cores)."""
    from flows import server

    srv = server.start(home=seed_prefect_home(tmp_path_factory.mktemp("stage-server-home")))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def prefect_harness():
    import flows  # noqa: F401 - its lifeline: the harness's server dies with this process, even on SIGKILL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


BYTECODE = re.compile(r"^\s*(\d+\s+)?\d+\s+(RESUME|LOAD_[A-Z_]+|RETURN_[A-Z_]+|CALL)\b", re.M)


def flow_log_lines(flow_name: str) -> list[str]:
    """Every log message the current Prefect API holds for runs of `flow_name` (flow and task logs)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=30)   # records go to the API in batches
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])), limit=200)
        found, offset = [], 0
        while page := client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[r.id for r in runs])),
                                       limit=200, offset=offset):
            found += [log.message for log in page]
            offset += len(page)
    return found


def make_row(i: int, *, prefix="1_0", posts=16, **overrides) -> dict:
    qid = f"{prefix}_{i}"
    row = {
        "id": qid,
        "question": f"How should I plan question number {i} on a small budget?",
        "profile": [{"category": "travel", "id": f"{qid}_{k}",
                     "text": f"Past post {k} of user {i}: notes on topic {k * 7 % 11} and daily life."}
                    for k in range(posts)],
        "rubric_aspects": [{"aspect": "Budget", "evidence": "little money", "reason": "cost matters"},
                           {"aspect": "Beginner", "evidence": "first time", "reason": "no experience"},
                           {"aspect": "Short", "evidence": "no time", "reason": "busy"}],
        "narrative": "I have little money, it is my first time, and no time.",
        "category": "travel",
    }
    row.update(overrides)
    return row


def write_json_rows(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def ingest_params(path, **overrides) -> dict:
    p = {"source": "files", "path": str(path), "hub_id": "alireza7/LaMP-QA", "layout": "auto",
         "configs": ["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"],
         "splits": ["train", "test"], "on_error": "fail", "limit_per_split": None, "pair_source": "test",
         "downstream_share": 0.5, "rl_prompts": None, "revision": None}
    p.update(overrides)
    return p
