"""The pairs stage as a real process: resumable after SIGKILL with nothing recomputed, complete
under injected API faults, and never leaking an API key."""
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.core import layout
from tasks.core.artifacts import file_hash
from tasks.core.runlog import read_counters
from tests.conftest import ROOT
from tests.stage_project import make_project, save_params

PARQUET = [layout.PAIRS[k] for k in ("generated_pairs", "judged_pairs", "selected_pairs")]


@pytest.fixture(autouse=True)
def _report_to_one_server(stage_server, monkeypatch):
    """Every stage process here reports to the session's server (os.environ is what they inherit)."""
    for key, value in stage_server.client_env().items():
        monkeypatch.setenv(key, value)


def _run_stage(cwd: Path, env_extra=None, wait=True):
    """The stage as its own process; output goes to a file so a full pipe can never block it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    log = cwd / f"stage-{time.monotonic_ns()}.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "flows.stage", "pairs"], cwd=cwd, env=env, stdout=fh,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    if wait:
        proc.wait(timeout=240)
        out = log.read_text()
        assert proc.returncode == 0, out[-3000:]
        return out
    return proc


def _cached_calls(cache_dir: Path) -> int:
    db = cache_dir / "llm_calls.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
@pytest.mark.timeout(480)   # 59 s in CI, 193 s on a shared box
def test_sigkill_then_rerun_makes_only_missing_calls(tmp_path):
    slow_dummy = {"backend": "dummy", "model": "dummy", "latency_s": 0.4, "concurrency": 1}
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    for root in (killed, clean):
        root.mkdir()
        make_project(root, limit=5, llm=slow_dummy, downstream_share=0)
    total = 10   # 5 questions × (chosen, rejected); the dummy always parses

    proc = _run_stage(killed, wait=False)
    deadline = time.monotonic() + 300
    while _cached_calls(killed / "cache") < 4:
        assert proc.poll() is None and time.monotonic() < deadline, "stage ended before it could be killed"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)   # its group: the stage and its ephemeral Prefect server
    proc.wait()
    done_before = _cached_calls(killed / "cache")
    assert 4 <= done_before < total
    assert not (killed / layout.PAIRS["selected_pairs"]).exists(), "no partial artifact"

    _run_stage(killed)
    stats = read_counters(killed / layout.PAIRS["metrics"])["llm:test-llm"]
    assert stats["calls"] == total - done_before and stats["cache_hits"] == done_before

    _run_stage(clean)
    for rel in PARQUET:
        assert file_hash(killed / rel) == file_hash(clean / rel), rel


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_missing_api_key_fails_fast_with_one_line(tmp_path):
    params = make_project(tmp_path, limit=1, llm={"backend": "gemini", "model": "gemini-2.5-flash"})
    save_params(tmp_path, params)
    env = {k: v for k, v in os.environ.items() if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    proc = subprocess.run([sys.executable, "-m", "flows.stage", "pairs"], cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    ours = [line for line in proc.stderr.splitlines() if "GEMINI_API_KEY" in line and " | " not in line]
    assert len(ours) == 1 and not _cached_calls(tmp_path / "cache"), proc.stderr[-2000:]


KEY = "test-key-7f3a9c-do-not-leak"


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_gemini_with_30pct_faults_completes_every_row_and_never_leaks_the_key(tmp_path, stage_server):
    import hashlib

    from tests.fakes.gemini_server import FakeGeminiServer

    produced = set()

    def reply(messages, seed):
        prompt = messages[-1]["content"]
        text = f"Answer {hashlib.sha256(prompt.encode()).hexdigest()[:10]}: start with two pots and cheap seeds."
        produced.add(text)
        return text

    kinds = ("429", "500", "503", "malformed", "empty", "timeout")
    with FakeGeminiServer(reply, api_key=KEY, fault_rate=0.3, fault_kinds=kinds, seed=7,
                          timeout_sleep_s=1.5) as server:
        llm = {"backend": "gemini", "model": "gemini-2.5-flash", "base_url": server.url, "timeout_s": 1.0,
               "concurrency": 4, "max_retries": 10, "backoff_base_s": 0.02, "backoff_max_s": 0.2}
        make_project(tmp_path, limit=6, llm=llm, downstream_share=0)
        out = _run_stage(tmp_path, {"GEMINI_API_KEY": KEY})
        assert sum(server.faults.values()) > 0
    rows = pq.read_table(tmp_path / layout.PAIRS["generated_pairs"]).to_pylist()
    assert len(rows) == 6 and all(r["format_ok"] for r in rows)
    assert {r["chosen"] for r in rows} | {r["rejected"] for r in rows} <= produced, "no invented text"
    stats = read_counters(tmp_path / layout.PAIRS["metrics"])["llm:test-llm"]
    assert stats["calls"] == 12 and stats["failures"] == 0   # 6 questions × (chosen, rejected), each parsed
    # Exact accounting: every attempt reached the server, and each extra one is explained by an injected
    # fault or by an answer that came after the client's 1 s timeout (served beyond the 12 calls: only
    # under heavy load). So a retry the SDK made on its own, or one we did not count, fails here.
    late = server.served - stats["calls"]
    assert server.requests == stats["calls"] + stats["retries"]
    assert stats["retries"] == sum(server.faults.values()) + late, (dict(server.faults), late, stats)

    leaks = [str(p) for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    homes = [Path(os.environ["PREFECT_HOME"]), stage_server.log.parent]   # the stage's; the server's DB and log
    leaks += [str(p) for home in homes for p in home.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert KEY not in out and leaks == []


@pytest.mark.slow
@pytest.mark.timeout(360)
def test_openai_compatible_server_is_a_params_change(tmp_path):
    from tests.fakes.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(lambda messages, seed: "Keep it simple: two pots, cheap seeds, a sunny rail.",
                          api_key=None) as server:
        make_project(tmp_path, limit=2, downstream_share=0, llm={"backend": "openai", "model": "Qwen/Qwen2.5-0.5B-Instruct",
                                             "base_url": f"{server.url}/v1"})
        _run_stage(tmp_path)
        assert server.served == 4
    rows = pq.read_table(tmp_path / layout.PAIRS["generated_pairs"]).to_pylist()
    assert [r["chosen"] for r in rows] == ["Keep it simple: two pots, cheap seeds, a sunny rail."] * 2
    assert rows[0]["generator"].startswith("openai:")
