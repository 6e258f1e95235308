"""Which failures are worth another try, and exponential backoff with full jitter.

Retried: HTTP 429 and 5xx, timeouts, connection errors, malformed or empty responses.
Raised at once: auth errors (401/403: every later call would fail too) and other 4xx
(the request itself is wrong; sending it again changes nothing).
"""
from __future__ import annotations

import random
import threading
import time
from typing import Callable, TypeVar

T = TypeVar("T")


class RetryableError(Exception):
    """A transient failure: rate limit, server error, timeout, lost connection, bad body."""


class FatalError(Exception):
    """A failure that another try cannot fix."""


class AuthError(FatalError):
    """401/403: the key is missing, wrong or not allowed."""


class BadRequestError(FatalError):
    """400 and other 4xx: the request is invalid for this model or server."""


def error_for_status(status: int, detail: str) -> Exception:
    """The exception class an HTTP error status maps to."""
    if status in (401, 403):
        return AuthError(f"HTTP {status}: {detail}")
    if status in (408, 409, 429) or status >= 500:
        return RetryableError(f"HTTP {status}: {detail}")
    return BadRequestError(f"HTTP {status}: {detail}")


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, RetryableError):
        return True
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    # httpx and its fork httpx2 share the class names; both raise TransportError subclasses
    # (timeouts, connect/read errors, protocol errors) for network-level failures.
    names = {c.__name__ for c in type(exc).__mro__}
    root = type(exc).__module__.split(".")[0]
    return root in ("httpx", "httpx2") and "TransportError" in names


class Backoff:
    """Full-jitter exponential backoff: sleep uniform(0, min(max, base * 2**attempt))."""

    def __init__(self, base_s: float = 0.5, max_s: float = 20.0, seed: int = 0,
                 sleep: Callable[[float], None] = time.sleep):
        self.base_s, self.max_s, self.sleep = base_s, max_s, sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()   # one seeded stream shared by worker threads

    def delay(self, attempt: int) -> float:
        with self._lock:
            return self._rng.uniform(0.0, min(self.max_s, self.base_s * (2 ** attempt)))


def call_with_retries(fn: Callable[[], T], *, max_retries: int, backoff: Backoff,
                      on_retry: Callable[[BaseException], None] | None = None) -> T:
    """fn(), tried again on retryable errors. Re-raises the last error once max_retries extra
    tries are spent, and any non-retryable error at once."""
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:
            if not is_retryable(exc) or attempt >= max_retries:
                raise
            if on_retry:
                on_retry(exc)
            backoff.sleep(backoff.delay(attempt))
            attempt += 1
