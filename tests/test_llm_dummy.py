"""The dummy backend is a pure function of the request; the registry builds backends by name."""
import math

import pytest

from tasks.errors import ConfigError
from tasks.llm import BACKENDS, LLM, CallCache, GenParams, LLMCallFailed, RetryableError, make_backend, make_llm
from tasks.llm.backends.dummy import DummyBackend

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
