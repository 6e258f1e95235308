"""Per-RM selection. bon_score: one RM scores every candidate answer under bon.strategy, through the
benchmark's own RM classes and strategies. Then the rules that turn scores into a pick at each k:

- first_k:  the best of samples 0..k-1, ties to the earliest sample (the authors' rule).
- expected: the pick's judge score averaged over every size-k subset of the N' usable candidates,
  in closed form; a subset whose best RM score is shared by t of its candidates splits the pick
  evenly among them (no sample favoured by its index). For candidate i with `a` candidates scoring
  above it, `e` others tied with it and `b` below: i competes in a subset only when none of the `a`
  is in it, and wins 1/(j+1) of it with j of its ties present, so
      P(i is picked) = Σ_j C(e, j) C(b, k-1-j) / (j+1) / C(N', k).
  No dependence on which k samples happened to come first: lower variance.
A candidate is a valid sample with a judge score. An RM that fails on a candidate (no score, NaN or
+-inf) never skips it: `rank_key` puts it below every finite score, and failed candidates among
themselves worst-judged first, so a pick that lands on failures takes the worst of them and an RM with
no finite score on a question picks that question's worst candidate (FAILED_RULE).
k above N' is clipped to N' (the best of everything there is)."""
from __future__ import annotations

import math

from tasks.downstream.judging import distinct_answers

Candidate = tuple[int, object]   # (sample_index, what the pick compares: a float or rank_key's tuple)
METHODS = ("first_k", "expected")
FAILED_RULE = ("an RM score that failed, is missing or is non-finite ranks its candidate below every finite "
               "one (failed candidates: the worst by the judge first); an RM with no finite score on a question "
               "picks its worst candidate. No question or candidate is skipped")


def usable(score) -> bool:
    """As the leaderboard's: NaN and +-inf are no score (neither may win a Best-of-k)."""
    return score is not None and math.isfinite(score)


def rank_key(score, judge: float) -> tuple:
    """What the RM's pick compares: any finite score beats every failure; among failures the pick is the
    worst by the judge, so failing costs an RM the question instead of dropping it."""
    return (1, float(score)) if usable(score) else (0, -float(judge))


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
    n = len(cands)
    k = min(k, n)
    if not n or k < 1:
        return {}
    total, out = math.comb(n, k), {}
    for i, s in cands:
        e = sum(t == s for _, t in cands) - 1           # the others tied with i
        b = sum(t < s for _, t in cands)                # below i (the rest are above: never in i's subsets)
        out[i] = sum(math.comb(e, j) * math.comb(b, k - 1 - j) / (j + 1) for j in range(min(e, k - 1) + 1)) / total
    return out


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
    from tasks.models.rms.base import RewardModel

    return type(rm).score_answers is not RewardModel.score_answers


def sample_rows(rm_name: str, strategy: str, samples: list[dict], by_key: dict) -> list[dict]:
    """One row per sample from {(question_id, answer_hash): AnswerScore-like (score, truncated)}."""
    rows = []
    for r in samples:
        s = by_key.get((r["question_id"], r["answer_hash"])) if r["valid"] else None
        rows.append({"rm": rm_name, "strategy": strategy, "question_id": r["question_id"],
                     "sample_index": r["sample_index"], "score": s[0] if s else None,
                     "truncated": bool(s and s[1])})
    return rows


def plan(params: dict, rm_name: str, inputs: dict) -> list[dict]:
    """Fixed slices of `scale.chunk_size` distinct answers; none for a kind that cannot score one alone."""
    from tasks.models import chunks
    from tasks.core.errors import ConfigError, did_you_mean
    from tasks.models.rms.registry import pointwise_kind

    rms = params["scoring"]["rms"]
    if rm_name not in rms:
        raise ConfigError(f"scoring.rms: {did_you_mean(rm_name, rms)}")
    if not pointwise_kind(rms[rm_name]):
        return []
    n = len(distinct_answers(chunks.rows(inputs["samples"], "bon_samples")))
    return [{"start": a, "stop": b} for a, b in chunks.slices(n, chunks.chunk_size(params))]


