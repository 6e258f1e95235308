"""API keys: read only from the environment, checked at construction in one line, and never
found in repr, identity, cache keys, the cache file, error messages or logs."""
import logging

import pytest

from tasks.core.errors import ConfigError
from tasks.models.llm import LLM, AuthError, CallCache, GenParams, LLMCallFailed, make_backend
from tests.fakes.gemini_server import FakeGeminiServer
from tests.fakes.openai_server import FakeOpenAIServer

SECRET = "sk-FAKE-9f3b1c7e-DO-NOT-LEAK"
MSG = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def no_keys(monkeypatch):
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "MY_VLLM_KEY"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_missing_gemini_key_is_one_clear_line(no_keys):
    with pytest.raises(ConfigError) as err:
        make_backend({"backend": "gemini", "model": "gemini-2.5-flash"})
    line = str(err.value)
    assert "\n" not in line and "GEMINI_API_KEY" in line and "GOOGLE_API_KEY" in line


def test_google_api_key_is_accepted(no_keys):
    no_keys.setenv("GOOGLE_API_KEY", SECRET)
    assert make_backend({"backend": "gemini", "model": "m"}).identity() == "gemini:m:thinking=0"


def test_openai_key_required_only_where_it_must_be(no_keys):
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_backend({"backend": "openai", "model": "gpt-4o-mini"})   # api.openai.com
    with pytest.raises(ConfigError, match="MY_VLLM_KEY"):
        make_backend({"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1",
                      "api_key_env": "MY_VLLM_KEY"})
    make_backend({"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"})   # local: no key


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_gemini_key_never_leaks(no_keys, tmp_path, caplog, capsys):
    no_keys.setenv("GEMINI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    seen = []
    with FakeGeminiServer(api_key=SECRET, faults=["429", "timeout", "malformed", "503"],
                          timeout_sleep_s=1.5) as server:
        backend = make_backend({"backend": "gemini", "model": "gemini-test", "base_url": server.url,
                                "timeout_s": 1.0})
        llm = LLM(backend, CallCache(tmp_path / "calls.sqlite"), max_retries=5, backoff_base_s=0.01)
        out = llm.generate_many([(MSG, GenParams(seed=i), 0) for i in range(3)])
        assert all(o.text.startswith("echo") for o in out)
        assert llm.stats.retries == server.requests - 3 >= 4, "every fault retried; one more request each"
        seen += [repr(backend), repr(llm), backend.identity(), llm.generate_key(MSG, GenParams()), str(vars(llm))]
    with FakeGeminiServer(api_key="the-right-key") as server:   # ours is wrong here
        wrong = LLM(make_backend({"backend": "gemini", "model": "m", "base_url": server.url}),
                    CallCache(tmp_path / "calls.sqlite"))
        with pytest.raises(AuthError) as err:
            wrong.generate(MSG, GenParams())
        seen.append(str(err.value))
    with FakeGeminiServer(api_key=SECRET, fault_rate=1.0, fault_kinds=["timeout"], timeout_sleep_s=1.0) as server:
        slow = LLM(make_backend({"backend": "gemini", "model": "m", "base_url": server.url, "timeout_s": 0.3}),
                   CallCache(tmp_path / "calls.sqlite"), max_retries=0)
        failed = slow.generate_many([(MSG, GenParams(), 0)])[0]
        assert isinstance(failed, LLMCallFailed)
        seen.append(failed.error)
    captured = capsys.readouterr()
    seen += [caplog.text, captured.out, captured.err]
    assert "generateContent" in caplog.text, "the HTTP layer's debug logs were captured"

    cache_bytes = b"".join(p.read_bytes() for p in tmp_path.glob("calls.sqlite*"))
    assert SECRET not in "\n".join(seen)
    assert SECRET.encode() not in cache_bytes and b"echo" in cache_bytes


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_openai_key_never_leaks(no_keys, tmp_path, caplog):
    no_keys.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer(api_key=SECRET) as server:
        backend = make_backend({"backend": "openai", "model": "m", "base_url": server.url + "/v1"})
        llm = LLM(backend, CallCache(tmp_path / "calls.sqlite"))
        assert llm.generate(MSG, GenParams()).text.startswith("echo")
    with FakeOpenAIServer(api_key="other") as server:
        with pytest.raises(AuthError) as err:
            make_backend({"backend": "openai", "model": "m", "base_url": server.url + "/v1"}).generate(
                MSG, GenParams(), 0)
    text = "\n".join([repr(backend), backend.identity(), str(err.value), caplog.text])
    assert SECRET not in text
    assert SECRET.encode() not in b"".join(p.read_bytes() for p in tmp_path.glob("calls.sqlite*"))
