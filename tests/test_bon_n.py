"""BoN sampling at scale: an OpenAI-compatible server that takes `n` (vLLM) is asked once per
question for its N candidates instead of N times, the candidates are the very ones N single
requests give (vLLM seeds choice i with seed + i, as the fake server does), and each is cached
under its own sample index, so raising N asks only for the new ones."""
import pytest

from tasks.models.llm import LLM, CallCache, Completion, GenParams, make_backend
from tests.fakes.openai_server import FakeOpenAIServer

PROMPTS = [[{"role": "user", "content": f"Write an answer to question {i}."}] for i in range(3)]
PARAMS = GenParams(temperature=1.0, top_p=0.9, max_tokens=32, seed=2604)


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _llm(server, cache, supports_n: bool, **kw) -> LLM:
    backend = make_backend({"backend": "openai", "model": "policy", "base_url": server.url + "/v1",
                            "supports_n": supports_n, "timeout_s": 2.0})
    return LLM(backend, CallCache(cache), backoff_base_s=0.01, backoff_max_s=0.02, concurrency=4, **kw)


def texts(out) -> list[list[str]]:
    return [[c.text for c in per_q] for per_q in out]


def test_one_request_per_question_same_candidates_cached_per_index(tmp_path):
    with FakeOpenAIServer() as single, FakeOpenAIServer() as batched:
        one_by_one = _llm(single, tmp_path / "a.sqlite", supports_n=False).sample_many([(m, PARAMS) for m in PROMPTS], 4)
        llm = _llm(batched, tmp_path / "b.sqlite", supports_n=True)
        with_n = llm.sample_many([(m, PARAMS) for m in PROMPTS], 4)
        assert single.requests == 12 and batched.requests == 3, "N requests per question vs one"
        assert texts(with_n) == texts(one_by_one)
        assert batched.choices_served == 12 and llm.stats.calls == 3
        assert all(isinstance(c, Completion) for per_q in with_n for c in per_q)

        # each candidate sits under its own (prompt, sample index) key: the per-sample path reads them all
        assert texts(_llm(batched, tmp_path / "b.sqlite", supports_n=False).sample_many(
            [(m, PARAMS) for m in PROMPTS], 4)) == texts(one_by_one)
        assert batched.requests == 3

        more = _llm(batched, tmp_path / "b.sqlite", supports_n=True)   # raise N: only samples 4..5 are asked for
        six = more.sample_many([(m, PARAMS) for m in PROMPTS], 6)
        assert batched.requests == 6 and batched.choices_served == 18 and more.stats.cache_hits == 12
        fresh = _llm(single, tmp_path / "c.sqlite", supports_n=False).sample_many([(m, PARAMS) for m in PROMPTS], 6)
        assert texts(six) == texts(fresh), "a warm cache and a cold one give the same candidates"


def test_an_empty_choice_is_retried_alone_and_kept_invalid(tmp_path):
    bad_seed = PARAMS.seed + 2

    def reply(messages, seed):
        return "" if seed == bad_seed else f"answer {seed}"

    with FakeOpenAIServer(reply) as server:
        llm = _llm(server, tmp_path / "calls.sqlite", supports_n=True, max_retries=2)
        (out,) = llm.sample_many([(PROMPTS[0], PARAMS)], 4)
    assert [getattr(c, "text", None) for c in out] == ["answer 2604", "answer 2605", None, "answer 2607"]
    assert "empty response" in out[2].error
    assert server.requests == 1 + 3, "one request with n=4, then sample 2 alone: 1 try + 2 retries"


def test_bon_sample_stage_asks_once_per_question(tmp_path):
    from tasks.downstream.bon import sample
    from tests.stage_project import make_project, save_params
    from tests.test_bon_stage import BON, paths

    # 4 per domain: 2 of them the downstream half BoN reads
    params = make_project(tmp_path, configs=("Lifestyle_and_Personal_Development", "Art_and_Entertainment"), limit=4)
    params["bon"] = dict(BON)
    with FakeOpenAIServer() as server:
        rows = {}
        for supports_n in (False, True):
            params["llms"]["test-llm"] = {"backend": "openai", "model": "policy", "base_url": server.url + "/v1",
                                          "supports_n": supports_n}
            params["common"]["cache_dir"] = str(tmp_path / f"cache-{supports_n}")
            save_params(tmp_path, params)
            p = paths(tmp_path)
            before = server.requests
            m = sample.run(params, p["inputs"], p["sample"])
            rows[supports_n] = (server.requests - before, m["run"]["llm:test-llm"]["calls"],
                                open(p["sample"]["samples"], "rb").read())
    assert rows[False][:2] == (16, 16) and rows[True][:2] == (4, 4), "4 questions x N=4: 16 requests vs 4"
    assert rows[True][2] == rows[False][2], "the same samples.parquet bytes either way"
