"""The score stage for one RM: every selected test pair under every profile strategy -> one
row per (strategy, pair) with both scores, correct / tie / invalid / truncated."""
from __future__ import annotations

import math
from collections import defaultdict

from tasks.core.progress import bar as progress_bar

from tasks.stages.ingest import first_per_domain
from tasks.models.listwise import outcome
from tasks.models.rms.registry import make_rm
from tasks.models.strategies import check, pair_inputs


def usable(score) -> bool:
    """A score that can be compared: NaN (e.g. -inf - -inf from a judge's log-probs) or inf is not."""
    return score is not None and math.isfinite(score)


def score_rows(rm, benchmark: str, strategy: str, pairs: list[dict], questions: dict, context: dict) -> list[dict]:
    scored = rm.score_pairs(pair_inputs(pairs, questions, context))
    failed = getattr(context, "failed", frozenset())   # planner rows that never parsed: question only
    rows, identity, dtype = [], rm.identity(), getattr(rm, "numerics", dict)().get("dtype")
    for p, s in zip(pairs, scored):
        c, r = (x if usable(x) else None for x in (s.chosen.score, s.rejected.score))   # never NaN/inf in the table
        res = outcome([c], [r])   # the list-wise rule at m = n = 1 (tasks/models/listwise.py)
        rows.append({"rm": rm.name, "benchmark": benchmark, "rm_kind": rm.kind, "rm_identity": identity, "strategy": strategy,
                     "question_id": p["question_id"], "domain": p["domain"], "split": p["split"],
                     "score_chosen": c, "score_rejected": r, "correct": res["correct"],
                     "tie": res["tie"], "invalid": res["invalid"],
                     "truncated": s.chosen.truncated or s.rejected.truncated, "order_consistent": s.order_consistent,
                     "input_hash_chosen": s.chosen.input_hash, "input_hash_rejected": s.rejected.input_hash,
                     "planner_failed": p["question_id"] in failed, "chosen_position": s.chosen_position,
                     "picked_a": s.picked_a, "score_dtype": dtype})
    return rows


def summary(rows: list[dict]) -> dict:
    """Quick per-strategy numbers (strict ties); the leaderboard stage adds CIs and policies."""
    out = defaultdict(lambda: {"pairs": 0, "correct": 0, "ties": 0, "invalid": 0, "truncated": 0, "planner_failed": 0})
    for r in rows:
        m = out[f"{r['benchmark']}/{r['strategy']}"]
        m["pairs"] += 1
        m["correct"] += r["correct"]
        m["ties"] += r["tie"]
        m["invalid"] += r["invalid"]
        m["truncated"] += r["truncated"]
        m["planner_failed"] += r["planner_failed"]
    for m in out.values():
        m["accuracy_strict"] = round(m["correct"] / m["pairs"], 4) if m["pairs"] else None
    return dict(sorted(out.items()))


def benchmark_pairs(params: dict, benchmark: str, inputs: dict, rm_name: str | None = None) -> list[dict]:
    """The pairs one benchmark scores, in table order (the same on every worker); an RM entry's own
    `per_domain_limit` (e.g. the cheap positive-control ladder: every pair) overrides scoring's."""
    from tasks.models.rms.registry import LIMIT

    from tasks.models import chunks
    from tasks.core.errors import ConfigError, did_you_mean

    s = params["scoring"]
    paths = {"personalised": inputs["selected_pairs"], "generic": inputs.get("generic_pairs")}
    if benchmark not in paths:
        raise ConfigError(f"scoring.benchmarks: {did_you_mean(benchmark, paths)}")
    entry = s["rms"].get(rm_name) or {}
    limit = entry[LIMIT] if LIMIT in entry else s.get("per_domain_limit")
    return first_per_domain([p for p in chunks.rows(paths[benchmark], "judged_pairs") if p["split"] in s["splits"]],
                            limit)


def plan(params: dict, rm_name: str, inputs: dict) -> list[dict]:
    """The stage's chunks: benchmark x strategy x fixed slices of `scale.chunk_size` pairs."""
    from tasks.models import chunks
    from tasks.core.errors import ConfigError, did_you_mean

    s = params["scoring"]
    if rm_name not in s["rms"]:
        raise ConfigError(f"scoring.rms: {did_you_mean(rm_name, s['rms'])}")
    out = []
    for benchmark in s.get("benchmarks", ["personalised"]):
        n = len(benchmark_pairs(params, benchmark, inputs, rm_name))
        strategies = s["strategies"] if benchmark == "personalised" else s.get("generic_strategies", s["strategies"])
        out += [{"benchmark": benchmark, "strategy": strategy, "start": a, "stop": b}
                for strategy in check(strategies) for a, b in chunks.slices(n, chunks.chunk_size(params))]
    return out


def score_chunk(params: dict, rm_name: str, inputs: dict, chunk: dict | None, key: dict | None = None,
                built=None) -> dict:
    """One chunk's rows, on whichever worker runs it (chunk None: no rows, the RM's identity only)."""
    from tasks.models import chunks

    rm, res = built or chunks.built_rm(params, rm_name, key)
    before, rows = res.stats(), []
    if chunk:
        questions = {q["id"]: q for q in chunks.rows(inputs["questions"], "questions")}
        pairs = benchmark_pairs(params, chunk["benchmark"], inputs, rm_name)[chunk["start"]:chunk["stop"]]
        context = chunks.contexts(chunk["strategy"], inputs["questions"], inputs["profile_context"],
                                  inputs.get("inferred_rubrics"), res.fidelity)
        rows = score_rows(rm, chunk["benchmark"], chunk["strategy"], pairs, questions, context)
    return {"rows": rows, "kind": rm.kind, "identity": rm.identity(), "numerics": getattr(rm, "numerics", dict)(),
            "run": chunks.delta(before, res.stats())}


def run(params: dict, rm_name: str, inputs: dict, out: dict, map_chunks=None) -> dict:
    """Plan the chunks, score them (in this process, or through `map_chunks`: a task runner that
    returns each chunk's result in plan order), merge in plan order: the same bytes either way."""
    from tasks.models import chunks
    from tasks.core.artifacts import write_table
    from tasks.models.resources import Resources
    from tasks.core.runlog import write_metrics

    todo = plan(params, rm_name, inputs) or [None]
    if map_chunks is None:
        res = Resources(params)
        built = (make_rm(rm_name, params["scoring"]["rms"][rm_name], res), res)   # fail fast: bad entry, missing key
        map_chunks = lambda cs: [score_chunk(params, rm_name, inputs, c, built=built)  # noqa: E731
                                 for c in progress_bar(cs, desc=f"score {rm_name}", unit="chunk")]
    results = map_chunks(todo)
    kind, identity = chunks.same_rm(results, rm_name)
    rows = [r for part in results for r in part["rows"]]
    write_table(rows, out["scores"], "scores")
    metrics = {"rm": rm_name, "kind": kind, "identity": identity, "numerics": chunks.same_numerics(results, rm_name),
               "strategies": summary(rows),
               "run": chunks.counters(results)}
    write_metrics(metrics, out["metrics"])
    return metrics
