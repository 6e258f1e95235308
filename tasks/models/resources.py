"""Models a stage needs, built once per process from params: named LLMs (params `llms`) and
encoders, both behind the caches in `common.cache_dir`."""
from __future__ import annotations

from pathlib import Path

from tasks.core.errors import ConfigError, did_you_mean


class Resources:
    def __init__(self, params: dict):
        self.params = params
        self.cache_dir = Path(params["common"]["cache_dir"])
        self._llms, self._encoders, self._emb_cache = {}, {}, None

    @property
    def fidelity(self) -> str:
        """common.fidelity: corrected | release (tasks/core/fidelity.py)."""
        from tasks.core.fidelity import of

        return of(self.params)

    def llm(self, name: str):
        if name not in self._llms:
            from tasks.models.llm import make_llm

            llms = self.params.get("llms", {})
            if name not in llms:
                raise ConfigError(f"llms: {did_you_mean(name, llms)}")
            cfg = dict(llms[name])
            cfg.setdefault("retry_seed", self.seed)   # seeds the backoff jitter
            self._llms[name] = make_llm(cfg, self.cache_dir / "llm_calls.sqlite")
        return self._llms[name]

    def encoder(self, name: str):
        if name not in self._encoders:
            from tasks.models.encoders import EmbeddingCache, Encoder

            self._emb_cache = self._emb_cache or EmbeddingCache(self.cache_dir / "embeddings.sqlite")
            self._encoders[name] = Encoder(name, cache=self._emb_cache)
        return self._encoders[name]

    @property
    def seed(self) -> int:
        return int(self.params["common"]["seed"])

    def stats(self) -> dict:
        """Counters for the stage's metrics: LLM calls, cache hits, retries, failures, tokens."""
        out = {f"llm:{name}": llm.stats.as_dict() for name, llm in sorted(self._llms.items())}
        if self._emb_cache:
            out["embeddings"] = {"cache_hits": self._emb_cache.hits, "encoded": self._emb_cache.misses}
        return out
