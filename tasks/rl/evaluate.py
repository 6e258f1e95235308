"""rl_eval: every trained policy, and the untrained one as the baseline row, answers the test questions
greedily through the LLM layer (the transformers backend pointed at the rebuilt model, so every call
is cached); BoN's rubric judge (bon.judge) scores each distinct answer once; per policy the mean judge
score with a percentile-bootstrap CI over questions (the same resamples for every row).
-> data/rl/answers.parquet (per question), data/rl/eval.parquet (per policy), metrics/rl.json,
plots/rl_scores.png"""
from __future__ import annotations

import shutil
import time
import warnings
from pathlib import Path

import numpy as np

from tasks.determinism import stable_rng
from tasks.errors import ConfigError
from tasks.rl import EVAL_PARAMS, TRAINED, rl_params

BASELINE = "(untrained)"


def answer(llm, name: str, questions: list[dict], prompts: list[list[dict]], max_tokens: int, seed: int) -> list[dict]:
    from tasks.bon.sample import answer_hash
    from tasks.llm import GenParams

    params = GenParams(temperature=0.0, max_tokens=int(max_tokens), seed=seed)
    outs = llm.generate_many([(m, params, 0) for m in prompts], progress=f"rl_eval {name}")
    rows = []
    for q, out in zip(questions, outs):
        text = out.text.strip() if hasattr(out, "text") else None
        error = "" if text else ("empty reply" if text is not None else f"call failed: {out.error}")
        rows.append({"rm": name, "baseline": name == BASELINE, "question_id": q["id"], "domain": q["domain"],
                     "split": q["split"], "text": text, "valid": not error, "error": error,
                     "answer_hash": answer_hash(text) if not error else None,
                     "finish_reason": getattr(out, "finish_reason", None), "judge_score": None,
                     "policy": llm.backend.identity()})
    return rows


def judge_answers(rows: list[dict], questions: dict[str, dict], judge) -> int:
    """Fill judge_score in place; each distinct (question, answer) is judged once. Returns judge calls."""
    todo = sorted({(r["question_id"], r["answer_hash"]): r["text"] for r in rows if r["valid"]}.items())
    verdicts = judge.judge([(questions[q], text) for (q, _), text in todo]) if todo else []
    scores = {key: v.score for (key, _), v in zip(todo, verdicts)}
    for r in rows:
        r["judge_score"] = scores.get((r["question_id"], r["answer_hash"])) if r["valid"] else None
    return len(todo)


def _r6(x):
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def summarise(rows: list[dict], lines: list[str], manifests: dict, b: int, ci: float, seed: int) -> list[dict]:
    qids = sorted({r["question_id"] for r in rows})
    col = {q: j for j, q in enumerate(qids)}
    values = np.full((len(lines), len(qids)), np.nan)
    for r in rows:
        if r["judge_score"] is not None:
            values[lines.index(r["rm"]), col[r["question_id"]]] = r["judge_score"]
    mask = ~np.isnan(values)
    rng = stable_rng(seed, "rl_eval", "bootstrap")
    counts = rng.multinomial(len(qids), np.full(len(qids), 1 / len(qids)), size=b) if b and qids else None
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nansum(values, axis=1) / mask.sum(axis=1)
        lo = hi = np.full(len(lines), np.nan)
        if counts is not None:
            boot = (counts @ np.nan_to_num(values).T) / (counts @ mask.T)
            lo, hi = np.nanquantile(boot, [(1 - ci) / 2, (1 + ci) / 2], axis=0)
    base = mean[lines.index(BASELINE)]
    out = []
    for i, name in enumerate(lines):
        mine = [r for r in rows if r["rm"] == name]
        m = manifests.get(name, {})
        out.append({"rm": name, "algorithm": m.get("algorithm"), "baseline": name == BASELINE,
                    "mean_score": _r6(mean[i]), "ci_low": _r6(lo[i]), "ci_high": _r6(hi[i]),
                    "gain_over_baseline": _r6(mean[i] - base), "questions": len(mine), "scored": int(mask[i].sum()),
                    "invalid_answers": sum(not r["valid"] for r in mine), "reward_failures": m.get("reward_failures"),
                    "policy": mine[0]["policy"] if mine else None})
    return out


