"""The dummy backend is a pure function of the request; the registry builds backends by name."""
import math

import pytest

from tasks.core.errors import ConfigError
from tasks.models.llm import BACKENDS, LLM, CallCache, GenParams, LLMCallFailed, RetryableError, make_backend, make_llm
from tasks.models.llm.backends.dummy import DummyBackend

MSG = [{"role": "user", "content": "the quick brown fox jumps over the lazy dog"}]


def test_dummy_is_deterministic():
    a, b = DummyBackend(), DummyBackend()
    assert a.generate(MSG, GenParams(seed=3), 1).text == b.generate(MSG, GenParams(seed=3), 1).text
    texts = {a.generate(MSG, GenParams(seed=s), i).text for s in range(4) for i in range(4)}
    assert len(texts) > 8, "seed and sample_index change the answer"
    words = set(MSG[0]["content"].split())
    assert set(a.generate(MSG, GenParams(), 0).text.split()) <= words
    assert len(a.generate(MSG, GenParams(max_tokens=2), 0).text.split()) <= 2


def test_dummy_choice_logprobs_deterministic_and_normalised():
    lp = DummyBackend().choice_logprobs(MSG, ["A", "B", "C"])
    assert lp == DummyBackend().choice_logprobs(MSG, ["A", "B", "C"])
    assert math.isclose(sum(math.exp(v) for v in lp.values()), 1.0)


def test_fail_every_injects_retryable_errors(tmp_path):
    backend = DummyBackend(fail_every=3)
    outcomes = []
    for i in range(6):
        try:
            backend.generate(MSG, GenParams(seed=i), 0)
            outcomes.append("ok")
        except RetryableError:
            outcomes.append("fail")
    assert outcomes == ["ok", "ok", "fail", "ok", "ok", "fail"]
    llm = LLM(DummyBackend(fail_every=2), CallCache(tmp_path / "c.sqlite"), backoff_base_s=0, backoff_max_s=0)
    out = llm.generate_many([(MSG, GenParams(seed=i), 0) for i in range(5)])
    assert not any(isinstance(o, LLMCallFailed) for o in out)
    assert llm.stats.retries == 4 and llm.stats.failures == 0 and llm.stats.calls == 5


def test_registry_names_and_unknown_backend():
    assert set(BACKENDS) == {"dummy", "llamacpp", "transformers", "gemini", "openai"}
    with pytest.raises(ConfigError) as err:
        make_backend({"backend": "gemeni", "model": "x"})
    assert "did you mean 'gemini'" in str(err.value) and "llamacpp" in str(err.value)
    with pytest.raises(ConfigError) as err:
        make_backend({"backend": "dummy", "modle": "x"})
    assert "did you mean 'model'" in str(err.value)


def test_make_llm_splits_client_and_backend_options(tmp_path):
    llm = make_llm({"backend": "dummy", "model": "m", "fail_every": 0, "concurrency": 3, "max_retries": 2,
                    "retry_seed": 5}, tmp_path / "calls.sqlite")
    assert isinstance(llm.backend, DummyBackend) and llm.backend.model == "m"
    assert llm.concurrency == 3 and llm.max_retries == 2
    assert llm.generate(MSG, GenParams()).text
    assert (tmp_path / "calls.sqlite").exists()


class FlakyBackend(DummyBackend):
    """Fails the first `fails` attempts at each distinct request (a retryable error), then answers."""

    def __init__(self, fails: int):
        super().__init__()
        self.fails, self.attempts = fails, {}

    def generate(self, messages, params, sample_index):
        key = (params.seed, sample_index)
        self.attempts[key] = self.attempts.get(key, 0) + 1
        if self.attempts[key] <= self.fails:
            self.calls += 1
            raise RetryableError(f"flaky: attempt {self.attempts[key]} at {key}")
        return super().generate(messages, params, sample_index)


def _client(backend, path, max_retries):
    return LLM(backend, CallCache(path), max_retries=max_retries, backoff_base_s=0, backoff_max_s=0)


@pytest.mark.parametrize("fails, max_retries, ok", [(2, 2, True), (3, 2, False), (0, 0, True), (1, 0, False)])
def test_exactly_max_retries_extra_attempts_then_the_call_fails(tmp_path, fails, max_retries, ok):
    backend = FlakyBackend(fails)
    llm = _client(backend, tmp_path / "c.sqlite", max_retries)
    reqs = [(MSG, GenParams(seed=i), 0) for i in range(3)]
    out = llm.generate_many(reqs)
    attempts = min(fails, max_retries) + 1
    assert backend.calls == 3 * attempts, "each request is tried 1 + max_retries times at most, no more"
    assert llm.stats.retries == 3 * (attempts - 1) and llm.stats.calls == 3
    if ok:
        assert [o.text for o in out] == [DummyBackend().generate(*r).text for r in reqs]
        assert llm.stats.failures == 0 and len(llm.cache) == 3
    else:
        assert all(isinstance(o, LLMCallFailed) and o.attempts == attempts and "flaky" in o.error for o in out)
        assert llm.stats.failures == 3


def test_a_failed_call_is_never_cached_and_is_made_again_on_the_rerun(tmp_path):
    reqs = [(MSG, GenParams(seed=i), 0) for i in range(3)]
    down = _client(DummyBackend(fail_every=1), tmp_path / "c.sqlite", 1)
    assert all(isinstance(o, LLMCallFailed) for o in down.generate_many(reqs))
    with pytest.raises(RetryableError):
        down.generate(MSG, GenParams(seed=9), 0)
    with pytest.raises(RetryableError):
        down.choice_logprobs(MSG, ["A", "B"])
    assert len(down.cache) == 0, "nothing failed is in the cache"

    healthy = DummyBackend()
    again = _client(healthy, tmp_path / "c.sqlite", 1)
    assert [o.text for o in again.generate_many(reqs)] == [healthy.generate(*r).text for r in reqs]
    assert again.generate(MSG, GenParams(seed=9), 0).cached is False
    assert set(again.choice_logprobs(MSG, ["A", "B"])) == {"A", "B"}
    assert again.stats.calls == 5 and again.stats.cache_hits == 0, "every failed request was sent again"
    third = _client(DummyBackend(fail_every=1), tmp_path / "c.sqlite", 0)
    assert all(o.cached for o in third.generate_many(reqs)) and third.stats.calls == 0, "successes are kept"
