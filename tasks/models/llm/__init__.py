"""The LLM layer: one interface over local and API models, a durable call cache, and retries.

    llm = make_llm({"backend": "llamacpp", "model": "embedded:smollm2-135m"}, ".prbench-cache/llm.sqlite")
    llm.generate([{"role": "user", "content": "Hi"}], GenParams(max_tokens=32))
"""
from tasks.models.llm.base import Backend, Completion, GenParams, LLMCallFailed
from tasks.models.llm.cache import CallCache
from tasks.models.llm.client import LLM, CallStats
from tasks.models.llm.registry import BACKENDS, make_backend, make_llm
from tasks.models.llm.retry import AuthError, BadRequestError, FatalError, RetryableError

__all__ = ["Backend", "Completion", "GenParams", "LLMCallFailed", "CallCache", "LLM", "CallStats",
           "BACKENDS", "make_backend", "make_llm", "AuthError", "BadRequestError", "FatalError",
           "RetryableError"]
