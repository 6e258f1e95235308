"""A deterministic, instant backend for tests: the answer is a fixed function of the request."""
from __future__ import annotations

import hashlib
import json
import math
import threading
import time

from tasks.models.llm.backends import BACKENDS
from tasks.models.llm.base import Backend, Completion, GenParams, last_user_text
from tasks.models.llm.retry import RetryableError


def _digest(*parts) -> bytes:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).digest()


def dummy_text(messages: list[dict], params: GenParams, sample_index: int) -> str:
    """3-10 words picked from the last user message by a hash of (messages, seed, sample)."""
    words = last_user_text(messages).split() or ["empty"]
    h = _digest(messages, params.seed, sample_index)
    n = min(max(params.max_tokens, 1), 3 + h[0] % 8)
    return " ".join(words[h[1 + i] % len(words)] for i in range(n))


@BACKENDS.register("dummy")
class DummyBackend(Backend):
    name = "dummy"
    parallel_safe = True   # pure function: lets tests exercise the thread pool

    def __init__(self, model: str = "dummy", fail_every: int = 0, latency_s: float = 0.0):
        """fail_every=N: every Nth call raises a retryable error (for retry tests)."""
        self.model, self.fail_every, self.latency_s = model, int(fail_every), float(latency_s)
        self.calls = 0   # attempts that reached the backend, failed ones included
        self._lock = threading.Lock()

    def identity(self) -> str:
        return f"dummy:{self.model}"

    def _tick(self) -> None:
        with self._lock:
            self.calls += 1
            n = self.calls
        if self.latency_s:
            time.sleep(self.latency_s)
        if self.fail_every and n % self.fail_every == 0:
            raise RetryableError(f"dummy: injected failure on call {n}")

    def generate(self, messages: list[dict], params: GenParams, sample_index: int) -> Completion:
        start = time.perf_counter()
        self._tick()
        text = dummy_text(messages, params, sample_index)
        tokens_in = sum(len(m["content"].split()) for m in messages)
        return Completion(text=text, tokens_in=tokens_in, tokens_out=len(text.split()),
                          latency_s=time.perf_counter() - start)

    def choice_logprobs(self, messages: list[dict], choices: list[str]) -> dict[str, float]:
        self._tick()
        scores = {c: _digest(messages, c)[0] / 64.0 for c in choices}
        norm = math.log(sum(math.exp(s) for s in scores.values()))
        return {c: s - norm for c, s in scores.items()}
