"""Split-half test questions: benchmark accuracy and downstream quality on disjoint questions, so their
agreement is the RMs', not the questions'. Per split and domain, a seeded hash orders the questions; the
first floor(share * n), at most n - 1, form the `downstream` half (Best-of-N, RL evaluation), the rest the `benchmark`
half (the pairs that scoring, the leaderboard and the generic baseline read). `ingest.downstream_share`
0 = no split: every question is in `both`, as before the split. Training questions are never split."""
from __future__ import annotations

import hashlib
from collections import defaultdict

BENCHMARK, DOWNSTREAM, BOTH = "benchmark", "downstream", "both"
UNSPLIT = ("train",)   # what trains (train_rm, rl_train) is no evaluation: no half


def _rank(seed: int, question_id: str) -> str:
    return hashlib.sha256(f"{seed}:{question_id}".encode("utf-8")).hexdigest()


def assign(questions: list[dict], share: float, seed: int) -> list[dict]:
    """One row per question, in the questions' order: question_id, split, domain, half."""
    groups = defaultdict(list)
    for q in questions:
        if q["split"] not in UNSPLIT and share > 0:
            groups[(q["split"], q["domain"])].append(q["id"])
    half = {}
    for ids in groups.values():
        ranked = sorted(ids, key=lambda qid: _rank(seed, qid))
        n_down = min(int(share * len(ranked)), len(ranked) - 1)   # rounded down: a lone question scores
        half.update({qid: DOWNSTREAM if i < n_down else BENCHMARK for i, qid in enumerate(ranked)})
    return [{"question_id": q["id"], "split": q["split"], "domain": q["domain"], "half": half.get(q["id"], BOTH)}
            for q in questions]


def read(path: str) -> dict[str, str]:
    """question id -> its half, from ingest's halves table."""
    from tasks.core.artifacts import read_table

    return {r["question_id"]: r["half"] for r in read_table(path, "halves").select(["question_id", "half"]).to_pylist()}


def keep(rows: list[dict], halves: dict[str, str], half: str, key: str = "id") -> list[dict]:
    """The rows (questions by `id`, pairs by `question_id`) of one half; a question in `both` is in each."""
    return [r for r in rows if halves.get(r[key], BOTH) in (half, BOTH)]
