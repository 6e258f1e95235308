"""The LLM call cache: hits cost no backend call, any change to the request misses, and results
survive the process (including a SIGKILL mid-batch)."""
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from tasks.models.llm import LLM, CallCache, Completion, GenParams
from tasks.models.llm.backends.dummy import DummyBackend, dummy_text
from tests.conftest import ROOT

MSG = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "one two three four five six"}]


def _llm(path, **kw):
    return LLM(DummyBackend(), CallCache(path), **kw)


def test_second_identical_call_is_a_hit_with_no_backend_call(tmp_path):
    llm = _llm(tmp_path / "c.sqlite")
    first = llm.generate(MSG, GenParams(seed=1))
    second = llm.generate(MSG, GenParams(seed=1))
    assert llm.backend.calls == 1
    assert second.cached and not first.cached
    assert (second.text, second.tokens_in, second.tokens_out) == (first.text, first.tokens_in, first.tokens_out)
    assert llm.stats.calls == 1 and llm.stats.cache_hits == 1


@pytest.mark.parametrize("change", [
    lambda m, p, s: (m, GenParams(seed=2), s),
    lambda m, p, s: (m, p, s + 1),
    lambda m, p, s: (m, GenParams(seed=1, temperature=0.7), s),
    lambda m, p, s: (m, GenParams(seed=1, top_p=0.9), s),
    lambda m, p, s: (m, GenParams(seed=1, max_tokens=5), s),
    lambda m, p, s: (m[:1] + [{"role": "user", "content": "one two three four five seven"}], p, s),
    lambda m, p, s: (m[1:], p, s),
])
def test_any_change_to_the_request_misses(tmp_path, change):
    llm = _llm(tmp_path / "c.sqlite")
    llm.generate(MSG, GenParams(seed=1), 0)
    llm.generate(*change(MSG, GenParams(seed=1), 0))
    assert llm.backend.calls == 2 and llm.stats.cache_hits == 0


def test_other_backend_identity_misses(tmp_path):
    path = tmp_path / "c.sqlite"
    _llm(path).generate(MSG, GenParams())
    other = LLM(DummyBackend(model="other"), CallCache(path))
    other.generate(MSG, GenParams())
    assert other.backend.calls == 1


def test_cache_key_is_the_documented_hash(tmp_path):
    llm = _llm(tmp_path / "c.sqlite")
    payload = {"op": "generate", "backend": "dummy:dummy", "messages": MSG,
               "params": GenParams(seed=4).as_dict(), "sample_index": 2}
    expected = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    assert llm.generate_key(MSG, GenParams(seed=4), 2) == expected
    llm.generate(MSG, GenParams(seed=4), 2)
    row = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT key, op FROM calls").fetchone()
    assert row == (expected, "generate")


def test_a_new_process_sees_the_results(tmp_path):
    path = tmp_path / "c.sqlite"
    code = textwrap.dedent(f"""
        from tasks.models.llm import LLM, CallCache, GenParams
        from tasks.models.llm.backends.dummy import DummyBackend
        llm = LLM(DummyBackend(), CallCache({str(path)!r}))
        print(llm.generate({MSG!r}, GenParams(seed=9), 3).text)
    """)
    text = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip()
    llm = _llm(path)
    again = llm.generate(MSG, GenParams(seed=9), 3)
    assert again.cached and again.text == text and llm.backend.calls == 0


def test_choice_logprobs_are_cached(tmp_path):
    path = tmp_path / "c.sqlite"
    llm = _llm(path)
    first = llm.choice_logprobs(MSG, ["A", "B"])
    fresh = _llm(path)
    assert fresh.choice_logprobs(MSG, ["A", "B"]) == first
    assert fresh.backend.calls == 0 and fresh.stats.cache_hits == 1
    fresh.choice_logprobs(MSG, ["A", "C"])
    assert fresh.backend.calls == 1


def test_generate_many_keeps_order_and_answers_duplicates_once(tmp_path):
    llm = _llm(tmp_path / "c.sqlite", concurrency=4)
    reqs = [([{"role": "user", "content": f"w{i} x{i} y{i} z{i}"}], GenParams(seed=i % 3), i % 2) for i in range(30)]
    reqs += reqs[:5]
    out = llm.generate_many(reqs, progress="test")
    assert [o.text for o in out] == [dummy_text(m, p, s) for m, p, s in reqs]
    assert all(isinstance(o, Completion) for o in out)
    assert llm.backend.calls == 30 and llm.stats.calls == 30 and llm.stats.cache_hits == 5
    again = llm.generate_many(reqs)
    assert all(o.cached for o in again) and llm.backend.calls == 30


def test_sigkill_loses_nothing_already_answered(tmp_path):
    path = tmp_path / "c.sqlite"
    reqs = [([{"role": "user", "content": f"alpha beta {i}"}], GenParams(seed=i), 0) for i in range(400)]
    code = textwrap.dedent(f"""
        from tasks.models.llm import LLM, CallCache, GenParams
        from tasks.models.llm.backends.dummy import DummyBackend
        reqs = [([{{"role": "user", "content": f"alpha beta {{i}}"}}], GenParams(seed=i), 0) for i in range(400)]
        LLM(DummyBackend(latency_s=0.02), CallCache({str(path)!r})).generate_many(reqs)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and child.poll() is None:
            if path.exists():
                try:
                    if sqlite3.connect(path).execute("SELECT COUNT(*) FROM calls").fetchone()[0] >= 20:
                        break
                except sqlite3.OperationalError:
                    pass   # table not created yet
            time.sleep(0.05)
        assert child.poll() is None, "the child finished before it could be killed"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    llm = _llm(path)
    out = llm.generate_many(reqs)
    assert llm.stats.cache_hits >= 20 and llm.stats.calls == 400 - llm.stats.cache_hits
    assert [o.text for o in out] == [dummy_text(m, p, s) for m, p, s in reqs]
