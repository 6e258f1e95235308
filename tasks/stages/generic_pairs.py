"""The generic_pairs stage: a baseline benchmark. Each selected pair keeps its chosen answer; the
rejected one is fluent and on topic but NOT written for this user, so an RM that rewards fluency
or topicality alone does well here. The gap to the personalised benchmark is what personalisation adds.

- mode `generate`: the pair generator LLM (`generic_pairs.llm`) answers the question alone: no
  profile, no rubric (prompts/pair_generic.txt).
- mode `degraded`: no LLM. The rejected answer is the chosen answer of another question in the same
  domain and split, picked by a hash of (common.seed, question id): fluent and written for a real
  user, only not this one. It also answers a different question, so it is an easier, off-topic baseline.

Every row, usable or not, is written to `generated` with its raw reply; only usable ones reach the
benchmark. A reply that never parses (or a pair with no donor) is counted, never filled in."""
from __future__ import annotations

import hashlib
from collections import Counter, defaultdict

from tasks.stages.ingest import first_per_domain, pair_record
from tasks.models.llm import GenParams
from tasks.stages.pairs import judge_pairs, longer_than, pair_metrics, parse_answer
from tasks.core.prompts import render
from tasks.models.structured import generate_parsed

MODES = ("generate", "degraded")
SOURCE = "generic"


def generated_row(pair: dict, rejected: str | None, generator: str, raw: str | None, error: str,
                  attempts: int) -> dict:
    """One `generated_pairs` row; the chosen side is the selected pair's, untouched."""
    rec = pair_record(pair["question_id"], pair["domain"], pair["split"], pair["chosen"], rejected or "", generator)
    if rejected is None:   # nothing usable: no word count, no ratio
        rec.update(rejected=None, rejected_words=None, length_ratio=None)
    return {**rec, "format_ok": rejected is not None, "error": error, "chosen_raw": None,
            "rejected_raw": raw, "attempts": attempts}


def generate_generic(pairs: list[dict], questions: dict[str, dict], llm, p: dict, seed: int) -> list[dict]:
    """Rejected = the LLM's answer to the question alone."""
    params = GenParams(temperature=p["temperature"], top_p=p.get("top_p", 1.0), max_tokens=p["max_tokens"], seed=seed)
    prompts = [render(p["prompt"], question=questions[x["question_id"]]["question"], max_words=p["max_words"])
               for x in pairs]
    parsed = generate_parsed(llm, prompts, parse_answer(p["max_words"]), params, retries=p["parse_retries"],
                             temperature_bump=p["temperature_bump"], progress="generic pairs",
                             accept_truncated=longer_than(p["max_words"]))   # as pairs: cut-off short replies retried
    generator = llm.backend.identity()
    return [generated_row(x, r.value, generator, r.raw, r.error, r.attempts) for x, r in zip(pairs, parsed)]


def donor_index(seed: int, question_id: str, n: int) -> int:
    """A fixed choice among n donors: depends on the seed and the question only, not on row order."""
    digest = hashlib.sha256(f"{int(seed)}\x1f{question_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") % n


def degrade(pairs: list[dict], pool: list[dict], seed: int) -> list[dict]:
    """Rejected = the chosen answer of another question (from `pool`) in the same domain and split."""
    by_group = defaultdict(list)
    for d in sorted(pool, key=lambda d: d["question_id"]):
        by_group[(d["domain"], d["split"])].append(d)
    rows = []
    for x in pairs:
        donors = [d for d in by_group[(x["domain"], x["split"])]
                  if d["question_id"] != x["question_id"] and d["chosen"] != x["chosen"]]
        if not donors:
            rows.append(generated_row(x, None, "degraded", None,
                                      f"degraded: no other question in {x['domain']}/{x['split']} to take an answer from", 0))
            continue
        d = donors[donor_index(seed, x["question_id"], len(donors))]
        rows.append(generated_row(x, d["chosen"], f"degraded:chosen-of:{d['question_id']}", d["chosen"], "", 0))
    return rows


def check_params(p: dict) -> dict:
    from tasks.core.errors import ConfigError

    if p.get("mode") not in MODES:
        raise ConfigError(f"generic_pairs.mode: unknown mode '{p.get('mode')}'; valid: {', '.join(MODES)}")
    return p


def run(params: dict, inputs: dict, out: dict) -> dict:
    """inputs: questions, selected_pairs. out: generic_pairs, generated, metrics."""
    from tasks.core.artifacts import read_table, write_table
    from tasks.core.runlog import write_metrics
    from tasks.core.errors import ConfigError
    from tasks.models.judge import make_judge
    from tasks.models.resources import Resources

    p, res = check_params(params["generic_pairs"]), Resources(params)
    llm = res.llm(p["llm"]) if p["mode"] == "generate" else None   # fail fast (a missing key) before any work
    questions = {q["id"]: q for q in read_table(inputs["questions"], "questions").to_pylist()}
    pool = [x for x in read_table(inputs["selected_pairs"], "judged_pairs").to_pylist() if x["split"] in p["splits"]]
    if not pool:
        raise ConfigError(f"generic_pairs.splits: no selected pairs in {', '.join(p['splits'])} "
                          "(run the pairs stage first, or change the splits)")
    pairs = pool[: p["questions_limit"]] if p.get("questions_limit") else pool
    pairs = first_per_domain(pairs, p.get("per_domain_limit"))
    generated = (generate_generic(pairs, questions, llm, p, res.seed) if p["mode"] == "generate"
                 else degrade(pairs, pool, res.seed))
    judge = make_judge(params["pairs"]["judge"], encoder_factory=res.encoder, llm_factory=res.llm, seed=res.seed)
    judged = judge_pairs([g for g in generated if g["format_ok"]], questions, judge, SOURCE)
    write_table(generated, out["generated"], "generated_pairs")
    write_table(judged, out["generic_pairs"], "judged_pairs")
    failed = [g["error"].split(":")[0] for g in generated if not g["format_ok"]]
    metrics = {"mode": p["mode"], "generator": llm.backend.identity() if llm else "degraded",
               "judge": judge.identity(), "pairs_in": len(pairs), "usable": len(judged),
               "invalid": len(failed), "invalid_reasons": dict(sorted(Counter(failed).items())),
               **pair_metrics({SOURCE: judged} if judged else {}), "run": res.stats()}
    write_metrics(metrics, out["metrics"])
    return metrics
