"""The OpenAI-compatible backend against a local fake server: generation, retries, logprobs."""

import pytest

from tasks.models.llm import LLM, CallCache, Completion, GenParams, make_backend
from tests.fakes.openai_server import FakeOpenAIServer, default_logprobs

MSG = [{"role": "system", "content": "judge"}, {"role": "user", "content": "Which answer fits, A or B?"}]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _llm(server, tmp_path, **kw):
    backend = make_backend({"backend": "openai", "model": "local-model", "base_url": server.url + "/v1",
                            "timeout_s": 1.0})
    return LLM(backend, CallCache(tmp_path / "calls.sqlite"), backoff_base_s=0.01, backoff_max_s=0.05, **kw)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_generation(tmp_path):
    with FakeOpenAIServer() as server:
        llm = _llm(server, tmp_path)
        c = llm.generate(MSG, GenParams(seed=4, max_tokens=32), 2)
    assert c.text == FakeOpenAIServer.default_reply(MSG, 6)
    assert c.tokens_in == 7 and c.tokens_out == len(c.text.split()) and c.finish_reason == "stop"
    assert llm.backend.identity() == "openai:local-model" and llm.backend.parallel_safe


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_retries_then_real_answers_in_order(tmp_path):
    with FakeOpenAIServer(faults=["429", "empty", "malformed", "500", "timeout"], timeout_sleep_s=1.5) as server:
        llm = _llm(server, tmp_path, concurrency=4, max_retries=6)
        reqs = [([{"role": "user", "content": f"q{i}"}], GenParams(seed=i), 0) for i in range(12)]
        out = llm.generate_many(reqs)
    assert all(isinstance(o, Completion) for o in out)
    assert [o.text for o in out] == [f"echo[{i}]: q{i}" for i in range(12)]
    # each attempt is one request; a retry beyond the 5 faults is an answer the client stopped
    # waiting for (its timeout, on a loaded box), which the server did serve
    assert llm.stats.retries == server.requests - 12 >= 5
    assert llm.stats.retries - 5 == server.served - 12


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_choice_logprobs_from_top_logprobs(tmp_path):
    with FakeOpenAIServer() as server:
        llm = _llm(server, tmp_path)
        lp = llm.choice_logprobs(MSG, ["A", "B", "Z"])
        again = _llm(server, tmp_path).choice_logprobs(MSG, ["A", "B", "Z"])
        assert server.requests == 1, "the second call is served from the cache"
    dist = default_logprobs(MSG)
    assert lp["A"] == max(dist["A"], dist[" A"]) and lp["B"] == max(dist["B"], dist[" B"])
    assert lp["Z"] == min(dist.values()), "a choice outside the top list: the lowest listed log-prob bounds it"
    assert again == lp
