"""Any OpenAI-compatible chat server (OpenAI, vLLM, llama.cpp server) over plain httpx.

The key is read from OPENAI_API_KEY (or the variable named by `api_key_env`). It is required
for api.openai.com or when `api_key_env` is set explicitly; a local server needs none.
"""
from __future__ import annotations

import math
import os
import time

import httpx

from tasks.core.errors import ConfigError
from tasks.core.registry import at_least, url
from tasks.models.llm.backends import BACKENDS
from tasks.models.llm.base import Backend, Completion, GenParams
from tasks.models.llm.retry import BadRequestError, RetryableError, error_for_status, is_retryable

OFFICIAL = "https://api.openai.com/v1"


@BACKENDS.register("openai")
class OpenAIBackend(Backend):
    name = "openai"
    parallel_safe = True

    def __init__(self, model: str, base_url: url() = OFFICIAL, api_key_env: str | None = None,
                 timeout_s: at_least(0, float) = 60.0, connect_timeout_s: at_least(0, float) = 10.0,
                 supports_n: bool = False):
        var = api_key_env or "OPENAI_API_KEY"
        key = os.environ.get(var) or None
        if key is None and (api_key_env or base_url.rstrip("/") == OFFICIAL):
            raise ConfigError(f"llm backend 'openai' needs an API key: set {var} in the environment")
        self.model, self.base_url = model, base_url.rstrip("/")
        # one request with `n` for several samples (BoN); vLLM seeds child i with seed + i, so the
        # candidates are the very ones n single requests would give and caching per index holds
        self.supports_n = bool(supports_n)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
                                  limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))
        self._scrub = lambda text: text.replace(key, "***") if key else text

    def identity(self) -> str:
        # The served model name is the identity (vLLM serves under the HF id); the URL is not,
        # so a server on another port or host keeps the cache.
        return f"openai:{self.model}"

    def _post(self, body: dict) -> dict:
        try:
            r = self._http.post(f"{self.base_url}/chat/completions", json={"model": self.model, **body})
        except Exception as exc:
            if is_retryable(exc):
                raise RetryableError(f"openai: {type(exc).__name__}: {self._scrub(str(exc))}") from None
            raise
        if r.status_code != 200:
            raise error_for_status(r.status_code, self._scrub(r.text[:300]))
        try:
            data = r.json()
            data["choices"][0]
            return data
        except (ValueError, KeyError, IndexError, TypeError):
            raise RetryableError(f"openai: malformed response: {self._scrub(r.text[:200])!r}") from None

    def generate(self, messages: list[dict], params: GenParams, sample_index: int) -> Completion:
        start = time.perf_counter()
        data = self._post({"messages": messages, "temperature": params.temperature, "top_p": params.top_p,
                           "max_tokens": params.max_tokens, "seed": params.seed + sample_index})
        choice, usage = data["choices"][0], data.get("usage") or {}
        text = (choice.get("message") or {}).get("content")
        if not text:
            raise RetryableError(f"openai: empty response (finish_reason={choice.get('finish_reason')})")
        return Completion(text=text, tokens_in=usage.get("prompt_tokens", 0),
                          tokens_out=usage.get("completion_tokens", 0), latency_s=time.perf_counter() - start,
                          finish_reason=choice.get("finish_reason") or "stop")

    def generate_n(self, messages: list[dict], params: GenParams, first_index: int, n: int) -> list[Completion | None]:
        """Samples first_index .. first_index+n-1 in one request (`n`, seed of the first). Usage is per
        request: the prompt tokens, the latency and the rest of the completion tokens go to the first
        candidate. None in place of an empty choice (the caller retries that sample alone)."""
        start = time.perf_counter()
        data = self._post({"messages": messages, "temperature": params.temperature, "top_p": params.top_p,
                           "max_tokens": params.max_tokens, "seed": params.seed + first_index, "n": n})
        choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
        if len(choices) != n:
            raise RetryableError(f"openai: asked for n={n} choices, got {len(choices)}")
        usage, latency = data.get("usage") or {}, time.perf_counter() - start
        out_tokens = usage.get("completion_tokens", 0)
        out = []
        for j, choice in enumerate(choices):
            text = (choice.get("message") or {}).get("content")
            share = out_tokens // n + (out_tokens % n if j == 0 else 0)
            out.append(Completion(text=text, tokens_in=usage.get("prompt_tokens", 0) if j == 0 else 0,
                                  tokens_out=share, latency_s=latency if j == 0 else 0.0,
                                  finish_reason=choice.get("finish_reason") or "stop") if text else None)
        return out

    def choice_logprobs(self, messages: list[dict], choices: list[str]) -> dict[str, float]:
        """Read from the server's top-20 next tokens. Without the server's tokenizer a choice is
        matched to the best-ranked top token that is a non-empty prefix of it (leading spaces
        ignored). A choice with no such token gets an upper bound of its log-probability (the
        20th token's, or the mass left outside the top 20 when smaller), so "A" at 0.99 with "B"
        unlisted stays a clear verdict instead of a -inf; when no choice is listed at all, every
        one is -inf and the judge's verdict is invalid (their difference is NaN)."""
        data = self._post({"messages": messages, "temperature": 0.0, "max_tokens": 1,
                           "logprobs": True, "top_logprobs": 20})
        try:
            top = data["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        except (KeyError, IndexError, TypeError):
            raise BadRequestError("openai: response has no logprobs (does the server support them?)") from None
        out = {}
        for c in choices:
            found = [t["logprob"] for t in top if t["token"].lstrip() and c.lstrip().startswith(t["token"].lstrip())]
            out[c] = max(found) if found else -math.inf
        if top and any(math.isfinite(v) for v in out.values()):
            rest = 1.0 - sum(math.exp(t["logprob"]) for t in top)
            bound = min(min(t["logprob"] for t in top), math.log(rest) if rest > 1e-9 else math.inf)
            out = {c: v if math.isfinite(v) else bound for c, v in out.items()}
        return out
