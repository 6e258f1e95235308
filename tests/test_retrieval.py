"""Retrieval ranks a user's own posts; a planted relevant post comes first, and item ids stay
with their own texts (the authors' release re-pairs ids from the original order with texts from
the ranked order — these tests fail on that bug)."""
import numpy as np
import pytest

from tasks.stages.profiles import format_profile, rank_profiles
from tests.conftest import SAMPLE

PLANT = "Sourdough starter keeps dying: my sourdough starter smells of acetone after feeding, what ratio of flour and water?"
FILLER = ["Which tent for a rainy week in Scotland with two kids?",
          "My road bike chain skips on the smallest cog after cleaning.",
          "Looking for a board game that plays well with exactly two players.",
          "How do I ask my manager for a four day week without sounding lazy?",
          "Best way to store winter tyres in a small flat with no garage.",
          "Our cat scratches the sofa only at night, any ideas?",
          "Is it worth learning Rust after ten years of Java at work?",
          "Knee hurts after long runs downhill, do I need new shoes?"]


def _profile(qid, plant_at):
    texts = FILLER[:plant_at] + [PLANT] + FILLER[plant_at:]
    return [{"question_id": qid, "item_id": f"{qid}_{k}", "position": k, "category": f"cat{k}", "text": t}
            for k, t in enumerate(texts)]


@pytest.fixture(scope="module")
def encoder():
    from tasks.models.encoders import Encoder

    return Encoder("embedded:all-MiniLM-L6-v2", batch_size=4)


@pytest.mark.parametrize("retriever", ["bm25", "dense"])
def test_planted_post_ranks_first_and_ids_stay_aligned(retriever, encoder):
    questions = [{"id": "q1", "question": "How do I revive a sourdough starter that smells of acetone?"},
                 {"id": "q2", "question": "Why does my sourdough starter die after feeding?"}]
    profiles = _profile("q1", plant_at=8) + _profile("q2", plant_at=3)
    original = {p["item_id"]: p for p in profiles}
    ranked, contexts = rank_profiles(questions, profiles, retriever=retriever, k=5, max_words_per_post=50,
                                     encoder=encoder if retriever == "dense" else None)
    top = {r["question_id"]: r for r in ranked if r["rank"] == 1}
    assert top["q1"]["item_id"] == "q1_8" and top["q1"]["text"] == PLANT
    assert top["q2"]["item_id"] == "q2_3" and top["q2"]["text"] == PLANT
    for r in ranked:   # every ranked row is one original item, whole
        src = original[r["item_id"]]
        assert (r["text"], r["category"], r["position"]) == (src["text"], src["category"], src["position"])
    assert [r["rank"] for r in ranked if r["question_id"] == "q1"] == [1, 2, 3, 4, 5]
    scores = [r["score"] for r in ranked if r["question_id"] == "q1"]
    assert scores == sorted(scores, reverse=True)
    assert contexts[0]["item_ids"] == [r["item_id"] for r in ranked if r["question_id"] == "q1"]
    assert contexts[0]["profile_text"].startswith("[1] (cat8) Sourdough starter keeps dying")


def test_ties_keep_profile_order():
    questions = [{"id": "q", "question": "zzz unrelated words"}]
    profiles = _profile("q", plant_at=0)
    ranked, _ = rank_profiles(questions, profiles, retriever="bm25", k=4, max_words_per_post=10)
    assert [r["position"] for r in ranked] == [0, 1, 2, 3]


def test_dense_query_never_sees_the_narrative(encoder):
    """The query is the question; a narrative in the question row must not change the ranking."""
    profiles = _profile("q", plant_at=5)
    q = {"id": "q", "question": "How do I revive a sourdough starter?"}
    a, _ = rank_profiles([q], profiles, retriever="dense", k=9, max_words_per_post=50, encoder=encoder)
    b, _ = rank_profiles([dict(q, narrative="tents bikes cats knees")], profiles, retriever="dense", k=9,
                         max_words_per_post=50, encoder=encoder)
    assert a == b


def test_format_profile_truncates_long_posts():
    items = [{"category": "cooking", "text": "one two three four five six"}]
    assert format_profile(items, max_words=3) == "[1] (cooking) one two three …"


def test_embedding_cache_counts_hits(tmp_path):
    from tasks.models.encoders import EmbeddingCache, Encoder

    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    enc = Encoder("embedded:all-MiniLM-L6-v2", cache=cache)
    first = enc.encode(["a cat", "a dog", "a cat"])
    assert (cache.hits, cache.misses) == (1, 2)
    again = Encoder("embedded:all-MiniLM-L6-v2", cache=EmbeddingCache(tmp_path / "emb.sqlite"))
    second = again.encode(["a dog", "a cat"])
    assert (again.cache.hits, again.cache.misses) == (2, 0)
    assert (second == first[[1, 0]]).all()
    assert "model" not in vars(again), "every text cached: the weights are never loaded (~1 s a stage on a rerun)"
    assert (again.encode(["a bird"]) == enc.encode(["a bird"])).all() and "model" in vars(again)


def test_embeddings_do_not_depend_on_batch_mates_or_cache_state(tmp_path):
    """A vector is the same bit for bit whether its text was encoded alone, among texts of other
    lengths, or read back from a cache that a different set of texts filled."""
    import json

    from tasks.models.encoders import EmbeddingCache, Encoder

    rows = json.loads((SAMPLE / "lamp_qa" / "Art_and_Entertainment_test.json").read_text())
    texts = [it["text"] for r in rows[:3] for it in r["profile"]][:40]
    enc = Encoder("embedded:all-MiniLM-L6-v2", batch_size=8)
    together = enc.encode(texts)
    alone = np.stack([enc.encode([t])[0] for t in texts[:12]])
    assert (together[:12] == alone).all()
    warm = Encoder("embedded:all-MiniLM-L6-v2", batch_size=8, cache=EmbeddingCache(tmp_path / "emb.sqlite"))
    warm.encode(texts[5:25:2])   # a different history: some texts cached, computed with other batch mates
    assert (warm.encode(texts) == together).all()
