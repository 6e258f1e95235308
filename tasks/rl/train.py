"""rl_train for one RM: the policy trained with that RM as its only reward -> data/rl/policies/<rm>/,
metrics/rl_train/<rm>.json, plots/rl_train/<rm>.csv + .png (per step: reward mean/std, failures, KL,
entropy). Prompts are the train split's questions with the user's top posts (the BoN policy prompt
code), never the rubric or narrative. An RM that rl.rms leaves out, or that cannot score one answer
alone, gets the same files with status "not selected" / "not RL-capable", so the foreach stays whole."""
from __future__ import annotations

import csv
import io
import shutil
import tempfile
import time
from pathlib import Path

from tasks.artifacts import replace_dir, write_text
from tasks.errors import ConfigError, did_you_mean
from tasks.rl import NOT_CAPABLE, NOT_SELECTED, TRAINED, TRAIN_PARAMS, rl_params

STEP_COLUMNS = ("step", "rollouts", "reward_mean", "reward_std", "reward_failures", "kl", "entropy")


def selection(p: dict, rm: str, rms: dict) -> bool:
    """Whether rl.rms (null = every RM) selects `rm`; every listed name must be an RM in scoring.rms."""
    if p["rms"] is None:
        return True
    for name in p["rms"]:
        if name not in rms:
            raise ConfigError(f"rl.rms: {did_you_mean(name, rms)}")
    return rm in p["rms"]


def train_prompts(inputs: dict, p: dict) -> tuple[list[dict], list[list[dict]]]:
    from tasks.artifacts import read_table
    from tasks.bon.sample import pick_questions, policy_prompts

    t = p["train"]
    everything = read_table(inputs["questions"], "questions").to_pylist()
    questions = pick_questions(everything, {"splits": t["splits"], "domains": None, "questions_limit": t["questions_limit"]})
    if not questions:   # e.g. the paper setting: the released benchmark is test-only
        held = ", ".join(sorted({q["split"] for q in everything})) or "none"
        raise ConfigError(f"rl.train.splits: no questions of split(s) {', '.join(t['splits'])} in {inputs['questions']} "
                          f"(it holds: {held}); RL trains on questions the benchmark does not test: ingest a train "
                          "split (ingest.splits; the release trains PPO on LaMP-QA's train questions) or set rl.rms: []")
    ranked = read_table(inputs["ranked_profile"], "ranked_profile").to_pylist()
    return questions, policy_prompts(questions, ranked, p)


def train_policy(reward, questions, messages, p: dict, seed: int, cache_dir) -> tuple[dict, list[dict], int, float]:
    """Train; return (trained parameters, trl's per-step logs, number of trained parameters, seconds in trl)."""
    from tasks.determinism import deterministic
    from tasks.rl import policy as pol
    from tasks.rl import trainers

    t = p["train"]
    if int(t["batch_size"]) % int(t["micro_batch_size"]):
        raise ConfigError("rl.train.batch_size must be a multiple of rl.train.micro_batch_size")
    folder, kwargs = pol.base_folder(p["policy"], cache_dir)
    qids = [q["id"] for q in questions]
    with tempfile.TemporaryDirectory(prefix="rl_train-") as work, deterministic(seed):
        lm = pol.load_policy(folder, kwargs)
        n_trained = pol.select_trainable(lm, t["train_layers"])
        tok, prompt_ids = trainers.training_tokenizer(folder, kwargs, messages)
        if p["algorithm"] == "ppo":
            value = pol.load_policy(folder, kwargs, value_head=True)
            pol.select_trainable(value, t["train_layers"], head="score")
            trainer = trainers.ppo(lm, value, tok, prompt_ids, qids, reward, t, seed, work)
        else:
            trainer = trainers.group_relative(p["algorithm"], lm, tok, messages, qids, reward, t, seed, work)
        start = time.perf_counter()
        trainer.train()
        return pol.trained_state(lm), trainers.step_logs(trainer), n_trained, time.perf_counter() - start


def step_rows(reward, logs: list[dict]) -> list[dict]:
    rows = []
    for i, s in enumerate(reward.steps):
        log = logs[i] if i < len(logs) else {}
        rows.append({"step": i + 1, "rollouts": s.rollouts, "reward_mean": _r6(s.mean), "reward_std": _r6(s.std),
                     "reward_failures": s.failures, "kl": _r6(log.get("kl")), "entropy": _r6(log.get("entropy"))})
    return rows


def _r6(x):
    return None if x is None else round(float(x), 6)


def write_steps(rows: list[dict], path) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=STEP_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows({k: ("" if r[k] is None else r[k]) for k in STEP_COLUMNS} for r in rows)
    write_text(buf.getvalue(), path)