def score_chunk(params: dict, rm_name: str, inputs: dict, chunk: dict | None, key: dict | None = None,
                built=None) -> dict:
    """[question_id, answer_hash, score, truncated] for one slice of the distinct answers."""
    from tasks.models import chunks
    from tasks.downstream.bon import SCORE_PARAMS, bon_params

    rm, res = built or chunks.built_rm(params, rm_name, key)
    before, scores, why = res.stats(), [], None
    if not pointwise_capable(rm):
        why = f"{rm.kind}: pairwise-only, no score for an answer on its own"
    elif chunk:
        strategy = bon_params(params, SCORE_PARAMS)["strategy"]
        todo = distinct_answers(chunks.rows(inputs["samples"], "bon_samples"))[chunk["start"]:chunk["stop"]]
        questions = {q["id"]: q for q in chunks.rows(inputs["questions"], "questions")}
        context = chunks.contexts(strategy, inputs["questions"], inputs["profile_context"],
                                  inputs.get("inferred_rubrics"), res.fidelity)
        try:
            scored = rm.score_answers([(questions[q]["question"], context[q], text) for (q, _), text in todo])
            scores = [[q, h, s.score, bool(s.truncated)] for ((q, h), _), s in zip(todo, scored)]
        except NotImplementedError as exc:
            why = str(exc)
    return {"scores": scores, "not_capable": why, "kind": rm.kind, "identity": rm.identity(),
            "run": chunks.delta(before, res.stats())}


def run(params: dict, rm_name: str, inputs: dict, out: dict, map_chunks=None) -> dict:
    """As tasks/stages/score.run: plan, score the chunks here or through `map_chunks`, merge in plan order."""
    from tasks.models import chunks
    from tasks.core.artifacts import read_table, write_table
    from tasks.core.runlog import write_metrics
    from tasks.downstream.bon import SCORE_PARAMS, bon_params
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm
    from tasks.core.progress import bar as progress_bar
    from tasks.models.strategies import EVALUATION_ONLY, check_benchmark_strategy, check_planner_splits

    strategy = check_benchmark_strategy(bon_params(params, SCORE_PARAMS)["strategy"], "bon.strategy")
    check_planner_splits(strategy, (params.get("bon") or {}).get("splits") or (), params, "bon.strategy")
    todo = plan(params, rm_name, inputs) or [None]
    if map_chunks is None:
        res = Resources(params)
        built = (make_rm(rm_name, params["scoring"]["rms"][rm_name], res), res)   # fail fast: bad entry, missing key
        map_chunks = lambda cs: [score_chunk(params, rm_name, inputs, c, built=built)  # noqa: E731
                                 for c in progress_bar(cs, desc=f"bon_score {rm_name}", unit="chunk")]
    results = map_chunks(todo)
    kind, identity = chunks.same_rm(results, rm_name)
    samples = read_table(inputs["samples"], "bon_samples").to_pylist()
    why = next((r["not_capable"] for r in results if r["not_capable"]), "")
    by_key = {(q, h): (score, truncated) for r in results for q, h, score, truncated in r["scores"]}
    rows = [] if why else sample_rows(rm_name, strategy, samples, by_key)   # empty for a pairwise-only RM
    failed = set()
    if strategy == "planner":   # a question whose plan never parsed: scored with the question only, and counted
        failed = chunks.contexts(strategy, inputs["questions"], inputs["profile_context"],
                                 inputs.get("inferred_rubrics")).failed
    write_table(rows, out["scores"], "bon_scores")
    metrics = {"rm": rm_name, "kind": kind, "identity": identity, "strategy": strategy,
               "evaluation_only": strategy in EVALUATION_ONLY, "samples": len(samples),
               "invalid_samples": sum(not r["valid"] for r in samples),
               "bon_capable": not why, "not_capable_reason": why or None,
               "scored": sum(usable(r["score"]) for r in rows),
               "no_score": sum(v["valid"] and not usable(r["score"]) for r, v in zip(rows, samples)),
               "truncated": sum(r["truncated"] for r in rows),
               "planner_failed_questions": len({r["question_id"] for r in samples} & failed),
               "run": chunks.counters(results)}
    write_metrics(metrics, out["metrics"])
    return metrics
