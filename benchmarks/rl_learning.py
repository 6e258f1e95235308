"""Does RL on the embedded default learn? The params.yaml policy and rl settings (SmolLM2-135M, GRPO on the
top layers), trained against a reward the policy can learn on CPU, then judged like the main job's rl_eval.

One project (the bundled sample, bm25 profiles) in a temp folder; in this process:
  train    rl_train for --rm: per update the mean reward; the learning figure = the mean reward of the
           last quarter of the updates minus the first quarter's, with a 95% bootstrap CI over rollouts
  eval     rl_eval of the trained policy and the untrained baseline (greedy by default): how many of the
           answers differ, their mean length, and the judge's gain with its paired CI
Prints wall and CPU seconds of each part (CPU: this process, all threads). On a shared machine the wall
time inflates with the others' load; the CPU seconds much less.

Default --rm length-shorter: SmolLM2 overshoots any length it is asked for, so its answers hit
rl.train.response_length from the first update and length-longer has nothing left to reward (measured:
flat at the cap); ending earlier is learnable. The learning figure's CI must exclude 0 for the settings
to count as learning.

    python benchmarks/rl_learning.py [--rm length-shorter] [--updates 12] [--eval-per-domain 3]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def clock():
    return time.perf_counter(), time.process_time()


def since(t) -> str:
    wall, cpu = time.perf_counter() - t[0], time.process_time() - t[1]
    return f"wall {wall:6.1f} s   cpu {cpu:6.1f} s"


def main() -> None:
    import yaml

    from rl_cost import build
    from tasks.core import layout

    ap = argparse.ArgumentParser()
    ap.add_argument("--rm", default="length-shorter")
    ap.add_argument("--updates", type=int, default=None, help="override rl.train.updates")
    ap.add_argument("--eval-per-domain", type=int, default=3, help="test questions per domain judged (rl.eval)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rl-learning-") as tmp:
        root, t0 = Path(tmp), clock()
        build(root)
        params = yaml.safe_load((root / "params.yaml").read_text())
        params["rl"]["rms"] = [a.rm]
        params["rl"]["eval"]["questions_limit"] = a.eval_per_domain
        if a.updates:
            params["rl"]["train"]["updates"] = a.updates
        t = params["rl"]["train"]
        print(f"set-up (ingest, bm25 profiles): {since(t0)}")
        print(f"rl settings: {params['rl']['algorithm']}, {t['updates']} updates x {t['batch_size']} rollouts x "
              f"{t['response_length']} tokens, lr {t['actor_lr']} ({t['lr_schedule']}), top {t['train_layers']} "
              f"layers, reward {a.rm}", flush=True)
        inputs = {"questions": str(root / layout.INGEST["questions"]),
                  "ranked_profile": str(root / layout.PROFILES["ranked_profile"]),
                  "profile_context": str(root / layout.PROFILES["profile_context"]),
                  "inferred_rubrics": str(root / layout.RUBRICS["inferred_rubrics"])}
        from tasks.downstream.rl import evaluate, train

        t1 = clock()
        out = {k: str(root / v) for k, v in layout.rl_train(a.rm).items()}
        m = train.run(params, a.rm, inputs, out)
        import csv

        rows = list(csv.DictReader(open(out["plot_data"])))
        print(f"train: {since(t1)}  ({m['optimizer_steps']} optimizer steps)")
        print("reward mean per update: " + " ".join(f"{float(r['reward_mean']):.2f}" for r in rows))
        ch = m["reward_change"]["all"]
        print(f"LEARNING: reward mean first {ch['window_updates']} update(s) {ch['first']:.3f} -> last "
              f"{ch['window_updates']} {ch['last']:.3f}: change {ch['change']:+.3f} "
              f"[{ch['ci_low']:+.3f}, {ch['ci_high']:+.3f}] ({ch['ci']:.0%} CI over {ch['rollouts']} rollouts); "
              f"CI excludes 0: {'yes' if ch['excludes_zero'] else 'NO'}", flush=True)

        t2 = clock()
        ev = {k: str(root / v) for k, v in layout.RL_EVAL.items()}
        em = evaluate.run(params, {**inputs, "policies": {a.rm: out["policy"]}}, ev)
        import pyarrow.parquet as pq

        answers = pq.read_table(ev["answers"]).to_pylist()
        base = {r["question_id"]: r for r in answers if r["baseline"]}
        mine = [r for r in answers if not r["baseline"]]
        differ = sum((r["text"] or "") != (base[r["question_id"]]["text"] or "") for r in mine)
        words = lambda rs: sum(len((r["text"] or "").split()) for r in rs) / max(len(rs), 1)  # noqa: E731
        pol, bl = em["policies"][a.rm], em["policies"][evaluate.BASELINE]
        print(f"eval: {since(t2)}  ({em['decoding']}, {em['questions']} test questions)")
        print(f"ANSWERS: {differ} of {len(mine)} trained answers differ from the baseline's; mean words "
              f"{words(list(base.values())):.1f} (baseline) -> {words(mine):.1f} (trained); invalid "
              f"{bl['invalid_answers']} -> {pol['invalid_answers']}")
        print(f"judge score {bl['mean_score']:.3f} (baseline) -> {pol['mean_score']:.3f}: gain "
              f"{pol['gain_over_baseline']:+.3f} [{pol['gain_ci_low']:+.3f}, {pol['gain_ci_high']:+.3f}] "
              "(paired CI over questions; an empty answer scores 0)")
        for q in sorted(base)[:2]:
            trained = next(r for r in mine if r["question_id"] == q)
            print(f"  {q}: baseline {base[q]['text']!r}\n  {' ' * len(q)}  trained  {trained['text']!r}")
        print(f"total: {since(t0)}")


if __name__ == "__main__":
    main()
