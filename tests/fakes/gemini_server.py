"""A fake Gemini API: POST /v1beta/models/<model>:generateContent, key in x-goog-api-key."""
from __future__ import annotations

import hmac
import re

from . import FakeServer

ROUTE = re.compile(r"^/v1beta/models/([^/:]+):generateContent$")
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
          429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 404: "NOT_FOUND"}


def gemini_messages(body: dict) -> list[dict]:
    """The request as plain chat messages (system instruction first)."""
    out = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        out.append({"role": "system", "content": "".join(p.get("text", "") for p in system.get("parts", []))})
    for c in body.get("contents", []):
        role = "assistant" if c.get("role") == "model" else "user"
        out.append({"role": role, "content": "".join(p.get("text", "") for p in c.get("parts", []))})
    return out


def thinking_budget(config: dict) -> int | None:
    """The request's thinking budget; proto JSON accepts both field spellings (the SDK sends snake_case)."""
    tc = config.get("thinkingConfig") or config.get("thinking_config") or {}
    return tc.get("thinkingBudget", tc.get("thinking_budget"))


class FakeGeminiServer(FakeServer):
    """`thinking_tokens`: like Gemini 2.5, spend that many tokens thinking (capped by the request's
    thinkingConfig.thinkingBudget) out of maxOutputTokens before the visible reply, which is cut
    to what is left (one word = one token) with finishReason MAX_TOKENS."""

    def __init__(self, handler=None, *, api_key: str | None = "test-gemini-key", thinking_tokens: int = 0, **kw):
        super().__init__(handler, api_key=api_key, **kw)
        self.models: list[str] = []   # the model of each answered request
        self.configs: list[dict] = []  # the generationConfig of each answered request
        self.thinking_tokens = int(thinking_tokens)

    def authorized(self, headers) -> bool:
        return self.api_key is None or hmac.compare_digest(headers.get("x-goog-api-key") or "", self.api_key)

    def error_body(self, status: int, message: str) -> dict:
        return {"error": {"code": status, "message": message, "status": STATUS.get(status, "UNKNOWN")}}

    def respond(self, path: str, body: dict, *, empty: bool) -> tuple[int, dict]:
        match = ROUTE.match(path.split("?")[0])
        if not match:
            return 404, self.error_body(404, f"no route {path}")
        messages = gemini_messages(body)
        config = body.get("generationConfig") or {}
        text = self.handler(messages, int(config.get("seed", 0)))
        words_in = sum(len(m["content"].split()) for m in messages)
        usage = {"promptTokenCount": words_in, "candidatesTokenCount": len(text.split()),
                 "totalTokenCount": words_in + len(text.split())}
        with self._lock:
            self.models.append(match.group(1))
            self.configs.append(config)
        if empty:
            return 200, {"candidates": [], "usageMetadata": usage}
        text, finish = self._within_budget(text, config)
        content = {"role": "model", "parts": [{"text": text}]} if text else {"role": "model"}
        return 200, {"candidates": [{"content": content, "finishReason": finish, "index": 0}],
                     "usageMetadata": usage, "modelVersion": match.group(1)}

    def _within_budget(self, text: str, config: dict) -> tuple[str, str]:
        budget = thinking_budget(config)
        thinking = self.thinking_tokens if budget is None or budget < 0 else min(self.thinking_tokens, budget)
        limit = config.get("maxOutputTokens")
        words = text.split()
        if limit is None or len(words) + thinking <= int(limit):
            return text, "STOP"
        return " ".join(words[:max(int(limit) - thinking, 0)]), "MAX_TOKENS"


if __name__ == "__main__":   # a standalone server, e.g. for a benchmark in another process
    import argparse
    import time

    ap = argparse.ArgumentParser(description="Fake Gemini API on 127.0.0.1")
    ap.add_argument("--api-key", default="test-gemini-key")
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with FakeGeminiServer(api_key=args.api_key, latency_s=args.latency, fault_rate=args.fault_rate,
                          seed=args.seed) as server:
        print(server.url, flush=True)
        while True:
            time.sleep(3600)
