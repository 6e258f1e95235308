"""rl_train for one RM: the policy trained with that RM as its only reward -> data/rl/policies/<rm>/,
metrics/rl_train/<rm>.json, plots/rl_train/<rm>.csv + .png (per update: reward mean/std, failures, KL,
entropy). Prompts are the train split's questions with the user's top posts (the BoN policy prompt
code), never the rubric or narrative. One pooled policy, or one per domain (rl.train.per_domain, as the
release). The metrics say whether the policy learned: the reward of the last updates against the
first, with a CI (reward.reward_change). Only the RMs rl.rms lists have the stage (its DVC foreach); one
of them that cannot score one answer alone gets the same files with status "not RL-capable"."""
from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from pathlib import Path

from tasks.core.artifacts import replace_dir
from tasks.core.errors import ConfigError
from tasks.core.progress import bar as progress_bar
from tasks.downstream.rl import NOT_CAPABLE, TRAINED, TRAIN_PARAMS, rl_params
from tasks.downstream.rl.algorithms import ALGORITHMS, Job
from tasks.downstream.rl.curves import STEP_COLUMNS, plot_steps, step_rows, write_steps  # noqa: F401


def train_prompts(inputs: dict, p: dict, fidelity: str = "corrected") -> tuple[list[dict], list[list[dict]]]:
    from tasks.core.artifacts import read_table
    from tasks.downstream.bon.sample import pick_questions, policy_prompts

    t = p["train"]
    everything = read_table(inputs["questions"], "questions").to_pylist()
    questions = pick_questions(everything, {"splits": t["splits"], "domains": None, "questions_limit": t["questions_limit"]})
    if not questions:   # e.g. the paper setting: the released benchmark is test-only
        held = ", ".join(sorted({q["split"] for q in everything})) or "none"
        raise ConfigError(f"rl.train.splits: no questions of split(s) {', '.join(t['splits'])} in {inputs['questions']} "
                          f"(it holds: {held}); RL trains on questions the benchmark does not test: ingest a train "
                          "split (ingest.splits; the release trains PPO on LaMP-QA's train questions) or set rl.rms: []")
    ranked = read_table(inputs["ranked_profile"], "ranked_profile").to_pylist()
    return questions, policy_prompts(questions, ranked, p, fidelity)


