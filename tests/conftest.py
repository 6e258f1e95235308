"""Test setup: never touch the network, never touch the developer's Prefect state."""
import json
import os
import re
import shutil
import tempfile
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

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_PREFECT_HOME, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)   # before `-m "not slow"` deselects
def pytest_collection_modifyitems(config, items):
    """A test on the Prefect harness starts a server (the ephemeral API: 10-120 s to come up), so it is
    slow even where a new test forgot the marker: `make test-fast` never waits for that server."""
    for item in items:
        if "prefect_harness" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def stage_server(tmp_path_factory):
    """One local Prefect server for the stage processes tests start, as `prbench run` gives its
    stages: without it each process starts an ephemeral one (10-60 s apiece on 2 busy cores)."""
    from flows import server

    srv = server.start(home=tmp_path_factory.mktemp("stage-server-home"))
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
         "splits": ["train", "test"], "on_error": "fail", "limit_per_split": None, "pair_source": "test"}
    p.update(overrides)
    return p
