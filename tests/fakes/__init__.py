"""Local HTTP servers that speak real LLM API protocols, so the real clients run in tests.

Bound to 127.0.0.1 on a free port. Faults are injected on demand: a schedule (one entry per
request, in arrival order; None = answer normally) or a probability with a seeded RNG. A fault
is an HTTP status ("429", "503", "400", ...), "timeout" (sleep past the client's timeout),
"malformed" (a truncated JSON body) or "empty" (no candidates / choices).
Request headers are checked but never logged or stored (they carry API keys). The reply text
is `handler(messages, seed)`, a pure function of the request (default: an echo).
"""
from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = ("429", "500", "503", "timeout", "malformed", "empty")


class LocalHTTP:
    """A stdlib HTTP server on 127.0.0.1 in a daemon thread, as a context manager (every fake here)."""
    _httpd: ThreadingHTTPServer | None = None

    def _listen(self, handler) -> "LocalHTTP":
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class FakeServer(LocalHTTP):
    """Base: threading, fault schedule, counters. Subclasses implement `respond`."""

    def __init__(self, handler=None, *, api_key: str | None = None, faults=None, fault_rate: float = 0.0,
                 fault_kinds=FAULTS, seed: int = 0, latency_s: float = 0.0, timeout_sleep_s: float = 2.0,
                 auth_status: int = 403):
        self.handler = handler or self.default_reply
        self.api_key, self.auth_status = api_key, auth_status
        self.schedule = list(faults or [])
        self.fault_rate, self.fault_kinds = fault_rate, tuple(fault_kinds)
        self.latency_s, self.timeout_sleep_s = latency_s, timeout_sleep_s
        self.requests = 0
        self.faults: Counter = Counter()
        self.served = 0   # fault-free answers: exactly one per request a client completed
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> "FakeServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True   # headers and body go out as two writes: no 40 ms stall

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    server._dispatch(self, raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass   # the client gave up (its timeout): nothing to answer

            def log_message(self, *args):   # silent: never print requests (or their headers)
                pass

        return self._listen(Handler)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- per request ------------------------------------------------------------------------
    def next_fault(self) -> str | None:
        with self._lock:
            self.requests += 1
            if self.schedule:
                fault = self.schedule.pop(0)
            elif self.fault_rate and self._rng.random() < self.fault_rate:
                fault = self._rng.choice(self.fault_kinds)
            else:
                fault = None
            if fault:
                self.faults[fault] += 1
            return fault

    def _dispatch(self, req: BaseHTTPRequestHandler, raw: bytes) -> None:
        fault = self.next_fault()
        if self.latency_s:
            time.sleep(self.latency_s)
        if not self.authorized(req.headers):
            return self.send(req, self.auth_status, self.error_body(self.auth_status, "API key not valid."))
        if fault == "timeout":
            time.sleep(self.timeout_sleep_s)   # past the client's timeout; then answer normally
        elif fault and fault.isdigit():   # any HTTP status, e.g. "429", "503", "400"
            return self.send(req, int(fault), self.error_body(int(fault), f"injected {fault}"))
        elif fault == "malformed":
            return self.send(req, 200, b'{"candidates": [{"content": ')
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self.send(req, 400, self.error_body(400, "request body is not JSON"))
        status, payload = self.respond(req.path, body, empty=fault == "empty")
        if status == 200 and not fault:
            with self._lock:
                self.served += 1
        self.send(req, status, payload)

    @staticmethod
    def send(req: BaseHTTPRequestHandler, status: int, payload) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        req.send_response(status)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    # --- protocol hooks ---------------------------------------------------------------------
    def authorized(self, headers) -> bool:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict:
        raise NotImplementedError

    def respond(self, path: str, body: dict, *, empty: bool) -> tuple[int, dict]:
        raise NotImplementedError

    @staticmethod
    def default_reply(messages: list[dict], seed: int) -> str:
        """Deterministic: tests recompute it to check that no answer was invented. `messages` are
        normalised to [{"role": "system"|"user"|"assistant", "content": str}]."""
        prompt = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        return f"echo[{seed}]: {prompt}"
