"""Retries against the fake Gemini server, through the real google-genai client: transient
faults are retried until each request gets its real answer; auth and 400 errors are not."""
import pytest

from tasks.models.llm import LLM, AuthError, BadRequestError, CallCache, Completion, GenParams, LLMCallFailed, make_backend
from tasks.models.llm.retry import Backoff
from tests.fakes.gemini_server import FakeGeminiServer

KEY = "test-gemini-key"


@pytest.fixture(autouse=True)
def _gemini_key(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)


def _llm(server, tmp_path, **kw):
    backend = make_backend({"backend": "gemini", "model": "gemini-test", "base_url": server.url, "timeout_s": 1.0})
    opts = {"concurrency": 4, "max_retries": 8, "backoff_base_s": 0.01, "backoff_max_s": 0.05, **kw}
    return LLM(backend, CallCache(tmp_path / "calls.sqlite"), **opts)


def _requests(n):
    return [([{"role": "system", "content": "answer briefly"},
              {"role": "user", "content": f"question number {i}?"}], GenParams(seed=i % 5), i % 3) for i in range(n)]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_faulty_server_every_request_gets_its_real_answer(tmp_path):
    with FakeGeminiServer(api_key=KEY, fault_rate=0.3, seed=11, timeout_sleep_s=1.5) as server:
        llm = _llm(server, tmp_path)
        reqs = _requests(40)
        out = llm.generate_many(reqs, progress="gemini")
    assert all(isinstance(o, Completion) for o in out), [o for o in out if isinstance(o, LLMCallFailed)]
    # Nothing invented: each text is what the server's handler says for that very request.
    assert [o.text for o in out] == [FakeGeminiServer.default_reply(m, p.seed + s) for m, p, s in reqs]
    assert sum(server.faults.values()) > 5 and len(server.faults) >= 4
    # Exact whatever the load: each attempt is one request, and every one past a request's first is counted.
    assert llm.stats.retries == server.requests - 40 >= sum(server.faults.values()) > 0
    # A retry with no fault behind it is a fault-free answer the client stopped waiting for (its
    # timeout, on a loaded box): the server served it, the client asked again.
    assert llm.stats.retries - sum(server.faults.values()) == server.served - 40
    assert llm.stats.calls == 40 and llm.stats.failures == 0
    assert llm.stats.tokens_out > 0 and len(llm.cache) == 40


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_auth_error_fails_fast_without_retry(tmp_path):
    with FakeGeminiServer(api_key="another-key") as server:
        llm = _llm(server, tmp_path, concurrency=1)
        with pytest.raises(AuthError, match="403"):
            llm.generate(*_requests(1)[0])
        assert server.requests == 1
        with pytest.raises(AuthError):
            llm.generate_many(_requests(10))
        assert server.requests == 2, "the batch stops at the first auth error"
    assert llm.stats.retries == 0 and llm.stats.failures == 2 and len(llm.cache) == 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_auth_error_aborts_a_concurrent_batch(tmp_path):
    with FakeGeminiServer(api_key="another-key", auth_status=401) as server:
        llm = _llm(server, tmp_path, concurrency=4)
        with pytest.raises(AuthError, match="401"):
            llm.generate_many(_requests(40))
        assert server.requests < 40 and llm.stats.retries == 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_persistent_failure_is_returned_as_llmcallfailed(tmp_path):
    with FakeGeminiServer(api_key=KEY, fault_rate=1.0, fault_kinds=["503"]) as server:
        llm = _llm(server, tmp_path, max_retries=2)
        out = llm.generate_many(_requests(3))
        assert server.requests == 9
    assert all(isinstance(o, LLMCallFailed) and "503" in o.error and o.attempts == 3 for o in out)
    assert llm.stats.failures == 3 and llm.stats.retries == 6 and len(llm.cache) == 0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_failed_requests_succeed_on_a_rerun(tmp_path):
    reqs = _requests(4)
    with FakeGeminiServer(api_key=KEY, faults=["500"] * 4) as server:
        out = _llm(server, tmp_path, max_retries=0, concurrency=1).generate_many(reqs)
        assert sum(isinstance(o, LLMCallFailed) for o in out) == 4
        again = _llm(server, tmp_path, max_retries=0).generate_many(reqs)
    assert [o.text for o in again] == [FakeGeminiServer.default_reply(m, p.seed + s) for m, p, s in reqs]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_bad_request_is_not_retried(tmp_path):
    with FakeGeminiServer(api_key=KEY, faults=["400", "400"]) as server:
        llm = _llm(server, tmp_path, concurrency=1)
        with pytest.raises(BadRequestError):
            llm.generate(*_requests(1)[0])
        out = llm.generate_many(_requests(2))
        assert server.requests == 3
    assert isinstance(out[0], LLMCallFailed) and out[0].attempts == 1 and isinstance(out[1], Completion)
    assert llm.stats.retries == 0 and llm.stats.failures == 2


def test_backoff_is_full_jitter_capped_and_seeded():
    a, b = Backoff(0.5, 4.0, seed=3), Backoff(0.5, 4.0, seed=3)
    delays = [a.delay(n) for n in range(8)]
    assert delays == [b.delay(n) for n in range(8)]
    assert all(0 <= d <= min(4.0, 0.5 * 2 ** n) for n, d in enumerate(delays))
    assert delays != [Backoff(0.5, 4.0, seed=4).delay(n) for n in range(8)]
