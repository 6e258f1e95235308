"""`prbench run --jobs 2` against serial `prbench run` on the same work (issue 46): a clone of the committed run
(its outputs checked out from a DVC cache, or the pipeline run once first, uncounted) gains `--extra` cheap RMs
(`kind: random`, seeded, no model) in `scoring.rms`; two copies of it then run the stages that adds, one
serially and one with `--jobs 2`, one after the other. Prints both times and the ratio, and whether dvc.lock and
every output file are byte-identical. Goal: ratio >= 1.6 on 2 cores with 100 extra RMs; exit 1 when missed or
when any byte differs.

    python benchmarks/parallel_stages.py [--extra 100] [--jobs 2] [--rev HEAD] [--cache DIR] [--keep]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.edit_rerun import sh  # noqa: E402
from benchmarks.main_job import run_logged  # noqa: E402

GOAL = 1.6


def add_rms(clone: Path, extra: int) -> None:
    path = clone / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params["scoring"]["rms"].update({f"random-{i:03d}": {"kind": "random"} for i in range(extra)})
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def outputs(clone: Path) -> dict[str, str]:
    """sha256 of every file under every output dvc.lock records."""
    lock = yaml.safe_load((clone / "dvc.lock").read_text(encoding="utf-8"))
    got = {}
    for entry in lock["stages"].values():
        for out in entry.get("outs", []):
            p = clone / out["path"]
            for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
                if f.is_file():
                    got[str(f.relative_to(clone))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=str(ROOT))
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cache", default=str(ROOT / ".dvc" / "cache"))
    ap.add_argument("--extra", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="prbench-jobs-"))
    base = tmp / "base"
    sh(["git", "clone", "-q", args.repo, str(base)], tmp)
    sh(["git", "checkout", "-q", args.rev], base)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "PRBENCH_"))}
    env.update(PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", DVC_NO_ANALYTICS="1", OMP_WAIT_POLICY="PASSIVE",
               PATH=str(Path(args.python).parent) + os.pathsep + env.get("PATH", ""))
    dvc = [str(Path(args.python).parent / "dvc")]
    if Path(args.cache).is_dir():
        sh([*dvc, "cache", "dir", "--local", args.cache], base, env)
        subprocess.run([*dvc, "checkout", "-q"], cwd=base, env=env, capture_output=True)
    cmd = [args.python, "-m", "flows.cli", "run"]
    if json.loads(sh([*dvc, "status", "--json"], base, env) or "{}"):
        print("the clone's outputs are not checked out: running the pipeline once first (not counted)", flush=True)
        rc, secs, _ = run_logged(cmd, base, {**env, "PREFECT_HOME": str(base / ".prefect")}, tmp / "first.log")
        print(f"first run: rc {rc}, {secs:.0f} s")
        if rc:
            return 1
    add_rms(base, args.extra)
    times = {}
    for name, jobs in (("serial", 1), (f"--jobs {args.jobs}", args.jobs)):
        clone = tmp / ("serial" if jobs == 1 else "jobs")
        shutil.copytree(base, clone, symlinks=True)
        run_env = {**env, "PREFECT_HOME": str(clone / ".prefect")}
        load = os.getloadavg()[0]
        rc, secs, per = run_logged([*cmd, *(["--jobs", str(jobs)] if jobs > 1 else [])], clone, run_env,
                                   tmp / f"{clone.name}.log")
        print(f"{name}: {secs:.1f} s, {len(per)} stage(s) ran, rc {rc} (load average {load:.2f} at the start)",
              flush=True)
        if rc:
            print(f"log: {tmp / (clone.name + '.log')}")
            return 1
        times[name] = secs
    serial, par = tmp / "serial", tmp / "jobs"
    same_lock = (serial / "dvc.lock").read_bytes() == (par / "dvc.lock").read_bytes()
    a, b = outputs(serial), outputs(par)
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    ratio = times["serial"] / times[f"--jobs {args.jobs}"]
    print(f"speed-up of --jobs {args.jobs} over serial with {args.extra} extra RMs: {ratio:.2f}x (goal >= {GOAL})")
    print(f"dvc.lock byte-identical: {same_lock}; output files compared: {len(a)}, differing: {len(differ)}"
          + (f" ({', '.join(differ[:5])})" if differ else ""))
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept: {tmp}")
    return 0 if ratio >= GOAL and same_lock and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
