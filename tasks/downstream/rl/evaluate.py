"""rl_eval: every trained policy, and the untrained one as the baseline row, answers the test questions
through the LLM layer (the transformers backend pointed at the rebuilt model, so every call is cached;
greedy at rl.eval.temperature 0, else sampled with a seed); BoN's rubric judge (bon.judge) scores each
distinct answer once. Every question counts: an empty, failed or unjudgeable answer scores the judge's
minimum and is counted (invalid_answers, unparseable_verdicts), so a policy cannot gain by leaving its
hardest questions blank. Per policy: the mean with a percentile-bootstrap CI over questions, and the gain
over the baseline with a paired CI (the same resampled questions for both rows).
-> data/rl/answers.parquet (per question), data/rl/eval.parquet (per policy), metrics/rl.json,
plots/rl_scores.png"""
from __future__ import annotations

import shutil
import time

import numpy as np

from tasks.core.determinism import stable_rng
from tasks.core import halves
from tasks.core.errors import ConfigError
from tasks.downstream.judging import bootstrap_means, judge_once, percentile_ci
from tasks.downstream.rl import EVAL_PARAMS, TRAINED, rl_params

BASELINE = "(untrained)"
MIN_SCORE = 0.0   # the rubric judge's minimum: no aspect covered (what an empty answer earns)


def eval_prompt_params(p: dict) -> dict:
    """The prompt settings evaluation uses: rl.eval.profile_k apart from training's (the release trains with
    10 posts and answers with 5); null = the same as training."""
    k = p["eval"].get("profile_k")
    return {**p, "profile_k": p["profile_k"] if k is None else int(k)}


def answer(llm, name: str, questions: list[dict], prompts: list[list[dict]], e: dict, seed: int,
           trained_seed: int | None = None, fidelity: str = "corrected") -> list[dict]:
    from tasks.core.fidelity import pick
    from tasks.downstream.bon.sample import REPLY_TEXT, answer_hash
    from tasks.models.llm import GenParams

    params = GenParams(temperature=float(e.get("temperature") or 0.0), top_p=float(e.get("top_p") or 1.0),
                       max_tokens=int(e["max_tokens"]), seed=seed)
    outs = llm.generate_many([(m, params, 0) for m in prompts], progress=f"rl_eval {name}")
    rows = []
    for q, out in zip(questions, outs):
        text = pick(REPLY_TEXT, fidelity)(out.text) if hasattr(out, "text") else None
        error = "" if text and text.strip() else ("empty reply" if text is not None else f"call failed: {out.error}")
        rows.append({"rm": name, "baseline": name == BASELINE, "question_id": q["id"], "domain": q["domain"],
                     "split": q["split"], "text": text, "valid": not error, "error": error,
                     "answer_hash": answer_hash(text) if not error else None,
                     "finish_reason": getattr(out, "finish_reason", None), "judge_score": None, "score": None,
                     "policy": llm.backend.identity(), "seed": trained_seed})
    return rows


def write_eval_table(table: list[dict], path) -> None:
    """The summary as the rl_eval table: each line's per-seed scores (a dict) stay in the metrics only."""
    from tasks.core.artifacts import write_table

    write_table([{k: v for k, v in r.items() if k != "seed_scores"} for r in table], path, "rl_eval")


def judge_answers(rows: list[dict], questions: dict[str, dict], judge) -> int:
    """Fill judge_score (the verdict; None when unparseable) and score (what counts: the verdict, or MIN_SCORE
    for an invalid answer or an unparseable verdict) in place; each distinct answer is judged once."""
    verdicts = judge_once(rows, questions, judge)
    for r in rows:
        v = verdicts.get((r["question_id"], r["answer_hash"])) if r["valid"] else None
        r["judge_score"] = None if v is None else v.score
        r["score"] = MIN_SCORE if r["judge_score"] is None else r["judge_score"]
    return len(verdicts)


