"""The LLM interface every backend implements: generation parameters, one completion, a backend."""
from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class GenParams:
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    finish_reason: str = "stop"
    cached: bool = False


@dataclass(frozen=True)
class LLMCallFailed:
    """A request that still failed after its retries. Returned in place of a Completion, never
    replaced by a default text, so callers count it instead of scoring an invented answer."""
    error: str
    attempts: int = 1


class Backend(ABC):
    """One provider. Stateless apart from the loaded model or HTTP client."""

    name: str = ""
    parallel_safe: bool = False   # True only where concurrent calls are safe and useful (HTTP)
    model: str = ""

    @abstractmethod
    def identity(self) -> str:
        """Backend + model identity for cache keys; hashes local weights. Never holds secrets."""

    @abstractmethod
    def generate(self, messages: list[dict], params: GenParams, sample_index: int) -> Completion:
        """One chat completion; messages = [{"role": "system"|"user"|"assistant", "content": str}]."""

    def choice_logprobs(self, messages: list[dict], choices: list[str]) -> dict[str, float]:
        """log p(first token of each choice) at the assistant's next-token position."""
        raise NotImplementedError(f"{self.name}: choice_logprobs is not supported by this backend")

    def __repr__(self) -> str:   # explicit, so no attribute (a client holding a key) leaks
        return f"{type(self).__name__}(model={self.model!r})"


def weights_hash(path: str | Path) -> str:
    """sha256 of a weights file, computed once per process for an unchanged file."""
    st = os.stat(path)
    return _hash_cached(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _hash_cached(path: str, size: int, mtime_ns: int) -> str:
    from tasks.core.artifacts import file_hash

    return file_hash(path)


def last_user_text(messages: list[dict]) -> str:
    return next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
