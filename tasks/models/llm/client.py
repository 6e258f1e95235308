"""LLM: a backend behind a durable call cache, retries, counters, and a thread pool for HTTP.

Every answer is written to the cache the moment it arrives, so an interrupted run resumes
where it stopped. A request that still fails after its retries comes back as LLMCallFailed:
never as a default text that would later be scored as if the model had said it.
"""
from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from tasks.core.progress import bar as progress_bar
from tasks.models.llm.base import Backend, Completion, GenParams, LLMCallFailed
from tasks.models.llm.cache import CallCache, call_key
from tasks.models.llm.retry import AuthError, Backoff, FatalError, call_with_retries, is_retryable

Request = tuple[list[dict], GenParams, int]


@dataclasses.dataclass
class CallStats:
    calls: int = 0          # requests sent to the backend (a retried request counts once)
    cache_hits: int = 0
    retries: int = 0        # extra attempts after a retryable failure
    failures: int = 0       # requests that failed for good
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0  # summed over backend calls, not wall time

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class LLM:
    def __init__(self, backend: Backend, cache: CallCache, *, concurrency: int = 1,
                 max_retries: int = 5, backoff_base_s: float = 0.5, backoff_max_s: float = 20.0,
                 seed: int = 0):
        self.backend, self.cache = backend, cache
        self.concurrency = max(1, int(concurrency))
        self.max_retries = int(max_retries)
        self.backoff = Backoff(backoff_base_s, backoff_max_s, seed)
        self.stats = CallStats()
        self.identity = backend.identity()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LLM({self.backend!r}, concurrency={self.concurrency})"

    # --- keys -------------------------------------------------------------------------------
    def generate_key(self, messages: list[dict], params: GenParams, sample_index: int = 0) -> str:
        return call_key({"op": "generate", "backend": self.identity, "messages": messages,
                         "params": params.as_dict(), "sample_index": sample_index})

    def logprobs_key(self, messages: list[dict], choices: list[str]) -> str:
        return call_key({"op": "logprobs", "backend": self.identity, "messages": messages,
                         "choices": list(choices)})

    # --- single calls -----------------------------------------------------------------------
    def generate(self, messages: list[dict], params: GenParams, sample_index: int = 0) -> Completion:
        """One completion, from the cache when known; raises once retries are spent."""
        key = self.generate_key(messages, params, sample_index)
        return self._cached_completion(key) or self._call_generate(key, (messages, params, sample_index), [1])

    def choice_logprobs(self, messages: list[dict], choices: list[str]) -> dict[str, float]:
        key = self.logprobs_key(messages, choices)
        hit = self.cache.get(key)
        if hit is not None:
            self._count(cache_hits=1)
            return hit["response"]["logprobs"]
        self._count(calls=1)
        logprobs = self._retrying(lambda: self.backend.choice_logprobs(messages, list(choices)), [1])
        self.cache.put(key, "logprobs", {"logprobs": logprobs})
        return logprobs

    # --- batches ----------------------------------------------------------------------------
    def generate_many(self, requests: list[Request], progress: str | None = None) -> list[Completion | LLMCallFailed]:
        """Results in request order. Uncached requests run on `concurrency` threads when the
        backend is parallel-safe. An auth error aborts the batch (every later call would fail
        too); any other failure is returned in place as LLMCallFailed."""
        results: list[Completion | LLMCallFailed | None] = [None] * len(requests)
        todo: dict[str, list[int]] = {}
        for i, (messages, params, sample_index) in enumerate(requests):
            key = self.generate_key(messages, params, sample_index)
            if key in todo:   # a duplicate inside the batch is answered by the first one
                todo[key].append(i)
            elif (hit := self._cached_completion(key)) is not None:
                results[i] = hit
            else:
                todo[key] = [i]
        bar = progress_bar(total=len(requests), initial=len(requests) - sum(map(len, todo.values())), desc=progress,
                           unit="call")
        workers = self.concurrency if self.backend.parallel_safe else 1
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm") if workers > 1 else None
        try:
            if pool is None:
                done = ((key, self._call_or_fail(key, requests[idx[0]])) for key, idx in todo.items())
            else:
                done = self._as_done(pool, {pool.submit(self._call_or_fail, key, requests[idx[0]]): key
                                            for key, idx in todo.items()})
            for key, result in done:
                first, *dups = todo[key]
                results[first] = result
                for i in dups:
                    results[i] = dataclasses.replace(result, cached=True) if isinstance(result, Completion) else result
                if dups and isinstance(result, Completion):
                    self._count(cache_hits=len(dups))
                bar.update(1 + len(dups))
                bar.set_postfix(calls=self.stats.calls, hits=self.stats.cache_hits,
                                failed=self.stats.failures, refresh=False)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            bar.close()
        return results  # type: ignore[return-value]

    def sample_many(self, prompts: list[tuple[list[dict], GenParams]], n: int,
                    progress: str | None = None) -> list[list[Completion | LLMCallFailed]]:
        """n samples of each prompt; sample i is the call (messages, params, sample_index=i), cached
        under its own key whichever way it was made. A backend with `supports_n` is asked once per
        prompt for its uncached samples (each contiguous run of indices: one request with `n`);
        any other backend gets one request per sample, as generate_many."""
        if not getattr(self.backend, "supports_n", False):
            flat = self.generate_many([(m, p, i) for m, p in prompts for i in range(n)], progress=progress)
            return [flat[j * n:(j + 1) * n] for j in range(len(prompts))]
        results: list[list] = [[None] * n for _ in prompts]
        runs: dict[tuple, list[int]] = {}   # (prompt, first index, count) -> prompts asking for it
        for j, (messages, params) in enumerate(prompts):
            missing = []
            for i in range(n):
                hit = self._cached_completion(self.generate_key(messages, params, i))
                if hit is None:
                    missing.append(i)
                results[j][i] = hit
            for first, count in _runs(missing):
                runs.setdefault((self.generate_key(messages, params, first), first, count), []).append(j)
        bar = progress_bar(total=sum(c for _, _, c in runs), desc=progress, unit="call")
        workers = self.concurrency if self.backend.parallel_safe else 1
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm")
        try:
            futures = {pool.submit(self._call_n, *prompts[js[0]], first, count): (js, first, count)
                       for (_, first, count), js in runs.items()}
            for (js, first, count), outs in self._as_done(pool, futures):
                for j in js:
                    results[j][first:first + count] = outs
                bar.update(count)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            bar.close()
        return results

    def _call_n(self, messages: list[dict], params: GenParams, first: int, count: int) -> list:
        tries = [1]
        self._count(calls=1)
        try:
            outs = self._retrying(lambda: self.backend.generate_n(messages, params, first, count), tries)
        except AuthError:
            raise
        except Exception as exc:
            if not (is_retryable(exc) or isinstance(exc, FatalError)):
                raise
            return [LLMCallFailed(error=f"{type(exc).__name__}: {exc}", attempts=tries[0])] * count
        done = []
        for i, c in enumerate(outs, start=first):
            key = self.generate_key(messages, params, i)
            if c is None:   # an empty choice: that sample alone, with the usual retries
                done.append(self._call_or_fail(key, (messages, params, i)))
                continue
            self.cache.put(key, "generate", {"text": c.text, "finish_reason": c.finish_reason},
                           tokens_in=c.tokens_in, tokens_out=c.tokens_out, latency_s=c.latency_s)
            self._count(tokens_in=c.tokens_in, tokens_out=c.tokens_out, latency_s=c.latency_s)
            done.append(c)
        return done

    @staticmethod
    def _as_done(pool, futures: dict):
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                yield futures[fut], fut.result()   # re-raises an auth error here

    # --- internals --------------------------------------------------------------------------
    def _call_or_fail(self, key: str, request: Request) -> Completion | LLMCallFailed:
        tries = [1]
        try:
            return self._call_generate(key, request, tries)
        except AuthError:
            raise
        except Exception as exc:
            if not (is_retryable(exc) or isinstance(exc, FatalError)):
                raise   # a bug, not a failed call: let it surface
            return LLMCallFailed(error=f"{type(exc).__name__}: {exc}", attempts=tries[0])

    def _call_generate(self, key: str, request: Request, tries: list[int]) -> Completion:
        messages, params, sample_index = request
        self._count(calls=1)
        c = self._retrying(lambda: self.backend.generate(messages, params, sample_index), tries)
        self.cache.put(key, "generate", {"text": c.text, "finish_reason": c.finish_reason},
                       tokens_in=c.tokens_in, tokens_out=c.tokens_out, latency_s=c.latency_s)
        self._count(tokens_in=c.tokens_in, tokens_out=c.tokens_out, latency_s=c.latency_s)
        return c

    def _retrying(self, fn, tries: list[int]):
        def on_retry(_exc):
            tries[0] += 1
            self._count(retries=1)
        try:
            return call_with_retries(fn, max_retries=self.max_retries, backoff=self.backoff, on_retry=on_retry)
        except Exception:
            self._count(failures=1)
            raise

    def _cached_completion(self, key: str) -> Completion | None:
        hit = self.cache.get(key)
        if hit is None:
            return None
        self._count(cache_hits=1)
        r = hit["response"]
        return Completion(text=r["text"], tokens_in=hit["tokens_in"], tokens_out=hit["tokens_out"],
                          latency_s=hit["latency_s"], finish_reason=r.get("finish_reason", "stop"), cached=True)

    def _count(self, **deltas) -> None:
        with self._lock:
            for name, value in deltas.items():
                setattr(self.stats, name, getattr(self.stats, name) + value)


def _runs(indices: list[int], most: int = 128) -> list[tuple[int, int]]:
    """Sorted indices as (first, count) runs of consecutive ones, at most `most` long (OpenAI's cap on n)."""
    out: list[list[int]] = []
    for i in indices:
        if out and i == out[-1][0] + out[-1][1] and out[-1][1] < most:
            out[-1][1] += 1
        else:
            out.append([i, 1])
    return [(a, c) for a, c in out]