def _r6(x):
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def _per_question(rows: list[dict], lines: list[str], qids: list[str]) -> tuple[np.ndarray, dict]:
    """(policies × questions: each RM's score averaged over its seeds' policies; a question never answered
    scores the minimum) and {rm: {seed: mean over the questions}} for the seed spread."""
    col = {q: j for j, q in enumerate(qids)}
    total, count = np.zeros((len(lines), len(qids))), np.zeros((len(lines), len(qids)))
    by_seed = {}
    for r in rows:
        i, j = lines.index(r["rm"]), col[r["question_id"]]
        total[i, j] += r["score"]
        count[i, j] += 1
        by_seed.setdefault(r["rm"], {}).setdefault(r.get("seed"), []).append(r["score"])
    values = np.where(count > 0, total / np.maximum(count, 1), MIN_SCORE)
    spread = {rm: {s: sum(v) / len(qids) for s, v in sorted(per.items(), key=lambda x: (x[0] is None, x[0]))}
              for rm, per in by_seed.items()}
    return values, spread


def seed_spread(scores: dict) -> dict:
    """An RM's mean score per training seed, and their spread (sd with ddof 1, range) when there are several."""
    vals = np.array(list(scores.values()), dtype=float)
    several = len(vals) > 1
    return {"seeds": len(vals), "seed_scores": {"none" if s is None else str(s): _r6(v) for s, v in scores.items()},
            "seed_sd": _r6(vals.std(ddof=1)) if several else None,
            "seed_range": _r6(vals.max() - vals.min()) if several else None}


def summarise(rows: list[dict], lines: list[str], manifests: dict, b: int, ci: float, seed: int) -> list[dict]:
    """One row per policy over every question (none dropped): mean and CI, gain over the baseline and its
    paired CI, the counts of what scored the minimum, and the spread over the RM's training seeds."""
    qids = sorted({r["question_id"] for r in rows})
    values, spread = _per_question(rows, lines, qids)
    base = lines.index(BASELINE)
    mean = values.mean(axis=1) if qids else np.full(len(lines), np.nan)
    lo = hi = glo = ghi = np.full(len(lines), np.nan)
    if b and qids:
        boot = bootstrap_means(values.T, b, stable_rng(seed, "rl_eval", "bootstrap"))   # resamples × policies
        lo, hi = percentile_ci(boot, ci)
        glo, ghi = percentile_ci(boot - boot[:, [base]], ci)   # paired: the same resamples for both rows
    out = []
    for i, name in enumerate(lines):
        mine = [r for r in rows if r["rm"] == name]
        m = manifests.get(name, {})
        out.append({"rm": name, "algorithm": m.get("algorithm"), "baseline": name == BASELINE,
                    "mean_score": _r6(mean[i]), "ci_low": _r6(lo[i]), "ci_high": _r6(hi[i]),
                    "gain_over_baseline": _r6(mean[i] - mean[base]), "gain_ci_low": _r6(glo[i]),
                    "gain_ci_high": _r6(ghi[i]), "questions": len(qids),
                    "scored": sum(r["judge_score"] is not None for r in mine),
                    "invalid_answers": sum(not r["valid"] for r in mine),
                    "unparseable_verdicts": sum(r["valid"] and r["judge_score"] is None for r in mine),
                    "reward_failures": m.get("reward_failures"),
                    "policy": ", ".join(sorted({r["policy"] for r in mine})) if mine else None,
                    **seed_spread(spread.get(name) or {})})
    return out


def plot(table: list[dict], ci: float, path) -> None:
    from tasks.core.plots import plt, save

    rows = [r for r in table if not r["baseline"]]
    base = next(r for r in table if r["baseline"])
    fig, ax = plt.subplots(figsize=(6.4, 0.5 * max(len(rows), 1) + 1.6), layout="constrained")
    y = np.arange(len(rows))
    means = [r["mean_score"] if r["mean_score"] is not None else np.nan for r in rows]
    err = [[max(m - (r["ci_low"] if r["ci_low"] is not None else m), 0) for m, r in zip(means, rows)],
           [max((r["ci_high"] if r["ci_high"] is not None else m) - m, 0) for m, r in zip(means, rows)]]
    if rows:
        ax.barh(y, means, xerr=err, color="C0", alpha=0.8, capsize=3)
        ax.set_yticks(y, [f"{r['rm']} ({r['algorithm']}; {r['invalid_answers']} invalid)" for r in rows])
    else:
        ax.text(0.5, 0.5, "no RM trained (see metrics/rl_train/)", ha="center", va="center", transform=ax.transAxes)
    if base["mean_score"] is not None:
        ax.axvline(base["mean_score"], color="grey", ls="--", label=f"{BASELINE} {base['mean_score']:.3f}")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel("rubric judge score over every question (invalid = 0)")
    ax.set_title(f"Policy trained with each RM as reward ({ci:.0%} bootstrap CI over questions)", fontsize=9)
    save(fig, path)


