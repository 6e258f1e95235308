"""A fake OpenAI-compatible server: POST /v1/chat/completions, with top_logprobs and `n` support."""
from __future__ import annotations

import hashlib
import hmac
import math

from . import FakeServer

TOKENS = ["A", "B", " A", " B", "C", "The", "Yes", "No"]


def default_logprobs(messages: list[dict]) -> dict[str, float]:
    """Deterministic next-token distribution over a few tokens, normalised over them."""
    h = hashlib.sha256(repr(messages).encode("utf-8")).digest()
    scores = {t: h[i] / 32.0 for i, t in enumerate(TOKENS)}
    z = math.log(sum(math.exp(s) for s in scores.values()))
    return {t: s - z for t, s in scores.items()}


class FakeOpenAIServer(FakeServer):
    def __init__(self, handler=None, *, api_key: str | None = None, logprobs_handler=None, **kw):
        super().__init__(handler, api_key=api_key, **kw)
        self.logprobs_handler = logprobs_handler or default_logprobs
        self.choices_served = 0   # completions returned, over every request (n per request with `n`)

    def authorized(self, headers) -> bool:
        return self.api_key is None or hmac.compare_digest(headers.get("Authorization") or "",
                                                           f"Bearer {self.api_key}")

    def error_body(self, status: int, message: str) -> dict:
        return {"error": {"message": message, "type": "fake_error", "code": status}}

    def respond(self, path: str, body: dict, *, empty: bool) -> tuple[int, dict]:
        if path.split("?")[0] != "/v1/chat/completions":
            return 404, self.error_body(404, f"no route {path}")
        messages = [{"role": m["role"], "content": m["content"]} for m in body.get("messages", [])]
        words_in = sum(len(m["content"].split()) for m in messages)
        if body.get("logprobs"):
            dist = self.logprobs_handler(messages)
            ranked = sorted(dist.items(), key=lambda kv: -kv[1])[: int(body.get("top_logprobs") or 0) or 1]
            text = ranked[0][0]
            logprobs = {"content": [{"token": text, "logprob": ranked[0][1],
                                     "top_logprobs": [{"token": t, "logprob": lp} for t, lp in ranked]}]}
        else:
            text, logprobs = self.handler(messages, int(body.get("seed") or 0)), None
        # `n` as vLLM does it: choice i is sampled with seed + i, the same as a single request with that seed
        seed = int(body.get("seed") or 0)
        texts = [text] + [self.handler(messages, seed + i) for i in range(1, int(body.get("n") or 1))]
        with self._lock:
            self.choices_served += 0 if empty else len(texts)
        out_tokens = sum(len(t.split()) for t in texts)
        usage = {"prompt_tokens": words_in, "completion_tokens": out_tokens, "total_tokens": words_in + out_tokens}
        choices = [] if empty else [{"index": i, "message": {"role": "assistant", "content": t},
                                     "finish_reason": "stop", "logprobs": logprobs} for i, t in enumerate(texts)]
        return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "model": body.get("model"),
                     "choices": choices, "usage": usage}
