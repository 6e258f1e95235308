"""The pairs stage: generate chosen (covers the gold aspects) and rejected (equally personalised,
avoids them) answers, judge every pair source against the rubric, and select what the rest of
the DAG scores (`pairs.source`: generate | reference)."""
from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from tasks.stages.ingest import first_per_domain, word_count
from tasks.models.llm import GenParams
from tasks.stages.profiles import format_profile
from tasks.core.prompts import aspect_titles, render
from tasks.stages.rubrics import top_items
from tasks.models.structured import generate_parsed

PREAMBLE = re.compile(r"^\s*(?:(?:reply|answer|response)\s*:\s*)", re.I)
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def parse_answer(max_words: int):
    """A reply of at most max_words words. A longer one is cut at its last sentence end within
    the limit when that keeps at least half of it; otherwise it does not parse."""
    def parse(text: str) -> str:
        text = PREAMBLE.sub("", text.strip()).strip().strip('"').strip()
        if not text:
            raise ValueError("empty reply")
        words = text.split()
        if len(words) <= max_words:
            return " ".join(words)
        head = " ".join(words[:max_words])
        ends = [m.end() for m in SENTENCE_END.finditer(head)]
        if not ends or len(head[:ends[-1]].split()) < max_words // 2:
            raise ValueError(f"{len(words)} words > {max_words} with no sentence end to cut at")
        return head[:ends[-1]]
    return parse


def longer_than(max_words: int):
    """accept_truncated for answers: a reply cut by the token limit after more than max_words words holds
    a whole answer of the asked length (parse_answer cuts it at a sentence end); a shorter one does not."""
    return lambda text: len(text.split()) > max_words


def generate_pairs(questions, ranked, llm, p: dict, seed: int) -> list[dict]:
    items = top_items(ranked, p["profile_k"])
    params = GenParams(temperature=p["temperature"], top_p=p.get("top_p", 1.0), max_tokens=p["max_tokens"], seed=seed)
    prompts = []
    for q in questions:
        common = dict(question=q["question"], aspects=aspect_titles(q["rubric_aspects"]), max_words=p["max_words"],
                      profile=format_profile(items[q["id"]], p["max_words_per_post"]))
        prompts += [render(p["chosen_prompt"], **common), render(p["rejected_prompt"], **common)]
    parsed = generate_parsed(llm, prompts, parse_answer(p["max_words"]), params, retries=p["parse_retries"],
                             temperature_bump=p["temperature_bump"], progress="pairs", accept_truncated=longer_than(p["max_words"]))
    generator = llm.backend.identity()
    rows = []
    for q, c, r in zip(questions, parsed[0::2], parsed[1::2]):
        cw, rw = (word_count(c.value) if c.valid else None), (word_count(r.value) if r.valid else None)
        rows.append({"question_id": q["id"], "domain": q["domain"], "split": q["split"], "chosen": c.value,
                     "rejected": r.value, "generator": generator, "chosen_words": cw, "rejected_words": rw,
                     "length_ratio": cw / rw if cw and rw else None, "format_ok": c.valid and r.valid,
                     "error": "; ".join(f"{side}: {x.error}" for side, x in (("chosen", c), ("rejected", r)) if x.error),
                     "chosen_raw": c.raw, "rejected_raw": r.raw, "attempts": max(c.attempts, r.attempts)})
    return rows


def judge_pairs(pairs: list[dict], questions: dict[str, dict], judge, source: str) -> list[dict]:
    """Add judge scores and validity (chosen beats rejected under the rubric judge)."""
    ok = [p for p in pairs if p["chosen"] is not None and p["rejected"] is not None]
    verdicts = judge.judge([(questions[p["question_id"]], p[side]) for p in ok for side in ("chosen", "rejected")])
    scored = {id(p): (c.score, r.score) for p, c, r in zip(ok, verdicts[0::2], verdicts[1::2])}
    out = []
    for p in pairs:
        sc, sr = scored.get(id(p), (None, None))
        out.append({"question_id": p["question_id"], "domain": p["domain"], "split": p["split"],
                    "chosen": p["chosen"], "rejected": p["rejected"], "generator": p["generator"],
                    "chosen_words": p["chosen_words"], "rejected_words": p["rejected_words"],
                    "length_ratio": p["length_ratio"], "source": source,
                    "judge_chosen": sc, "judge_rejected": sr,
                    "valid": sc is not None and sr is not None and sc > sr})
    return out


def select(judged: list[dict], keep_invalid: bool) -> list[dict]:
    return [p for p in judged if p["chosen"] is not None and (keep_invalid or p["valid"])]


def _summary(rows: list[dict]) -> dict:
    if not rows:
        return {"pairs": 0}
    ratios = np.array([r["length_ratio"] for r in rows if r["length_ratio"] is not None], dtype=float)
    judged = [r for r in rows if r["judge_chosen"] is not None]
    mean = lambda xs: round(float(np.mean(xs)), 4) if len(xs) else None  # noqa: E731
    return {
        "pairs": len(rows),
        "unusable": sum(r["chosen"] is None or r["rejected"] is None for r in rows),
        "validity_rate": mean([r["valid"] for r in rows]),
        "judge_chosen_mean": mean([r["judge_chosen"] for r in judged]),
        "judge_rejected_mean": mean([r["judge_rejected"] for r in judged]),
        "length_ratio": {"mean": mean(ratios), "p10": round(float(np.quantile(ratios, 0.1)), 4) if len(ratios) else None,
                         "p90": round(float(np.quantile(ratios, 0.9)), 4) if len(ratios) else None,
                         "chosen_longer_share": mean(ratios > 1), "within_15pct_share":
                         mean((np.maximum(ratios, 1 / ratios) <= 1.15)) if len(ratios) else None},
    }