def _policies(name: str, manifest: dict, ckpt: str, questions: list[dict]) -> list[tuple[str | None, list[dict]]]:
    """(domain policy or None = the pooled one, its questions): per-domain policies answer their own domain."""
    if not manifest.get("per_domain"):
        return [(None, questions)]
    trained = set(manifest.get("domains") or {})
    needed = sorted({q["domain"] for q in questions})
    missing = [d for d in needed if d not in trained]
    if missing:
        raise ConfigError(f"{ckpt}: '{name}' has no policy for domain '{missing[0]}' (trained per domain on "
                          f"{', '.join(sorted(trained)) or 'none'}); rerun rl_train with those questions")
    return [(d, [q for q in questions if q["domain"] == d]) for d in needed]


def _trained(manifests: dict, base_id: str, eval_splits) -> list[str]:
    """The RMs whose policy was trained (in RM order), refusing a checkpoint of another base model or one
    trained on an evaluated split."""
    stale = [rm for rm, m in manifests.items() if m["status"] == TRAINED and m["base"] != base_id]
    if stale:
        raise ConfigError(f"rl.policy: the checkpoint of '{stale[0]}' was trained from {manifests[stale[0]]['base']}, "
                          f"not {base_id}; rerun rl_train")
    trained = [rm for rm, m in manifests.items() if m["status"] == TRAINED]
    seen = [(rm, s) for rm in trained for s in manifests[rm]["train"]["splits"] if s in eval_splits]
    if seen:   # a policy judged on the questions it was trained on says nothing about the RM
        raise ConfigError(f"rl.eval.splits: '{seen[0][1]}' is also a split '{seen[0][0]}' was trained on "
                          "(rl.train.splits); evaluate on held-out questions")
    return trained


def _summary(table: list[dict], manifests: dict, e: dict) -> dict:
    """metrics/rl.json's account of the policies: how they answered, each one's row, why others have none."""
    keep = ("algorithm", "mean_score", "ci_low", "ci_high", "gain_over_baseline", "gain_ci_low", "gain_ci_high",
            "questions", "scored", "invalid_answers", "unparseable_verdicts", "reward_failures", "seeds", "seed_scores",
            "seed_sd", "seed_range")
    n = max([r["seeds"] for r in table if not r["baseline"]], default=1)
    return {"decoding": "greedy" if not e.get("temperature") else f"sampled, temperature {e['temperature']}",
            "invalid_score": MIN_SCORE,
            "seed_spread": "one seed: no spread over training seeds" if n == 1 else
            f"{n} training seeds per RM: each RM's score is the mean of its seeds' policies; seed_sd and seed_range "
            "give the spread of their mean scores",
            "policies": {r["rm"]: {k: r[k] for k in keep} for r in table},
            "not_trained": {rm: {"status": m["status"], "reason": m.get("reason")}
                            for rm, m in manifests.items() if m["status"] != TRAINED}}


