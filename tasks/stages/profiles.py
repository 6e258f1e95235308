"""The profiles stage: top-k of each user's posts for their question, plus the prompt text."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
from tasks.core.progress import bar as progress_bar

from tasks.models.retrieval import RETRIEVERS, make_retriever, order


def group_profiles(profiles: list[dict]) -> dict[str, list[dict]]:
    by_q = defaultdict(list)
    for item in profiles:
        by_q[item["question_id"]].append(item)
    for items in by_q.values():
        items.sort(key=lambda it: it["position"])
    return by_q


def format_profile(items: list[dict], max_words: int) -> str:
    """The profile block later prompts inject: one numbered post per ranked item."""
    lines = []
    for rank, item in enumerate(items, start=1):
        words = item["text"].split()
        text = " ".join(words[:max_words]) + (" …" if len(words) > max_words else "")
        lines.append(f"[{rank}] ({item['category']}) {text}")
    return "\n".join(lines)


def format_profile_release(items: list[dict], max_words: int | None = None) -> str:
    """The release's block (BoN/sample.py:23-28, PPO/prepare_data.py:33-38, PPO/infer.py:28-32): every post
    whole, whatever max_words says, "Post i (Category: c):" over its text."""
    return "\n".join(f"Post {i} (Category: {item['category']}):\n{item['text']}" for i, item in enumerate(items, 1))


PROFILE_FORMATS = {"corrected": format_profile, "release": format_profile_release}   # common.fidelity


def profile_block(fidelity: str, items: list[dict], max_words: int) -> str:
    from tasks.core.fidelity import pick

    return pick(PROFILE_FORMATS, fidelity)(items, max_words)


def rank_profiles(questions: list[dict], profiles: list[dict], *, retriever: str, k: int,
                  max_words_per_post: int, encoder=None, context_k: int | None = None,
                  fidelity: str = "corrected") -> tuple[list[dict], list[dict]]:
    """Return (ranked rows: the top k, context rows: the top context_k formatted for prompts).
    The query is the question only: never the narrative."""
    context_k = k if context_k is None else min(context_k, k)
    by_q = group_profiles(profiles)
    per_question = [by_q[q["id"]] for q in questions]
    all_scores = make_retriever(retriever, encoder).scores(questions, per_question)
    ranked, contexts = [], []
    for q, items, scores in zip(progress_bar(questions, desc="profiles", unit="question"), per_question,
                                all_scores):
        top = [(items[i], float(np.round(scores[i], 6))) for i in order(scores)[:k]]
        ranked.extend({"question_id": q["id"], "rank": r, "item_id": it["item_id"],
                       "position": it["position"], "category": it["category"],
                       "text": it["text"], "score": s} for r, (it, s) in enumerate(top, start=1))
        shown = [it for it, _ in top[:context_k]]
        contexts.append({"question_id": q["id"], "retriever": retriever, "k": len(shown),
                         "item_ids": [it["item_id"] for it in shown],
                         "profile_text": profile_block(fidelity, shown, max_words_per_post)})
    return ranked, contexts


def profile_metrics(ranked: list[dict], contexts: list[dict], questions: list[dict]) -> dict:
    domain = {q["id"]: q["domain"] for q in questions}
    per = defaultdict(list)
    for c in contexts:
        per[domain[c["question_id"]]].append(len(c["item_ids"]))
    return {
        "questions": len(contexts),
        "ranked_items": len(ranked),
        "mean_items_per_question": {d: round(float(np.mean(v)), 2) for d, v in sorted(per.items())},
    }


def run(p: dict, common: dict, inputs: dict, out: dict) -> dict:
    """Profiles stage end to end. Returns metrics, including embedding-cache counters."""
    from pathlib import Path

    from tasks.core.artifacts import read_table, write_table

    from tasks.core.runlog import write_metrics

    questions = read_table(inputs["questions"], "questions").to_pylist()
    profiles = read_table(inputs["profiles"], "profiles").to_pylist()
    encoder = cache = None
    if RETRIEVERS.lookup(p["retriever"], "profiles.retriever").needs_encoder:
        from tasks.models.encoders import EmbeddingCache, Encoder

        cache = EmbeddingCache(Path(common["cache_dir"]) / "embeddings.sqlite")
        encoder = Encoder(p["encoder"], batch_size=p["batch_size"], cache=cache)
    ranked, contexts = rank_profiles(questions, profiles, retriever=p["retriever"], k=p["k"],
                                     max_words_per_post=p["max_words_per_post"], encoder=encoder,
                                     context_k=p.get("context_k"), fidelity=common.get("fidelity", "corrected"))
    write_table(ranked, out["ranked_profile"], "ranked_profile")
    write_table(contexts, out["profile_context"], "profile_context")
    metrics = profile_metrics(ranked, contexts, questions)
    if cache:
        metrics["run"] = {"embeddings": {"cache_hits": cache.hits, "encoded": cache.misses}}
    write_metrics(metrics, out["metrics"])
    return metrics


def stage_run(params: dict, inputs: dict, out: dict) -> dict:
    """The stage as flows/stage.py runs it."""
    return run(params["profiles"], params["common"], inputs, out)