def plot(table: list[dict], ci: float, path) -> None:
    from tasks.plots import plt, save

    rows = [r for r in table if not r["baseline"]]
    base = next(r for r in table if r["baseline"])
    fig, ax = plt.subplots(figsize=(6.4, 0.5 * max(len(rows), 1) + 1.6), layout="constrained")
    y = np.arange(len(rows))
    means = [r["mean_score"] if r["mean_score"] is not None else np.nan for r in rows]
    err = [[max(m - (r["ci_low"] if r["ci_low"] is not None else m), 0) for m, r in zip(means, rows)],
           [max((r["ci_high"] if r["ci_high"] is not None else m) - m, 0) for m, r in zip(means, rows)]]
    if rows:
        ax.barh(y, means, xerr=err, color="C0", alpha=0.8, capsize=3)
        ax.set_yticks(y, [f"{r['rm']} ({r['algorithm']})" for r in rows])
    else:
        ax.text(0.5, 0.5, "no RM trained (see metrics/rl_train/)", ha="center", va="center", transform=ax.transAxes)
    if base["mean_score"] is not None:
        ax.axvline(base["mean_score"], color="grey", ls="--", label=f"{BASELINE} {base['mean_score']:.3f}")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel("rubric judge score of the greedy answer")
    ax.set_title(f"Policy trained with each RM as reward ({ci:.0%} bootstrap CI over questions)", fontsize=9)
    save(fig, path)


def run(params: dict, inputs: dict, out: dict) -> dict:
    """inputs: questions, ranked_profile, policies ({rm: checkpoint folder} of the RMs in params)."""
    from tasks.artifacts import read_table, tree_hash, write_table
    from tasks.determinism import fix_threads
    from tasks.bon.sample import pick_questions, policy_prompts
    from tasks.judge import make_judge
    from tasks.llm import make_llm
    from tasks.resources import Resources
    from tasks.rl import policy as pol
    from tasks.runlog import write_metrics

    start = time.perf_counter()
    p, seed, res = rl_params(params, EVAL_PARAMS), int(params["common"]["seed"]), Resources(params)
    e = p["eval"]
    judge = make_judge(params["bon"]["judge"], encoder_factory=res.encoder, llm_factory=res.llm, seed=seed)
    everything = read_table(inputs["questions"], "questions").to_pylist()
    questions = pick_questions(everything, {"splits": e["splits"], "domains": None,
                                            "questions_limit": e["questions_limit"]})
    if not questions:
        raise ConfigError(f"rl.eval.splits: no questions in splits {e['splits']} of {inputs['questions']}")
    prompts = policy_prompts(questions, read_table(inputs["ranked_profile"], "ranked_profile").to_pylist(), p)
    manifests = {rm: pol.read_manifest(f) for rm, f in sorted(inputs["policies"].items())}
    base_id = pol.base_identity(p["policy"])
    stale = [rm for rm, m in manifests.items() if m["status"] == TRAINED and m["base"] != base_id]
    if stale:
        raise ConfigError(f"rl.policy: the checkpoint of '{stale[0]}' was trained from {manifests[stale[0]]['base']}, "
                          f"not {base_id}; rerun rl_train")
    trained = [rm for rm, m in manifests.items() if m["status"] == TRAINED]
    seen = [(rm, s) for rm in trained for s in manifests[rm]["train"]["splits"] if s in e["splits"]]
    if seen:   # a policy judged on the questions it was trained on says nothing about the RM
        raise ConfigError(f"rl.eval.splits: '{seen[0][1]}' is also a split '{seen[0][0]}' was trained on "
                          "(rl.train.splits); evaluate on held-out questions")
    base, kwargs = pol.base_folder(p["policy"], res.cache_dir)
    rows, stats = [], {}
    fix_threads()   # greedy decoding's float sums, like training's, depend on the thread count
    for name in [BASELINE, *trained]:
        folder = base
        if name != BASELINE:   # rebuilt under the cache, named by content: the same bytes, the same cached calls
            ckpt = inputs["policies"][name]
            folder = str(pol.materialise(base, kwargs, ckpt, res.cache_dir / "rl" / f"policy-{tree_hash([ckpt])[:16]}"))
        llm = make_llm({"backend": "transformers", "model": folder}, res.cache_dir / "llm_calls.sqlite")
        rows += answer(llm, name, questions, prompts, e["max_tokens"], seed)
        stats[f"llm:{name}"] = llm.stats.as_dict()
        if folder != base:
            shutil.rmtree(folder, ignore_errors=True)   # ~0.5 GB each; rebuilt in seconds when needed
    judged = judge_answers(rows, {q["id"]: q for q in questions}, judge)
    lines = [BASELINE, *trained]
    table = summarise(rows, lines, manifests, int(e["bootstrap"]), float(e["ci"]), seed)
    write_table(rows, out["answers"], "rl_answers")
    write_table(table, out["eval"], "rl_eval")
    keep = ("algorithm", "mean_score", "ci_low", "ci_high", "gain_over_baseline", "scored", "invalid_answers",
            "reward_failures")
    metrics = {"judge": judge.identity(), "base": base_id, "questions": len(questions),
               "policies": {r["rm"]: {k: r[k] for k in keep} for r in table},
               "not_trained": {rm: {"status": m["status"], "reason": m.get("reason")}
                               for rm, m in manifests.items() if m["status"] != TRAINED},
               "run": {"seconds": round(time.perf_counter() - start, 1), "judged_answers": judged, **stats,
                       **res.stats()}}
    write_metrics(metrics, out["metrics"])
    plot(table, float(e["ci"]), out["plot"])
    return metrics
