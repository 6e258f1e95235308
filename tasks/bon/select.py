"""Per-RM selection. bon_score: one RM scores every candidate answer under bon.strategy, through the
benchmark's own RM classes and strategies. Then the rules that turn scores into a pick at each k:

- first_k:  the best of samples 0..k-1, ties to the earliest sample (the authors' rule).
- expected: the pick's judge score averaged over every size-k subset of the N' usable candidates,
  in closed form. Order candidates by (score desc, index asc); candidate i wins a subset exactly
  when the subset holds i and only candidates after it, so
      P(i is picked) = C(#candidates after i, k-1) / C(N', k).
  Same rule, no dependence on which k samples happened to come first: lower variance.
A candidate is usable when its sample is valid and it has both an RM score and a judge score;
k above N' is clipped to N' (the best of everything there is)."""
from __future__ import annotations

import math

Candidate = tuple[int, float]   # (sample_index, score used for the pick)
METHODS = ("first_k", "expected")


def usable(score) -> bool:
    return score is not None and not math.isnan(score)


def first_k_pick(cands: list[Candidate], k: int) -> int | None:
    """sample_index of the best among samples 0..k-1 (ties: earliest); None when none is usable."""
    best = None
    for i, s in sorted(cands):
        if i >= k:
            break
        if best is None or s > best[1]:
            best = (i, s)
    return None if best is None else best[0]


def pick_probabilities(cands: list[Candidate], k: int) -> dict[int, float]:
    order = sorted(cands, key=lambda c: (-c[1], c[0]))
    n = len(order)
    k = min(k, n)
    if not n or k < 1:
        return {}
    total = math.comb(n, k)
    return {i: math.comb(n - 1 - pos, k - 1) / total for pos, (i, _) in enumerate(order)}


def best_of_k(cands: list[Candidate], judge: dict[int, float], k: int, method: str) -> float | None:
    """The judge score of the pick (first_k) or its expectation over subsets (expected)."""
    if method == "first_k":
        i = first_k_pick(cands, k)
        return None if i is None else judge[i]
    probs = pick_probabilities(cands, k)
    return sum(p * judge[i] for i, p in probs.items()) if probs else None


def uniform_pick(judge: dict[int, float], k: int, method: str) -> float | None:
    """The random line: expected judge score of a uniform pick (among the first k for first_k)."""
    pool = [v for i, v in judge.items() if method == "expected" or i < k]
    return sum(pool) / len(pool) if pool else None


def pool_size(cands: list[Candidate], k: int, method: str) -> int:
    return len(cands) if method == "expected" else sum(i < k for i, _ in cands)


# --- bon_score: the RM side ---------------------------------------------------------------------

def pointwise_capable(rm) -> bool:
    from tasks.rms.base import RewardModel

    return type(rm).score_answers is not RewardModel.score_answers


def score_candidates(rm, strategy: str, samples: list[dict], questions: dict, context: dict) -> list[dict]:
    """One row per sample; each distinct (question, answer) is scored once."""
    todo = sorted({(r["question_id"], r["answer_hash"]): r["text"] for r in samples if r["valid"]}.items())
    scored = rm.score_answers([(questions[q]["question"], context[q], text) for (q, _), text in todo]) if todo else []
    by_key = {key: s for (key, _), s in zip(todo, scored)}
    rows = []
    for r in samples:
        s = by_key.get((r["question_id"], r["answer_hash"])) if r["valid"] else None
        rows.append({"rm": rm.name, "strategy": strategy, "question_id": r["question_id"],
                     "sample_index": r["sample_index"], "score": s.score if s else None,
                     "truncated": bool(s and s.truncated)})
    return rows


def run(params: dict, rm_name: str, inputs: dict, out: dict) -> dict:
    from tasks.artifacts import read_table, write_json, write_table
    from tasks.bon import SCORE_PARAMS, bon_params
    from tasks.errors import ConfigError, did_you_mean
    from tasks.resources import Resources
    from tasks.rms import make_rm
    from tasks.strategies import EVALUATION_ONLY, check, load_contexts

    rms = params["scoring"]["rms"]
    if rm_name not in rms:
        raise ConfigError(f"scoring.rms: {did_you_mean(rm_name, rms)}")
    (strategy,) = check([bon_params(params, SCORE_PARAMS)["strategy"]])
    res = Resources(params)
    rm = make_rm(rm_name, rms[rm_name], res)   # fail fast: bad entry, missing key
    samples = read_table(inputs["samples"], "bon_samples").to_pylist()
    metrics = {"rm": rm_name, "kind": rm.kind, "identity": rm.identity(), "strategy": strategy,
               "evaluation_only": strategy in EVALUATION_ONLY, "samples": len(samples),
               "invalid_samples": sum(not r["valid"] for r in samples)}
    rows, why = [], ""
    if pointwise_capable(rm):
        questions = {q["id"]: q for q in read_table(inputs["questions"], "questions").to_pylist()}
        context = load_contexts(strategy, inputs["questions"], inputs["profile_context"], inputs.get("inferred_rubrics"))
        try:
            rows = score_candidates(rm, strategy, samples, questions, context)
        except NotImplementedError as exc:
            why = str(exc)
    else:
        why = f"{rm.kind}: pairwise-only, no score for an answer on its own"
    write_table(rows, out["scores"], "bon_scores")   # empty for a pairwise-only RM
    metrics.update(bon_capable=not why, not_capable_reason=why or None,
                   scored=sum(usable(r["score"]) for r in rows),
                   no_score=sum(v["valid"] and not usable(r["score"]) for r, v in zip(rows, samples)),
                   truncated=sum(r["truncated"] for r in rows), run=res.stats())
    write_json(metrics, out["metrics"])
    return metrics