def _answer_all(p: dict, plans: dict, manifests: dict, checkpoints: dict, questions, prompt_of, seed: int, res):
    """Every policy's answers: the baseline, then each trained RM's, per domain and per training seed (a seed
    after the first named `@seed<s>` in the run stats). (rows, LLM stats per policy)."""
    from tasks.core.artifacts import tree_hash
    from tasks.core.determinism import fix_threads
    from tasks.downstream.rl import policy as pol
    from tasks.models.llm import make_llm

    base, kwargs = pol.base_folder(p["policy"], res.cache_dir)
    rows, stats = [], {}
    fix_threads()   # decoding's float sums, like training's, depend on the thread count
    for name in [BASELINE, *plans]:
        trained_seeds = (manifests[name].get("seeds") or [manifests[name].get("seed")]) if name != BASELINE else [None]
        for index, trained_seed in enumerate(trained_seeds):
            for domain, mine in plans.get(name, [(None, questions)]):
                folder = base
                if name != BASELINE:   # rebuilt under the cache, named by content: the same bytes, the same cached calls
                    tag = tree_hash([checkpoints[name]])[:16] + (f"-{domain}" if domain else "") + \
                        (f"-seed{index}" if index else "")
                    folder = str(pol.materialise(base, kwargs, checkpoints[name], res.cache_dir / "rl" / f"policy-{tag}",
                                                 domain, index))
                llm = make_llm({"backend": "transformers", "model": folder}, res.cache_dir / "llm_calls.sqlite")
                rows += answer(llm, name, mine, [prompt_of[q["id"]] for q in mine], p["eval"], seed, trained_seed,
                              res.fidelity)
                key = f"llm:{name}" + (f":{domain}" if domain else "") + (f"@seed{trained_seed}" if index else "")
                stats[key] = llm.stats.as_dict()
                if folder != base:
                    shutil.rmtree(folder, ignore_errors=True)   # ~0.5 GB each; rebuilt in seconds when needed
    return rows, stats


def run(params: dict, inputs: dict, out: dict) -> dict:
    """inputs: questions, ranked_profile, policies ({rm: checkpoint folder} of the RMs in params)."""
    from tasks.core.artifacts import read_table, write_table
    from tasks.downstream.bon.sample import pick_questions, policy_prompts
    from tasks.models.judge import make_judge
    from tasks.models.resources import Resources
    from tasks.downstream.rl import policy as pol
    from tasks.core.runlog import write_metrics

    start = time.perf_counter()
    p, seed, res = rl_params(params, EVAL_PARAMS), int(params["common"]["seed"]), Resources(params)
    e = p["eval"]
    judge = make_judge(params["bon"]["judge"], encoder_factory=res.encoder, llm_factory=res.llm, seed=seed,
                       fidelity=res.fidelity)
    everything = read_table(inputs["questions"], "questions").to_pylist()
    everything = halves.keep(everything, halves.read(inputs["halves"]), halves.DOWNSTREAM)   # none is scored
    questions = pick_questions(everything, {"splits": e["splits"], "domains": None,
                                            "questions_limit": e["questions_limit"]})
    if not questions:
        raise ConfigError(f"rl.eval.splits: no questions in splits {e['splits']} of {inputs['questions']} in the "
                          f"downstream half ({inputs['halves']}; ingest.downstream_share)")
    ranked = read_table(inputs["ranked_profile"], "ranked_profile").to_pylist()
    prompt_of = dict(zip((q["id"] for q in questions), policy_prompts(questions, ranked, eval_prompt_params(p),
                                                                                res.fidelity)))
    manifests = {rm: pol.read_manifest(f) for rm, f in sorted(inputs["policies"].items())}
    base_id = pol.base_identity(p["policy"])
    trained = _trained(manifests, base_id, e["splits"])
    plans = {rm: _policies(rm, manifests[rm], inputs["policies"][rm], questions) for rm in trained}   # fail fast
    rows, stats = _answer_all(p, plans, manifests, inputs["policies"], questions, prompt_of, seed, res)
    judged = judge_answers(rows, {q["id"]: q for q in questions}, judge)
    lines = [BASELINE, *trained]
    table = summarise(rows, lines, manifests, int(e["bootstrap"]), float(e["ci"]), seed)
    write_table(rows, out["answers"], "rl_answers")
    write_eval_table(table, out["eval"])
    metrics = {"judge": judge.identity(), "base": base_id, "questions": len(questions), **_summary(table, manifests, e),
               "run": {"seconds": round(time.perf_counter() - start, 1), "judged_answers": judged, **stats,
                       **res.stats()}}
    write_metrics(metrics, out["metrics"])
    plot(table, float(e["ci"]), out["plot"])
    return metrics


def stage_inputs(params: dict, key: None, declared: dict) -> dict:
    """(flows/stage.py) The checkpoints of the RMs rl.rms lists (a folder left by a name since removed is not read)."""
    from tasks.core import layout
    from tasks.core.artifacts import existing

    return {**declared, "policies": existing({rm: layout.rl_train(rm)["policy"] for rm in sorted(params["rl"]["rms"])})}
