"""The rubrics stage (planner): from the question and the user's top-k retrieved posts only —
never the narrative or the gold rubric — an LLM lists the aspects this user likely expects."""
from __future__ import annotations

import json
import re
from collections import defaultdict

import numpy as np

from tasks.core import halves
from tasks.stages.ingest import first_per_domain
from tasks.models.llm import GenParams
from tasks.stages.profiles import format_profile
from tasks.core.prompts import render
from tasks.models.structured import generate_parsed

ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")


def parse_aspects(max_aspects: int):
    def parse(text: str) -> list[str]:
        items = [m.group(1).strip().rstrip(".") for m in map(ITEM.match, text.splitlines()) if m]
        if not items and text.strip().startswith("["):
            try:
                items = [str(x) for x in json.loads(text.strip())]
            except json.JSONDecodeError:
                pass
        items = [i for i in items if 1 <= len(i.split()) <= 20][:max_aspects]
        if not items:
            raise ValueError("no '- ' list items")
        return items
    return parse


def top_items(ranked: list[dict], k: int) -> dict[str, list[dict]]:
    by_q = defaultdict(list)
    for r in sorted(ranked, key=lambda r: (r["question_id"], r["rank"])):
        if r["rank"] <= k:
            by_q[r["question_id"]].append(r)
    return by_q


def plan(questions: list[dict], ranked: list[dict], llm, p: dict, seed: int) -> list[dict]:
    items = top_items(ranked, p["profile_k"])
    prompts = [render(p["prompt"], question=q["question"], max_aspects=p["max_aspects"],
                      profile=format_profile(items[q["id"]], p["max_words_per_post"])) for q in questions]
    parsed = generate_parsed(llm, prompts, parse_aspects(p["max_aspects"]),
                             GenParams(temperature=p["temperature"], max_tokens=p["max_tokens"], seed=seed),
                             retries=p["parse_retries"], temperature_bump=p["temperature_bump"], progress="rubrics")
    generator = llm.backend.identity()
    return [{"question_id": q["id"], "domain": q["domain"], "split": q["split"], "aspects": r.value,
             "valid": r.valid, "attempts": r.attempts, "error": r.error, "raw_text": r.raw,
             "generator": generator} for q, r in zip(questions, parsed)]


def match_scores(inferred: list[str], gold: list[str], encoder, threshold: float) -> tuple[float, float]:
    """(recall, precision): share of gold aspects matched by some inferred one, and vice versa."""
    vecs = encoder.encode(inferred + gold)
    sims = vecs[len(inferred):] @ vecs[:len(inferred)].T      # gold × inferred
    sims = np.round(sims, 6)
    return float((sims.max(axis=1) >= threshold).mean()), float((sims.max(axis=0) >= threshold).mean())


def rubric_metrics(rows: list[dict], questions: list[dict], encoder, threshold: float) -> dict:
    gold = {q["id"]: [a["aspect"] for a in q["rubric_aspects"]] for q in questions}
    per = defaultdict(lambda: {"questions": 0, "invalid": 0, "recall": [], "precision": []})
    for r in rows:
        m = per[r["domain"]]
        m["questions"] += 1
        if not r["valid"]:
            m["invalid"] += 1
            m["recall"].append(0.0)   # an invalid plan found nothing; precision is undefined
            continue
        rec, prec = match_scores(r["aspects"], gold[r["question_id"]], encoder, threshold)
        m["recall"].append(rec)
        m["precision"].append(prec)
    out = {}
    for d, m in sorted(per.items()):
        out[d] = {"questions": m["questions"], "invalid": m["invalid"],
                  "recall": round(float(np.mean(m["recall"])), 4) if m["recall"] else None,
                  "precision_valid_only": round(float(np.mean(m["precision"])), 4) if m["precision"] else None}
    all_rec = [x for m in per.values() for x in m["recall"]]
    all_prec = [x for m in per.values() for x in m["precision"]]
    return {"match_threshold": threshold, "per_domain": out, "questions": len(rows),
            "invalid": sum(m["invalid"] for m in per.values()),
            "recall": round(float(np.mean(all_rec)), 4) if all_rec else None,
            "precision_valid_only": round(float(np.mean(all_prec)), 4) if all_prec else None}


def per_half(questions: list[dict], by_id: dict, limit: int | None) -> list[dict]:
    """per_domain_limit in each half: the first N questions scoring reads and the first N BoN / RL read."""
    kept = {q["id"] for half in (halves.BENCHMARK, halves.DOWNSTREAM)
            for q in first_per_domain(halves.keep(questions, by_id, half), limit)}
    return [q for q in questions if q["id"] in kept]


def run(params: dict, inputs: dict, out: dict) -> dict:
    from tasks.core.artifacts import read_table, write_table
    from tasks.core.runlog import write_metrics
    from tasks.models.resources import Resources

    p, res = params["rubrics"], Resources(params)
    llm = res.llm(p["llm"])   # fail fast (a missing key) before any work
    questions = [q for q in read_table(inputs["questions"], "questions").to_pylist() if q["split"] in p["splits"]]
    questions = questions[: p["questions_limit"]] if p.get("questions_limit") else questions
    questions = per_half(questions, halves.read(inputs["halves"]), p.get("per_domain_limit"))
    ranked = read_table(inputs["ranked_profile"], "ranked_profile").to_pylist()
    rows = plan(questions, ranked, llm, p, res.seed)
    write_table(rows, out["inferred_rubrics"], "inferred_rubrics")
    metrics = rubric_metrics(rows, questions, res.encoder(p["match_encoder"]), p["match_threshold"])
    metrics["run"] = res.stats()
    write_metrics(metrics, out["metrics"])
    return metrics