def plot_steps(rows: list[dict], title: str, path) -> None:
    from tasks.plots import plt, save

    fig, axes = plt.subplots(1, 3, figsize=(10, 2.8), layout="constrained")
    steps = [r["step"] for r in rows]
    for ax, key, label in zip(axes, ("reward_mean", "kl", "entropy"), ("reward (mean ± std)", "KL", "entropy")):
        pts = [(s, r[key]) for s, r in zip(steps, rows) if r[key] is not None]
        if pts:
            ax.plot(*zip(*pts), marker="o", ms=3)
        if key == "reward_mean" and pts:
            sd = [(r["step"], r["reward_mean"], r["reward_std"] or 0.0) for r in rows if r["reward_mean"] is not None]
            ax.fill_between([s for s, _, _ in sd], [m - d for _, m, d in sd], [m + d for _, m, d in sd], alpha=0.2)
        if not pts:
            ax.text(0.5, 0.5, "not logged" if rows else "no training", ha="center", va="center",
                    transform=ax.transAxes)
        ax.set_xlabel("update")
        ax.set_title(label, fontsize=9)
    fig.suptitle(title, fontsize=10)
    save(fig, path)


def publish(manifest: dict, state: dict | None, target: Path) -> None:
    from tasks.rl.policy import write_checkpoint

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    tmp.chmod(0o755)
    try:
        write_checkpoint(tmp, manifest, state)
        replace_dir(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(params: dict, rm_name: str, inputs: dict, out: dict) -> dict:
    from tasks.artifacts import tree_hash
    from tasks.resources import Resources
    from tasks.rl.policy import base_identity
    from tasks.rl.reward import RewardFailures, RMReward, rl_capable
    from tasks.rms.registry import make_rm
    from tasks.runlog import record, write_metrics
    from tasks.strategies import check, load_contexts

    start = time.perf_counter()
    p, rms, seed = rl_params(params, TRAIN_PARAMS), params["scoring"]["rms"], int(params["common"]["seed"])
    if rm_name not in rms:
        raise ConfigError(f"scoring.rms: {did_you_mean(rm_name, rms)}")
    (strategy,) = check([p["strategy"]])
    res, selected = Resources(params), selection(p, rm_name, rms)
    # an RM left out is not even built (its entry is the score stage's to check): the record costs nothing
    rm = make_rm(rm_name, rms[rm_name], res) if selected else None
    capable = rl_capable(rm) if selected else None
    status = TRAINED if selected and capable else NOT_SELECTED if not selected else NOT_CAPABLE
    reason = {NOT_SELECTED: f"rl.rms does not list '{rm_name}'",
              NOT_CAPABLE: f"{rm.kind if rm else ''}: pairwise-only, no score for an answer on its own"}.get(status)
    manifest = {"format": "prbench-rl-policy/1", "rm": rm_name, "kind": rms[rm_name].get("kind"), "status": status,
                "reason": reason}
    state, rows, counters = None, [], {}
    if status == TRAINED:
        questions, messages = train_prompts(inputs, p)
        context = load_contexts(strategy, inputs["questions"], inputs["profile_context"], inputs.get("inferred_rubrics"))
        reward = RMReward(rm, {q["id"]: q["question"] for q in questions}, context, p["max_reward_failures"])
        try:
            state, logs, n_trained, loop = train_policy(reward, questions, messages, p, seed, res.cache_dir)
        except RewardFailures:
            record(out["metrics"], {"reward_failures": reward.failures, "steps": len(reward.steps),
                                    "errors": [e for s in reward.steps for e in s.errors][:5], **res.stats()})
            raise
        rows = step_rows(reward, logs)
        counters = {"seconds": round(time.perf_counter() - start, 1), "train_loop_seconds": round(loop, 1),
                    "seconds_per_update": round(loop / max(len(rows), 1), 2)}
        manifest.update(algorithm=p["algorithm"], base=base_identity(p["policy"]), strategy=strategy, seed=seed,
                        identity=rm.identity(), train_questions=len(questions), trained_parameters=n_trained,
                        updates=len(rows), rollouts=sum(r["rollouts"] for r in rows),
                        reward_failures=reward.failures, train=p["train"])
    publish(manifest, state, Path(out["policy"]))
    write_steps(rows, out["plot_data"])
    plot_steps(rows, f"RL with {rm_name} as reward ({p['algorithm']})" if rows else f"{rm_name}: {status}",
               out["plot"])
    means = [r["reward_mean"] for r in rows if r["reward_mean"] is not None]
    metrics = {**{k: v for k, v in manifest.items() if k not in ("format", "train")},
               "rl_capable": capable, "selected": selected, "reward_failures": manifest.get("reward_failures"),
               "reward_failures_per_step": [r["reward_failures"] for r in rows],
               "reward_mean_first": means[0] if means else None, "reward_mean_last": means[-1] if means else None,
               "checkpoint": tree_hash([out["policy"]]), "run": {**counters, **res.stats()}}
    write_metrics(metrics, out["metrics"])
    return metrics
