"""bon_judge: the rubric judge (tasks/models/judge.py, the same one pairs use) scores every distinct valid
answer once against its question's gold rubric: 0/1/2 per aspect, normalised to [0, 1].

It never sees an RM score, so adding an RM reuses every verdict. An unparseable verdict stays
null and is counted; it is never scored 0."""
from __future__ import annotations

from collections import defaultdict

from tasks.downstream.judging import distinct_answers, judge_once


def candidates(samples: list[dict]) -> list[tuple[str, str, str]]:
    """Distinct (question_id, answer_hash, text) of the valid samples, in a fixed order.
    The same text under two questions is two candidates: each has its own rubric."""
    return [(q, h, t) for (q, h), t in distinct_answers(samples)]


def judge_candidates(samples: list[dict], questions: dict[str, dict], judge) -> list[dict]:
    verdicts = judge_once(samples, questions, judge)
    identity = judge.identity()
    return [{"answer_hash": h, "question_id": q, "judge_score": v.score, "per_aspect": v.per_aspect,
             "valid": v.score is not None, "judge": identity, "judge_raw": v.raw}
            for (q, h), v in verdicts.items()]


def judge_metrics(rows: list[dict], samples: list[dict], questions: dict[str, dict] | None = None) -> dict:
    from tasks.models.judge import unparseable_by_aspects

    domain = {r["question_id"]: r["domain"] for r in samples}
    per = defaultdict(list)
    for r in rows:
        per[domain[r["question_id"]]].append(r)

    def summary(rs: list[dict]) -> dict:
        scores = [r["judge_score"] for r in rs if r["valid"]]
        return {"judged": len(rs), "unparseable": len(rs) - len(scores),
                "mean_score": round(sum(scores) / len(scores), 4) if scores else None}

    valid_samples = sum(r["valid"] for r in samples)
    out = {**summary(rows), "valid_samples": valid_samples, "duplicate_answers": valid_samples - len(rows),
           "per_domain": {d: summary(rs) for d, rs in sorted(per.items())}}
    if questions is not None:   # a reply budget too small for long rubrics shows up at large sizes
        out["unparseable_by_aspects"] = unparseable_by_aspects(
            [(len(questions[r["question_id"]]["rubric_aspects"]), r["valid"]) for r in rows])
    return out


def run(params: dict, inputs: dict, out: dict) -> dict:
    from tasks.core.artifacts import read_table, write_table
    from tasks.core.runlog import write_metrics
    from tasks.downstream.bon import JUDGE_PARAMS, bon_params
    from tasks.models.judge import make_judge
    from tasks.models.resources import Resources

    p, res = bon_params(params, JUDGE_PARAMS), Resources(params)
    judge = make_judge(p["judge"], encoder_factory=res.encoder, llm_factory=res.llm, seed=res.seed,
                       fidelity=res.fidelity)
    samples = read_table(inputs["samples"], "bon_samples").to_pylist()
    wanted = {r["question_id"] for r in samples}
    questions = {q["id"]: q for q in read_table(inputs["questions"], "questions").to_pylist() if q["id"] in wanted}
    rows = judge_candidates(samples, questions, judge)
    write_table(rows, out["judged"], "bon_judged")
    metrics = {"judge": judge.identity(), **judge_metrics(rows, samples, questions), "run": res.stats()}
    write_metrics(metrics, out["metrics"])
    return metrics
