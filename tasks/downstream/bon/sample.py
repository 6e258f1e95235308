"""bon_sample: the policy writes N answers per test question from the question and the user's
top-k retrieved posts only — never the rubric or the narrative (evaluation-only fields).

Sample i of a question is the call (prompt, sample_index=i): its own cache key and seed, so
raising N adds only the new samples. A call that fails for good is an invalid sample, kept and
counted, never replaced by some text."""
from __future__ import annotations

import hashlib
from collections import Counter, defaultdict

from tasks.core import halves
from tasks.core.errors import ConfigError
from tasks.core.fidelity import pick
from tasks.models.llm import GenParams
from tasks.stages.profiles import profile_block
from tasks.core.prompts import render_with
from tasks.stages.rubrics import top_items


def answer_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pick_questions(questions: list[dict], p: dict) -> list[dict]:
    """Questions of bon.splits (and bon.domains when set); questions_limit keeps the first N per domain,
    so a small run still has a curve for every domain."""
    domains, limit = p.get("domains"), p.get("questions_limit")
    known = {q["domain"] for q in questions}
    for d in domains or ():
        if d not in known:
            raise ConfigError(f"bon.domains: unknown domain '{d}'; valid: {', '.join(sorted(known))}")
    kept, per_domain = [], Counter()
    for q in questions:
        if q["split"] not in p["splits"] or (domains and q["domain"] not in domains):
            continue
        if limit and per_domain[q["domain"]] >= limit:
            continue
        per_domain[q["domain"]] += 1
        kept.append(q)
    return kept


def policy_prompts(questions: list[dict], ranked: list[dict], p: dict, fidelity: str = "corrected") -> list[list[dict]]:
    """The policy's messages (BoN, RL training and evaluation): system_prompt, then the prompt file. Under
    fidelity release the release's (BoN/sample.py:65-98, 129-134): whole posts, {question} then {profile}."""
    # render() refuses any $field it is not given, so a prompt file cannot pull in the rubric
    items = top_items(ranked, p["profile_k"])
    extra = pick({"corrected": {"max_words": p["max_words"]}, "release": {}}, fidelity)   # the release asks no length
    return [render_with(fidelity, p["prompt"], p.get("system_prompt"), question=q["question"], **extra,
                        profile=profile_block(fidelity, items[q["id"]], p["max_words_per_post"])) for q in questions]


# the reply as kept: stripped (prbench) | as generated (the release stores output.outputs[0].text, BoN/sample.py:152)
REPLY_TEXT = {"corrected": str.strip, "release": str}


def sample(questions: list[dict], prompts: list[list[dict]], llm, p: dict, seed: int,
           fidelity: str = "corrected") -> list[dict]:
    n = int(p["n"])
    params = GenParams(temperature=float(p["temperature"]), top_p=float(p["top_p"]),
                       max_tokens=int(p["max_tokens"]), seed=seed)
    # one request per question where the server takes `n` (vLLM), else one per sample; cached per sample either way
    outs = [o for per_q in llm.sample_many([(m, params) for m in prompts], n, progress="bon policy") for o in per_q]
    generator = llm.backend.identity()
    rows = []
    for j, out in enumerate(outs):
        q, i = questions[j // n], j % n
        text = pick(REPLY_TEXT, fidelity)(out.text) if hasattr(out, "text") else None
        error = "" if text and text.strip() else ("empty reply" if text is not None else f"call failed: {out.error}")
        rows.append({"question_id": q["id"], "domain": q["domain"], "split": q["split"], "sample_index": i,
                     "text": text, "valid": not error, "error": error, "generator": generator,
                     "answer_hash": answer_hash(text) if not error else None,
                     "finish_reason": getattr(out, "finish_reason", None)})
    return rows


def sample_metrics(rows: list[dict]) -> dict:
    per = defaultdict(list)
    for r in rows:
        per[r["domain"]].append(r)

    def summary(rs: list[dict]) -> dict:
        valid = [r for r in rs if r["valid"]]
        words = [len(r["text"].split()) for r in valid]
        return {"questions": len({r["question_id"] for r in rs}), "samples": len(rs), "valid": len(valid),
                "invalid": len(rs) - len(valid),
                "cut_at_max_tokens": sum(r["finish_reason"] == "length" for r in valid),
                # distinct answers per question / valid samples: near 1 means sampling does diversify
                "distinct_share": round(len({(r["question_id"], r["answer_hash"]) for r in valid}) / len(valid), 4)
                if valid else None,
                "mean_words": round(sum(words) / len(words), 2) if words else None}

    errors = Counter(r["error"].split(":")[0] for r in rows if r["error"])
    return {**summary(rows), "errors": dict(sorted(errors.items())),
            "per_domain": {d: summary(rs) for d, rs in sorted(per.items())}}


def run(params: dict, inputs: dict, out: dict) -> dict:
    from tasks.core.artifacts import read_table, write_table
    from tasks.core.runlog import write_metrics
    from tasks.downstream.bon import SAMPLE_PARAMS, bon_params
    from tasks.models.resources import Resources

    p, res = bon_params(params, SAMPLE_PARAMS), Resources(params)
    if int(p["n"]) < 1:
        raise ConfigError(f"bon.n: need at least 1 sample per question, got {p['n']}")
    llm = res.llm(p["policy_llm"])   # fail fast (unknown name, missing key) before any work
    everything = read_table(inputs["questions"], "questions").to_pylist()
    questions = pick_questions(halves.keep(everything, halves.read(inputs["halves"]), halves.DOWNSTREAM), p)
    if not questions:
        raise ConfigError(f"bon.splits: no questions in splits {p['splits']} of {inputs['questions']} in the "
                          f"downstream half ({inputs['halves']}; ingest.downstream_share)")
    ranked = read_table(inputs["ranked_profile"], "ranked_profile").to_pylist()
    fidelity = res.fidelity
    rows = sample(questions, policy_prompts(questions, ranked, p, fidelity), llm, p, res.seed, fidelity)
    write_table(rows, out["samples"], "bon_samples")
    metrics = {"policy": llm.backend.identity(), "n": int(p["n"]), **sample_metrics(rows), "run": res.stats()}
    write_metrics(metrics, out["metrics"])
    return metrics
