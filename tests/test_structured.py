"""Structured LLM output: bounded retries with a temperature bump, then invalid with the raw
text kept — never a default value."""
from tasks.models.llm import GenParams
from tasks.models.llm.backends.dummy import DummyBackend
from tasks.models.llm.cache import CallCache
from tasks.models.llm.client import LLM
from tasks.models.structured import generate_parsed

PROMPTS = [[{"role": "user", "content": f"alpha beta gamma delta epsilon zeta eta theta {i}"}] for i in range(6)]


def _llm(tmp_path):
    return LLM(DummyBackend(), CallCache(tmp_path / "calls.sqlite"), concurrency=2)


def _never(text):
    raise ValueError("never parses")


def test_unparseable_is_invalid_with_raw_kept(tmp_path):
    llm = _llm(tmp_path)
    out = generate_parsed(llm, PROMPTS, _never, GenParams(max_tokens=20), retries=2, temperature_bump=0.3)
    assert all(not p.valid and p.value is None and p.attempts == 3 for p in out)
    assert all(p.raw and p.error == "parse: never parses" for p in out)
    assert llm.stats.calls == 3 * len(PROMPTS)   # each attempt is a new request (own cache key)


def test_retry_can_succeed_and_cache_makes_reruns_free(tmp_path):
    def long_enough(text):
        if len(text.split()) < 7:
            raise ValueError("too short")
        return text

    params = GenParams(max_tokens=20, seed=3)
    first = generate_parsed(_llm(tmp_path), PROMPTS, long_enough, params, retries=4, temperature_bump=0.2)
    assert any(p.valid and p.attempts > 1 for p in first), "some rows need a retry"
    assert all(p.valid == (p.value is not None) for p in first)
    again = _llm(tmp_path)
    second = generate_parsed(again, PROMPTS, long_enough, params, retries=4, temperature_bump=0.2)
    assert [(p.value, p.raw, p.attempts) for p in second] == [(p.value, p.raw, p.attempts) for p in first]
    assert again.stats.calls == 0 and again.stats.cache_hits > 0


def test_failed_calls_are_invalid_not_invented(tmp_path):
    llm = LLM(DummyBackend(fail_every=1), CallCache(tmp_path / "c.sqlite"), max_retries=1, backoff_base_s=0.0,
              backoff_max_s=0.0)
    out = generate_parsed(llm, PROMPTS[:2], str, GenParams(), retries=1, temperature_bump=0.3)
    assert all(not p.valid and p.raw == "" and p.error.startswith("call failed:") for p in out)
    assert llm.stats.failures == 4
