"""Backends by name, built from a params entry: {"backend": name, "model": ..., options...}."""
from __future__ import annotations

import inspect
from pathlib import Path

from tasks.errors import ConfigError, did_you_mean
from tasks.llm.backends.dummy import DummyBackend
from tasks.llm.backends.gemini import GeminiBackend
from tasks.llm.backends.llamacpp import LlamaCppBackend
from tasks.llm.backends.openai_compat import OpenAIBackend
from tasks.llm.backends.transformers_backend import TransformersBackend
from tasks.llm.base import Backend
from tasks.llm.cache import CallCache
from tasks.llm.client import LLM

BACKENDS: dict[str, type[Backend]] = {
    "dummy": DummyBackend,
    "llamacpp": LlamaCppBackend,
    "transformers": TransformersBackend,
    "gemini": GeminiBackend,
    "openai": OpenAIBackend,
}
# Options of the LLM client itself; everything else in the entry goes to the backend.
CLIENT_OPTIONS = ("concurrency", "max_retries", "backoff_base_s", "backoff_max_s", "retry_seed")


def _options(cls: type[Backend]) -> list[str]:
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


def make_backend(config: dict) -> Backend:
    options = {k: v for k, v in config.items() if k != "backend" and k not in CLIENT_OPTIONS}
    name = config.get("backend")
    if not name:
        raise ConfigError(f"llm.backend: missing; valid: {', '.join(sorted(BACKENDS))}")
    if name not in BACKENDS:
        raise ConfigError(f"llm.backend: {did_you_mean(str(name), BACKENDS)}")
    cls = BACKENDS[name]
    valid = _options(cls)
    for key in options:
        if key not in valid:
            raise ConfigError(f"llm.{key}: not an option of backend '{name}': {did_you_mean(key, valid)}")
    return cls(**options)


def make_llm(config: dict, cache_path: str | Path) -> LLM:
    client = {k: config[k] for k in CLIENT_OPTIONS if k in config}
    if "retry_seed" in client:
        client["seed"] = client.pop("retry_seed")
    return LLM(make_backend(config), CallCache(cache_path), **client)
