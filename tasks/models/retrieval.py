"""Rank one user's own profile against their question. Items stay whole (id, text, category)
through ranking: the authors' release re-pairs ids and texts after sorting, which misaligns them."""
from __future__ import annotations

import numpy as np

from tasks.core.registry import Registry

RETRIEVERS = Registry("retriever")


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


@RETRIEVERS.register("bm25")
class BM25:
    """Lexical: BM25 over the user's own posts, the question as query."""
    needs_encoder = False

    def __init__(self, encoder=None):
        pass

    def scores(self, questions: list[dict], items: list[list[dict]]) -> list[np.ndarray]:
        return [bm25_scores(q["question"], [it["text"] for it in its]) for q, its in zip(questions, items)]


@RETRIEVERS.register("dense")
class Dense:
    """An encoder's dot product (Contriever, MiniLM): every post encoded once, in one batch run."""
    needs_encoder = True

    def __init__(self, encoder):
        self.encoder = encoder

    def scores(self, questions: list[dict], items: list[list[dict]]) -> list[np.ndarray]:
        item_vecs = self.encoder.encode([it["text"] for its in items for it in its], progress=True)
        query_vecs = self.encoder.encode([q["question"] for q in questions])
        out, offset = [], 0
        for qi, its in enumerate(items):
            out.append(dense_scores(query_vecs[qi], item_vecs[offset:offset + len(its)]))
            offset += len(its)
        return out


def make_retriever(name: str, encoder=None):
    return RETRIEVERS.lookup(name, "profiles.retriever")(encoder)
