"""What does downstream RL cost per update and per eval answer, so rl.* defaults can be sized?

One project (the bundled sample, bm25 profiles), the params.yaml policy and rl settings; each
measurement is a fresh process (imports and model loads included, as a DVC stage pays them):
  convert   the GGUF -> plain-folder conversion (once per cache: the first rl stage of a cold run)
  train U   rl_train for --rm with rl.train.updates = U, for U = 1 and U = --long (3)
  eval      rl_eval of that --long-update policy and the untrained baseline (the LLM cache starts cold)
Prints wall and CPU seconds for each, then per update = (tN - t1) / (N - 1), the fixed cost of a train
stage = t1 - per update, and per eval answer. CPU seconds include spin-waiting of torch's threads
when the box is loaded: on a shared machine read wall on an idle box, CPU as an upper bound.

    python benchmarks/rl_cost.py [--rm length-longer] [--threads 2] [--algorithm ppo] [--kl-coef 0] [--long 3]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def child(kind: str, root: Path, rm: str, updates: int, algorithm: str, kl_coef: float | None) -> None:
    import yaml

    from tasks.core import layout

    params = yaml.safe_load((root / "params.yaml").read_text())
    params["rl"].update(algorithm=algorithm, rms=[rm])
    params["rl"]["train"]["updates"] = updates
    if kl_coef is not None:   # grpo/rloo with beta 0 load no reference model
        params["rl"]["train"]["kl_coef"] = kl_coef
    inputs = {"questions": str(root / layout.INGEST["questions"]),
              "ranked_profile": str(root / layout.PROFILES["ranked_profile"]),
              "profile_context": str(root / layout.PROFILES["profile_context"]),
              "inferred_rubrics": str(root / layout.RUBRICS["inferred_rubrics"])}
    run_dir = root / f"u{updates}"
    if kind == "convert":
        from tasks.downstream.rl.policy import base_folder

        base_folder(params["rl"]["policy"], params["common"]["cache_dir"])
    elif kind == "train":
        from tasks.downstream.rl import train

        train.run(params, rm, inputs, {k: str(run_dir / v) for k, v in layout.rl_train(rm).items()})
    else:
        from tasks.downstream.rl import evaluate

        ins = {**inputs, "policies": {rm: str(run_dir / layout.rl_train(rm)["policy"])}}
        evaluate.run(params, ins, {k: str(run_dir / v) for k, v in layout.RL_EVAL.items()})


def timed(args: list[str], env: dict) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stdout


def build(root: Path) -> None:
    import yaml

    from tasks.stages import ingest, profiles
    from tasks.core import layout

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["common"]["cache_dir"] = str(root / "cache")
    params["ingest"]["path"] = str(ROOT / params["ingest"]["path"])
    params["profiles"]["retriever"] = "bm25"
    params["rl"]["prompt"] = str(ROOT / params["rl"]["prompt"])
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    o_ing = {k: str(root / v) for k, v in layout.INGEST.items()}
    ingest.run(params["ingest"], o_ing, params["common"]["seed"])
    profiles.run(params["profiles"], params["common"], {"questions": o_ing["questions"], "profiles": o_ing["profiles"]},
                 {k: str(root / v) for k, v in layout.PROFILES.items()})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rm", default="length-longer")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--algorithm", default="ppo")
    ap.add_argument("--kl-coef", type=float, default=None, help="override rl.train.kl_coef")
    ap.add_argument("--long", type=int, default=3, help="the longer run's updates (the short one does 1)")
    ap.add_argument("--child", nargs=3, metavar=("KIND", "ROOT", "UPDATES"))
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], Path(a.child[1]), a.rm, int(a.child[2]), a.algorithm, a.kl_coef)
    with tempfile.TemporaryDirectory(prefix="rl-cost-") as tmp:
        root = Path(tmp)
        build(root)
        env = {**os.environ, "PRBENCH_TORCH_THREADS": str(a.threads), "TRL_EXPERIMENTAL_SILENCE": "1"}
        common = ["--rm", a.rm, "--algorithm", a.algorithm, *(["--kl-coef", str(a.kl_coef)] if a.kl_coef is not None else [])]
        res = {name: timed([*common, "--child", kind, str(root), str(u)], env)[:2]
               for name, kind, u in [("convert", "convert", 0), ("train 1", "train", 1), ("train N", "train", a.long),
                                     ("eval", "eval", a.long)]}
        import yaml

        from tasks.core.artifacts import read_table
        from tasks.downstream.bon.sample import pick_questions

        params = yaml.safe_load((root / "params.yaml").read_text())["rl"]

        n_q = len(pick_questions(read_table(root / "data/ingest/questions.parquet", "questions").to_pylist(),
                                 {"splits": params["eval"]["splits"], "domains": None,
                                  "questions_limit": params["eval"]["questions_limit"]}))
        for name, (wall, cpu) in res.items():
            print(f"{name:8s} wall {wall:7.1f} s   cpu {cpu:7.1f} s")
        for i, label in enumerate(("wall", "cpu")):
            per_update = (res["train N"][i] - res["train 1"][i]) / (a.long - 1)
            print(f"{label}: per update {per_update:.1f} s ({params['train']['batch_size']} rollouts x "
                  f"{params['train']['response_length']} tokens), train stage fixed {res['train 1'][i] - per_update:.1f} s, "
                  f"eval {res['eval'][i]:.1f} s for {2 * n_q} answers ({res['eval'][i] / (2 * n_q):.1f} s per answer, "
                  f"load and judge included)")


if __name__ == "__main__":
    main()
