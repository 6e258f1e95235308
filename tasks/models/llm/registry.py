"""Backends by name, built from a params entry: {"backend": name, "model": ..., options...}."""
from __future__ import annotations

from pathlib import Path

from tasks.core.errors import ConfigError
from tasks.models.llm.backends import BACKENDS
from tasks.models.llm.cache import CallCache
from tasks.models.llm.client import LLM
from tasks.core.registry import at_least, check_entry

# Options of the LLM client itself (name -> type); everything else in the entry goes to the backend.
CLIENT_OPTIONS = {"concurrency": at_least(1), "max_retries": at_least(0), "backoff_base_s": at_least(0, float),
                  "backoff_max_s": at_least(0, float),
                  "retry_seed": int}


def check(entry, key: str = "llm") -> list[str]:
    """Problems of one `llms` entry, without building it: backend, options and their types."""
    return check_entry(entry, BACKENDS, key, field="backend", shared=CLIENT_OPTIONS)


def make_backend(config: dict):
    problems = check(config)
    if problems:
        raise ConfigError("\n".join(problems))
    options = {k: v for k, v in config.items() if k != "backend" and k not in CLIENT_OPTIONS}
    return BACKENDS[config["backend"]](**options)


def make_llm(config: dict, cache_path: str | Path) -> LLM:
    client = {k: config[k] for k in CLIENT_OPTIONS if k in config}
    if "retry_seed" in client:
        client["seed"] = client.pop("retry_seed")
    return LLM(make_backend(config), CallCache(cache_path), **client)
