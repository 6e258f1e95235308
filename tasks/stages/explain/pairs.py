"""One row per scored pair: what every RM was shown and what the user wanted. The question, the answers and
their lengths, the user's profile size and gold rubric aspects, each strategy's context exactly as the RMs saw
it (tasks/models/strategies.py builds it, as the score stage does), the validity judge's scores and the human
evaluation's ratings where present."""
from __future__ import annotations

from collections import defaultdict
from statistics import mean

from tasks.stages.explain.cells import length_relation, words


def profile_bins(sizes: list[int], k: int) -> list[tuple[int, int]]:
    """Up to k bins of the pairs' profile sizes (posts), of about equal counts: (lowest, highest) size in each,
    cut at the i/k quantiles of the sizes (the smallest size with at least i/k of the pairs at or below it)."""
    s = sorted(sizes)
    if not s:
        return []
    cuts = sorted({s[-(-len(s) * i // k) - 1] for i in range(1, k)})
    bins: list[list[int]] = []
    for size in s:
        at = sum(size > c for c in cuts)
        if not bins or bins[-1][2] != at:
            bins.append([size, size, at])
        bins[-1][1] = size
    return [(lo, hi) for lo, hi, _ in bins]


def bin_label(lo: int, hi: int) -> str:
    return f"{lo} posts" if lo == hi else f"{lo}–{hi} posts"


def bin_of(size: int, bins: list[tuple[int, int]]) -> str | None:
    for lo, hi in bins:
        if lo <= size <= hi:
            return bin_label(lo, hi)
    return None


def human_summary(ratings: list[dict]) -> list[dict]:
    """Per annotator kind and dimension: the mean rating of the chosen and of the rejected answer and how many
    annotators rated it (an unparsed rating is left out, never counted as a score)."""
    groups: dict = defaultdict(lambda: {"chosen": [], "rejected": [], "annotators": set()})
    for r in ratings:
        if r["score"] is None or r["side"] not in ("chosen", "rejected"):
            continue
        g = groups[(r["annotator_kind"], r["dimension"])]
        g[r["side"]].append(r["score"])
        g["annotators"].add(r["annotator"])
    return [{"kind": kind, "dimension": dim, "annotators": len(g["annotators"]),
             "chosen": round(mean(g["chosen"]), 4) if g["chosen"] else None,
             "rejected": round(mean(g["rejected"]), 4) if g["rejected"] else None}
            for (kind, dim), g in sorted(groups.items())]


def pair_rows(pairs: list[dict], questions: dict[str, dict], profile_sizes: dict[str, int],
              contexts: dict[str, dict], failed: dict[str, frozenset], ratings: list[dict], k: int) -> list[dict]:
    """Rows of data/explain/pairs.parquet, by question id. `contexts`: strategy -> {question id: text};
    `failed`: strategy -> the question ids whose context could not be built (the RM saw the question only)."""
    by_question = defaultdict(list)
    for r in ratings:
        by_question[r["question_id"]].append(r)
    bins = profile_bins([profile_sizes.get(p["question_id"], 0) for p in pairs], k)
    out = []
    for p in sorted(pairs, key=lambda p: p["question_id"]):
        qid, q = p["question_id"], questions[p["question_id"]]
        size = profile_sizes.get(qid, 0)
        out.append({
            "question_id": qid, "domain": p["domain"], "split": p["split"], "category": q.get("category") or "",
            "question": q["question"], "chosen": p["chosen"], "rejected": p["rejected"],
            "chosen_words": words(p["chosen"]), "rejected_words": words(p["rejected"]),
            "length_relation": length_relation(p["chosen"], p["rejected"]), "profile_posts": size,
            "profile_bin": bin_of(size, bins), "aspects": [a["aspect"] for a in q.get("rubric_aspects") or []],
            "contexts": [{"strategy": s, "text": ctx.get(qid, ""), "failed": qid in failed.get(s, ())}
                         for s, ctx in contexts.items()],
            "judge_chosen": p.get("judge_chosen"), "judge_rejected": p.get("judge_rejected"), "valid": p.get("valid"),
            "human": human_summary(by_question.get(qid, []))})
    return out