def train_policy(reward, questions, messages, p: dict, seed: int, cache_dir) -> tuple[dict, list[dict], dict, float]:
    """Train; return (trained parameters, trl's per-update logs, facts about the run, seconds in trl).
    Facts: trained parameters, optimizer steps (batch / mini_batch per update) and the learning rate trl
    logged first and last (constant, or decaying under lr_schedule linear)."""
    from tasks.core.determinism import deterministic
    from tasks.downstream.rl import policy as pol
    from tasks.downstream.rl import trainers

    t = p["train"]
    trainers.sizes(t)   # the batch sizes, schedule and algorithm, checked before any model loads
    build = ALGORITHMS.lookup(p["algorithm"], "rl.algorithm")
    folder, kwargs = pol.base_folder(p["policy"], cache_dir)
    qids = [q["id"] for q in questions]
    with tempfile.TemporaryDirectory(prefix="rl_train-") as work, deterministic(seed):
        lm = pol.load_policy(folder, kwargs)
        n_trained = pol.select_trainable(lm, t["train_layers"])
        tok, prompt_ids = trainers.training_tokenizer(folder, kwargs, messages)
        trainer = build(Job(lm, folder, kwargs, tok, prompt_ids, messages, qids, reward, t, seed, work))
        start, steps = time.perf_counter(), []
        from torch.optim.optimizer import register_optimizer_step_post_hook

        # accelerate's wrapper is an Optimizer too and calls the real one: count the real one's steps only
        micro, mini, batch = trainers.sizes(t)
        bar = progress_bar(desc="rl_train", unit="step", total=int(t["updates"]) * (batch // mini) if t.get("updates") else None)

        def step(opt, *_):
            if not hasattr(opt, "optimizer"):
                steps.append(1)
                bar.update(1)

        hook = register_optimizer_step_post_hook(step)
        try:
            with warnings.catch_warnings():
                # trl 1.12 (pinned: the last release with PPO) reads `is_gradient_checkpointing`, which transformers 5
                # deprecates: nothing of ours to change, and a clean run prints no warning
                warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
                trainer.train()
        finally:
            hook.remove()
            bar.close()
        lrs = [h.get("lr", h.get("learning_rate")) for h in trainer.state.log_history
               if h.get("lr", h.get("learning_rate")) is not None]
        facts = {"trained_parameters": n_trained, "optimizer_steps": len(steps),
                 "learning_rate": {"first": float(lrs[0]), "last": float(lrs[-1])} if lrs else None}
        return pol.trained_state(lm), trainers.step_logs(trainer, batch // mini), facts, time.perf_counter() - start


def publish(manifest: dict, states: dict | None, target: Path) -> None:
    from tasks.downstream.rl.policy import write_checkpoint

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    tmp.chmod(0o755)
    try:
        write_checkpoint(tmp, manifest, states)
        replace_dir(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def domain_groups(questions: list[dict], messages: list, per_domain: bool) -> list[tuple[str | None, list, list]]:
    """[(None, all)] for one pooled policy; [(domain, its questions, its prompts), ...] per domain."""
    if not per_domain:
        return [(None, questions, messages)]
    out = {}
    for q, m in zip(questions, messages):
        out.setdefault(q["domain"], ([], []))
        out[q["domain"]][0].append(q)
        out[q["domain"]][1].append(m)
    return [(d, qs, ms) for d, (qs, ms) in sorted(out.items())]


def seeds_of(p: dict, seed: int) -> list[int]:
    """The training seeds: common.seed, then +1, ... (rl.seeds of them); the first is the one-seed run's."""
    return [seed + i for i in range(int(p.get("seeds") or 1))]


def _train(p: dict, rm, strategy: str, seed: int, res, inputs: dict, out: dict, manifest: dict, start: float):
    """Train the policy (one per domain under train.per_domain, one per seed of rl.seeds) with `rm` as reward;
    `manifest` gains what was done. (states {(domain, seed index)}, step rows, time counters, reward change)."""
    from tasks.core.runlog import record
    from tasks.downstream.rl.policy import base_identity
    from tasks.downstream.rl.reward import RewardFailures, RMReward
    from tasks.models.strategies import load_contexts

    questions, messages = train_prompts(inputs, p, res.fidelity)
    context = load_contexts(strategy, inputs["questions"], inputs["profile_context"], inputs.get("inferred_rubrics"),
                            fidelity=res.fidelity)
    per_domain, states, loop, facts, rows, learned, failures = bool(p["train"].get("per_domain")), {}, 0.0, {}, [], {}, []
    seeds = seeds_of(p, seed)
    for index, s in enumerate(seeds):
        reward = RMReward(rm, {q["id"]: q["question"] for q in questions}, context, p["max_reward_failures"],
                          fidelity=res.fidelity)
        try:
            loop += _train_seed(reward, questions, messages, p, (index, s, len(seeds) > 1), res, manifest["rm"],
                                states, facts, rows, learned)
        except RewardFailures:
            record(out["metrics"], {"reward_failures": sum(failures) + reward.failures, "steps": len(reward.steps),
                                    "errors": [e for st in reward.steps for e in st.errors][:5], **res.stats()})
            raise
        failures.append(reward.failures)
    counters = {"seconds": round(time.perf_counter() - start, 1), "train_loop_seconds": round(loop, 1),
                "seconds_per_update": round(loop / max(len(rows), 1), 2)}
    manifest.update(algorithm=p["algorithm"], base=base_identity(p["policy"]), strategy=strategy, seed=seed,
                    seeds=seeds, identity=rm.identity(), train_questions=len(questions),
                    trained_parameters=next(iter(facts.values()))["trained_parameters"],
                    optimizer_steps=sum(f["optimizer_steps"] for f in facts.values()),
                    learning_rate={d: f["learning_rate"] for d, f in facts.items()},
                    updates=len(rows), rollouts=sum(r["rollouts"] for r in rows),
                    reward_failures=sum(failures), reward_failures_per_seed=failures, per_domain=per_domain,
                    domains={d: len(qs) for d, qs, _ in domain_groups(questions, messages, True)} if per_domain
                    else None,
                    planner_failed_prompts=sum(q["id"] in context.failed for q in questions), train=p["train"])
    return states, rows, counters, learned


def _train_seed(reward, questions, messages, p: dict, which: tuple, res, rm_name: str, states, facts, rows,
                learned) -> float:
    """One seed's policies (one per domain, or pooled), filled into the run's records; the seconds in trl.
    A seed after the first labels its records `<domain>@seed<s>` (the first keeps the one-seed names)."""
    from tasks.core.determinism import stable_rng
    from tasks.downstream.rl.reward import reward_change

    index, seed, several = which
    loop = 0.0
    for domain, qs, ms in domain_groups(questions, messages, bool(p["train"].get("per_domain"))):
        first, label = len(reward.steps), (domain or "all") + (f"@seed{seed}" if index else "")
        state, logs, facts[label], seconds = train_policy(reward, qs, ms, p, seed, res.cache_dir)
        states[(domain, index)], loop = state, loop + seconds
        rows += step_rows(reward.steps[first:], logs, domain, seed if several else None)
        learned[label] = reward_change(reward.steps[first:], stable_rng(seed, "rl_train", rm_name, domain or "all"))
    return loop


def run(params: dict, rm_name: str, inputs: dict, out: dict) -> dict:
    from tasks.core.artifacts import tree_hash
    from tasks.models.resources import Resources
    from tasks.downstream.rl.reward import rl_capable
    from tasks.models.rms.registry import make_rm
    from tasks.core.runlog import write_metrics
    from tasks.models.strategies import check_benchmark_strategy, check_planner_splits

    start = time.perf_counter()
    p, rms, seed = rl_params(params, TRAIN_PARAMS), params["scoring"]["rms"], int(params["common"]["seed"])
    strategy = check_benchmark_strategy(p["strategy"], "rl.strategy")
    res = Resources(params)
    check_planner_splits(strategy, p["train"]["splits"], params, "rl.strategy")
    rm = make_rm(rm_name, rms[rm_name], res)
    capable = rl_capable(rm)
    status = TRAINED if capable else NOT_CAPABLE
    reason = None if capable else f"{rm.kind}: pairwise-only, no score for an answer on its own"
    manifest = {"format": "prbench-rl-policy/1", "rm": rm_name, "kind": rms[rm_name].get("kind"), "status": status,
                "reason": reason}
    states, rows, counters, learned = None, [], {}, {}
    if status == TRAINED:
        states, rows, counters, learned = _train(p, rm, strategy, seed, res, inputs, out, manifest, start)
    publish(manifest, states, Path(out["policy"]))
    write_steps(rows, out["plot_data"])
    plot_steps(rows, f"RL with {rm_name} as reward ({p['algorithm']})" if rows else f"{rm_name}: {status}",
               out["plot"])
    means = [r["reward_mean"] for r in rows if r["reward_mean"] is not None]
    metrics = {**{k: v for k, v in manifest.items() if k not in ("format", "train")},
               "rl_capable": capable, "reward_failures": manifest.get("reward_failures"),
               "reward_failures_per_step": [r["reward_failures"] for r in rows],
               "reward_mean_first": means[0] if means else None, "reward_mean_last": means[-1] if means else None,
               "reward_change": learned or None,
               "checkpoint": tree_hash([out["policy"]]), "run": {**counters, **res.stats()}}
    write_metrics(metrics, out["metrics"])
    return metrics


# --- the stage as flows/stage.py runs it ------------------------------------------------------------
STAGE_LOG_PRINTS = False   # as train_rm's: dill's captured disassembly would land in the log
