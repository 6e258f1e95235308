"""Rank one user's own profile against their question. Items stay whole (id, text, category)
through ranking: the authors' release re-pairs ids and texts after sorting, which misaligns them."""
from __future__ import annotations

import numpy as np

from tasks.errors import ConfigError


def order(scores) -> list[int]:
    """Indices by score descending; equal scores keep profile order, so ranks are reproducible."""
    scores = np.round(np.asarray(scores, dtype=np.float64), 6)  # float noise must not reorder ties
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def bm25_scores(query: str, texts: list[str]) -> np.ndarray:
    import bm25s

    corpus = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    q = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
    known = [t for t in q if t in corpus.vocab]
    return index.get_scores(known) if known else np.zeros(len(texts))


def dense_scores(query_vec: np.ndarray, item_vecs: np.ndarray) -> np.ndarray:
    return item_vecs @ query_vec   # dot product: cosine for normalising encoders, as Contriever intends


RETRIEVERS = ("bm25", "dense")


def check_retriever(name: str) -> str:
    if name not in RETRIEVERS:
        raise ConfigError(f"profiles.retriever: unknown retriever '{name}'; valid: {', '.join(RETRIEVERS)}")
    return name
