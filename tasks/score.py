"""The score stage for one RM: every selected test pair under every profile strategy -> one
row per (strategy, pair) with both scores, correct / tie / invalid / truncated."""
from __future__ import annotations

from collections import defaultdict

from tqdm import tqdm

from tasks.ingest import first_per_domain
from tasks.rms import make_rm
from tasks.strategies import check, load_contexts, pair_inputs


def score_rows(rm, benchmark: str, strategy: str, pairs: list[dict], questions: dict, context: dict) -> list[dict]:
    scored = rm.score_pairs(pair_inputs(pairs, questions, context))
    rows = []
    for p, s in zip(pairs, scored):
        c, r = s.chosen.score, s.rejected.score
        invalid = c is None or r is None
        rows.append({"rm": rm.name, "benchmark": benchmark, "rm_kind": rm.kind, "rm_identity": rm.identity(), "strategy": strategy,
                     "question_id": p["question_id"], "domain": p["domain"], "split": p["split"],
                     "score_chosen": c, "score_rejected": r, "correct": not invalid and c > r,
                     "tie": not invalid and c == r, "invalid": invalid,
                     "truncated": s.chosen.truncated or s.rejected.truncated, "order_consistent": s.order_consistent,
                     "input_hash_chosen": s.chosen.input_hash, "input_hash_rejected": s.rejected.input_hash})
    return rows


def summary(rows: list[dict]) -> dict:
    """Quick per-strategy numbers (strict ties); the leaderboard stage adds CIs and policies."""
    out = defaultdict(lambda: {"pairs": 0, "correct": 0, "ties": 0, "invalid": 0, "truncated": 0})
    for r in rows:
        m = out[f"{r['benchmark']}/{r['strategy']}"]
        m["pairs"] += 1
        m["correct"] += r["correct"]
        m["ties"] += r["tie"]
        m["invalid"] += r["invalid"]
        m["truncated"] += r["truncated"]
    for m in out.values():
        m["accuracy_strict"] = round(m["correct"] / m["pairs"], 4) if m["pairs"] else None
    return dict(sorted(out.items()))


def run(params: dict, rm_name: str, inputs: dict, out: dict) -> dict:
    from tasks.artifacts import read_table, write_json, write_table
    from tasks.errors import ConfigError, did_you_mean
    from tasks.resources import Resources

    s = params["scoring"]
    if rm_name not in s["rms"]:
        raise ConfigError(f"scoring.rms: {did_you_mean(rm_name, s['rms'])}")
    res = Resources(params)
    rm = make_rm(rm_name, s["rms"][rm_name], res)   # fail fast: bad entry, missing key, remote code
    questions = {q["id"]: q for q in read_table(inputs["questions"], "questions").to_pylist()}
    benchmarks = {"personalised": inputs["selected_pairs"], "generic": inputs.get("generic_pairs")}
    rows = []
    for benchmark in s.get("benchmarks", ["personalised"]):
        if benchmark not in benchmarks:
            raise ConfigError(f"scoring.benchmarks: {did_you_mean(benchmark, benchmarks)}")
        pairs = first_per_domain([p for p in read_table(benchmarks[benchmark], "judged_pairs").to_pylist()
                                  if p["split"] in s["splits"]], s.get("per_domain_limit"))
        strategies = s["strategies"] if benchmark == "personalised" else s.get("generic_strategies", s["strategies"])
        for strategy in tqdm(check(strategies), desc=f"score {rm_name} ({benchmark})", unit="strategy",
                             disable=None):
            context = load_contexts(strategy, inputs["questions"], inputs["profile_context"],
                                    inputs.get("inferred_rubrics"))
            rows += score_rows(rm, benchmark, strategy, pairs, questions, context)
    write_table(rows, out["scores"], "scores")
    metrics = {"rm": rm_name, "kind": rm.kind, "identity": rm.identity(), "strategies": summary(rows),
               "run": res.stats()}
    write_json(metrics, out["metrics"])
    return metrics
