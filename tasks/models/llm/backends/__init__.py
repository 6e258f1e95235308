"""LLM backends by name: each module registers its class (`backend:` in a params `llms` entry)."""
from tasks.core.registry import Registry


def _load() -> None:
    from tasks.models.llm.backends import dummy, gemini, llamacpp, openai_compat, transformers_backend  # noqa: F401


BACKENDS = Registry("backend", _load)