def pair_metrics(judged_by_source: dict[str, list[dict]], aspects: dict[str, int] | None = None) -> dict:
    """Per source: overall and per-domain summaries; with `aspects` (question id -> number of gold
    aspects) also the judge's unparseable verdicts per rubric size."""
    from tasks.models.judge import unparseable_by_aspects

    out = {}
    for source, rows in sorted(judged_by_source.items()):
        per = defaultdict(list)
        for r in rows:
            per[r["domain"]].append(r)
        out[source] = {"overall": _summary(rows), "per_domain": {d: _summary(v) for d, v in sorted(per.items())}}
        if aspects is not None:
            out[source]["unparseable_by_aspects"] = unparseable_by_aspects(
                [(aspects[r["question_id"]], r[f"judge_{side}"] is not None) for r in rows
                 if r["chosen"] is not None and r["rejected"] is not None for side in ("chosen", "rejected")])
    return out


def plot_validity(metrics: dict, path) -> None:
    """Mean rubric score of chosen vs rejected per domain and pair source."""
    from tasks.core.plots import plt, save

    sources = sorted(metrics)
    fig, axes = plt.subplots(1, len(sources), figsize=(4.5 * len(sources), 3.2), squeeze=False)
    for ax, source in zip(axes[0], sources):
        doms = sorted(metrics[source]["per_domain"])
        x = np.arange(len(doms))
        for off, side in ((-0.2, "chosen"), (0.2, "rejected")):
            vals = [metrics[source]["per_domain"][d].get(f"judge_{side}_mean") or 0 for d in doms]
            ax.bar(x + off, vals, width=0.4, label=side)
        ax.set_xticks(x, doms)
        ax.set_ylim(0, 1)
        ax.set_title(f"{source} pairs: validity {metrics[source]['overall'].get('validity_rate')}")
        ax.set_ylabel("rubric judge score")
        ax.legend(fontsize=8)
    save(fig, path)


def run(params: dict, inputs: dict, out: dict) -> dict:
    from tasks.core import halves
    from tasks.core.artifacts import read_table, write_table
    from tasks.core.runlog import write_metrics
    from tasks.core.errors import ConfigError
    from tasks.models.judge import make_judge
    from tasks.models.resources import Resources

    p, res = params["pairs"], Resources(params)
    if p["source"] not in ("generate", "reference"):
        raise ConfigError(f"pairs.source: unknown source '{p['source']}'; valid: generate, reference")
    generating = p["generate"] or p["source"] == "generate"
    llm = res.llm(p["llm"]) if generating else None   # fail fast (a missing key) before any work
    questions = [q for q in read_table(inputs["questions"], "questions").to_pylist() if q["split"] in p["splits"]]
    questions = halves.keep(questions, halves.read(inputs["halves"]), halves.BENCHMARK)   # none BoN / RL answer
    questions = questions[: p["questions_limit"]] if p.get("questions_limit") else questions
    by_id = {q["id"]: q for q in questions}
    generated = []
    if generating:   # generate_splits: generation can cover fewer splits than the judged reference pairs
        ranked = read_table(inputs["ranked_profile"], "ranked_profile").to_pylist()
        todo = first_per_domain([q for q in questions if q["split"] in p.get("generate_splits", p["splits"])],
                                p.get("generate_per_domain"))
        generated = generate_pairs(todo, ranked, llm, p, res.seed)
    reference = [r for r in read_table(inputs["reference_pairs"], "pairs").to_pylist() if r["question_id"] in by_id]
    if p["source"] == "reference" and not reference:
        raise ConfigError("pairs.source: reference, but the ingested data has no chosen/rejected pairs "
                          "(use a released-benchmark layout, or pairs.source: generate)")
    judge = make_judge(p["judge"], encoder_factory=res.encoder, llm_factory=res.llm, seed=res.seed)
    judged = {"generate": judge_pairs(generated, by_id, judge, "generate"),
              "reference": judge_pairs(reference, by_id, judge, "reference")}
    write_table(generated, out["generated_pairs"], "generated_pairs")
    write_table(judged["generate"] + judged["reference"], out["judged_pairs"], "judged_pairs")
    selected, trains = select(judged[p["source"]], p["keep_invalid"]), set(params["train_rm"]["splits"])
    write_table([r for r in selected if r["split"] not in trains], out["selected_pairs"], "judged_pairs")
    write_table([r for r in selected if r["split"] in trains], out["train_pairs"], "judged_pairs")
    metrics = {"selected_source": p["source"], "keep_invalid": p["keep_invalid"], "judge": judge.identity(),
               "generation_format_invalid": sum(not g["format_ok"] for g in generated),
               **pair_metrics({k: v for k, v in judged.items() if v},
                              {q: len(by_id[q]["rubric_aspects"]) for q in by_id})}
    metrics["selected_pairs"] = len(selected)
    metrics["run"] = res.stats()
    write_metrics(metrics, out["metrics"])
    plot_validity({k: metrics[k] for k in judged if k in metrics}, out["plot"])
    return metrics
