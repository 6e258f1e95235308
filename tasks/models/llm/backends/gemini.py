"""Google Gemini through the official google-genai client (any base_url speaking its protocol).

The key comes only from GEMINI_API_KEY or GOOGLE_API_KEY and lives only inside the client:
it is not an attribute here, not in identity(), and it is scrubbed from error messages.

Gemini 2.5 "thinks" before it answers, and thinking tokens count against max_output_tokens:
with our short budgets (120-140) the visible reply comes back empty or cut. `thinking_budget`
(params `llms.<name>.thinking_budget`; 0 = off, null = the model's own dynamic default) is sent
with every request and is part of identity(), so changing it never reuses cached replies.
"""
from __future__ import annotations

import json
import os
import time

from tasks.core.errors import ConfigError
from tasks.core.registry import at_least, url
from tasks.models.llm.backends import BACKENDS
from tasks.models.llm.base import Backend, Completion, GenParams
from tasks.models.llm.retry import RetryableError, error_for_status, is_retryable

KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}


def _api_key() -> str:
    for var in KEY_VARS:
        if os.environ.get(var):
            return os.environ[var]
    raise ConfigError(f"llm backend 'gemini' needs an API key: set {' or '.join(KEY_VARS)} in the environment")


@BACKENDS.register("gemini")
class GeminiBackend(Backend):
    name = "gemini"
    parallel_safe = True

    def __init__(self, model: str = "gemini-2.5-flash", base_url: url() | None = None, timeout_s: at_least(0, float) = 60.0,
                 thinking_budget: at_least(0) | None = 0):
        from google import genai
        from google.genai import types

        if thinking_budget is not None and (not isinstance(thinking_budget, int) or thinking_budget < -1):
            raise ConfigError(f"llm.thinking_budget: need a token count (0 = off) or null, got {thinking_budget!r}")
        key = _api_key()
        self.model, self.base_url, self.timeout_s = model, base_url, float(timeout_s)
        self.thinking_budget = thinking_budget
        # Our client owns the retries (counted, jittered, seeded): the SDK's own stay off.
        http = types.HttpOptions(base_url=base_url, api_version="v1beta", timeout=int(self.timeout_s * 1000),
                                 retry_options=types.HttpRetryOptions(attempts=1))
        self._client = genai.Client(api_key=key, http_options=http)
        self._scrub = lambda text: text.replace(key, "***") if key else text

    def identity(self) -> str:
        thinking = "dynamic" if self.thinking_budget is None else self.thinking_budget
        return f"gemini:{self.model}:thinking={thinking}"

    def _request(self, messages: list[dict], params: GenParams, sample_index: int):
        from google.genai import types

        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
        contents = [types.Content(role="model" if m["role"] == "assistant" else "user",
                                  parts=[types.Part(text=m["content"])])
                    for m in messages if m["role"] != "system"]
        config = types.GenerateContentConfig(
            temperature=params.temperature, top_p=params.top_p, max_output_tokens=params.max_tokens,
            seed=params.seed + sample_index, system_instruction=system, candidate_count=1,
            thinking_config=None if self.thinking_budget is None else
            types.ThinkingConfig(thinking_budget=self.thinking_budget),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
        return self._client.models.generate_content(model=self.model, contents=contents, config=config)

    def generate(self, messages: list[dict], params: GenParams, sample_index: int) -> Completion:
        from google.genai import errors

        start = time.perf_counter()
        try:
            response = self._request(messages, params, sample_index)
        except errors.APIError as exc:
            raise error_for_status(int(exc.code or 500), self._scrub(str(exc.message or exc.status))) from None
        except (json.JSONDecodeError, ValueError) as exc:   # a body that is not the expected JSON
            raise RetryableError(f"gemini: malformed response: {self._scrub(str(exc))[:200]}") from None
        except Exception as exc:
            if is_retryable(exc):   # timeouts, connection errors: re-raised without the key
                raise RetryableError(f"gemini: {type(exc).__name__}: {self._scrub(str(exc))}") from None
            raise
        candidates = response.candidates or []
        parts = (candidates[0].content.parts or []) if candidates and candidates[0].content else []
        text = "".join(p.text or "" for p in parts if not getattr(p, "thought", False))
        if not text:
            reason = candidates[0].finish_reason if candidates else None
            hint = " (thinking may have used the whole output budget: set thinking_budget)" \
                if "MAX_TOKENS" in str(reason) else ""
            raise RetryableError(f"gemini: empty response (finish_reason={reason}){hint}")
        usage = response.usage_metadata
        reason = getattr(candidates[0].finish_reason, "value", candidates[0].finish_reason) or "STOP"
        return Completion(text=text, tokens_in=(usage and usage.prompt_token_count) or 0,
                          tokens_out=(usage and usage.candidates_token_count) or 0,
                          latency_s=time.perf_counter() - start,
                          finish_reason=FINISH.get(str(reason), str(reason).lower()))

    def choice_logprobs(self, messages: list[dict], choices: list[str]) -> dict[str, float]:
        raise NotImplementedError("gemini: the Gemini API returns no next-token log-probabilities for "
                                  "given choices; use a generation-based judge or another backend")
