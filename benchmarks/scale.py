"""A leaderboard of a hundred RMs (issue 46): the cost of N extra cheap RMs (`kind: random`, seeded, no model) in
`scoring.rms`, as a table per N: stages run, `prbench run` seconds, a no-op `prbench run`, `dvc status`, dvc.lock
lines (and lines per added RM), adding one more RM; with `--jobs J` (when `prbench run` has it) the same run
again J stages at a time, and the serial/parallel ratio measured in this one run. Goals: <= 100 lock lines per
added RM, no-op and `dvc status` <= 5 s, one more RM <= 45 s, `--jobs 2` >= 1.6x serial (2 idle cores).

    python benchmarks/scale.py [--extra 0,30,100] [--lock-only] [--jobs 2] [--rev HEAD] [--cache DIR] [--keep]

--lock-only: no stage runs. Each N's project is a copy of this checkout with every stage's entry recorded by
`dvc commit` over placeholder outputs (tests/lock_synth.py): the lock's lines, `dvc status` and the no-op are
what they are after a real run of the same stages (the same deps, params and outs; a few bytes per output
hashed instead of kilobytes), in about a minute per N. Without it: a fresh `git clone` at --rev runs the
default DAG once (not counted: the cold start of benchmarks/main_job.py), then per N the RMs are added,
`prbench run` timed and its stages counted, then the no-op, `dvc status`, and one more RM. Columns a mode does
not measure print as "-". The load average is printed with the table: these are wall seconds on a shared box.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests import lock_synth  # noqa: E402

BIN = Path(sys.executable).parent
GOALS = {"noop_s": 5.0, "status_s": 5.0, "lines_per_rm": 100.0, "one_more_s": 45.0, "jobs_ratio": 1.6}


def timed(cmd: list[str], cwd: Path, repeat: int = 1) -> tuple[float, str]:
    """(median wall seconds over `repeat` runs, the last run's output); a failed run stops the benchmark."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "HF_HUB_OFFLINE": "1",
           "OMP_WAIT_POLICY": "PASSIVE", "PREFECT_HOME": str(cwd / ".prefect-home")}
    times, out = [], ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        out = proc.stdout + proc.stderr
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd)} in {cwd}: rc {proc.returncode}\n{out[-3000:]}")
    return statistics.median(times), out


def stages_run(out: str) -> int:
    return len(re.findall(r"^Running stage '", out, flags=re.M))


def has_jobs() -> bool:
    """`prbench run --jobs` exists (issue 46's parallel stages): the hook the --jobs column waits for."""
    return "--jobs" in subprocess.run([str(BIN / "prbench"), "run", "--help"], capture_output=True, text=True).stdout


def quiet_checks(root: Path, row: dict, repeat: int) -> None:
    row["noop_s"], out = timed([str(BIN / "prbench"), "run"], root, repeat)
    assert "nothing to run" in out, out[-2000:]
    row["status_s"], _ = timed([str(BIN / "dvc"), "status", "-q"], root, repeat)
    row["lock_lines"] = lock_synth.lock_lines(root)


def lock_only(extras: list[int], work: Path, repeat: int) -> list[dict]:
    rows = []
    for n in extras:
        root = work / f"extra-{n}"
        lock_synth.build(root, n)
        row = {"extra": n}
        quiet_checks(root, row, repeat)
        rows.append(row)
    return rows


def clone(rev: str, dst: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dst)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=dst, check=True)
    return dst


def full(extras: list[int], work: Path, rev: str, jobs: int | None, repeat: int, cache: str | None = None) -> list[dict]:
    base = clone(rev, work / "base")
    if cache:   # the committed run's outputs from a DVC cache that holds them: only what changed since runs below
        subprocess.run([str(BIN / "dvc"), "cache", "dir", "--local", cache], cwd=base, check=True)
        subprocess.run([str(BIN / "dvc"), "checkout", "-q"], cwd=base, capture_output=True)
    print(f"scale: the default DAG once in {base} ({'from ' + cache if cache else 'cold'}, not counted) ...", flush=True)
    timed([str(BIN / "prbench"), "run"], base)
    rows, done = [], 0
    serial = base
    twin = None
    if jobs:
        twin = work / "jobs"
        shutil.copytree(base, twin, symlinks=True)
    for n in sorted(extras):
        row = {"extra": n}
        if n > done:
            for root in filter(None, (serial, twin)):
                lock_synth.add_rms(root, n - done, start=done)
            row["run_s"], out = timed([str(BIN / "prbench"), "run"], serial)
            row["stages"] = stages_run(out)
            if twin is not None:   # the same stages, J at a time, from the same state
                row["jobs_s"], _ = timed([str(BIN / "prbench"), "run", "--jobs", str(jobs)], twin)
                row["jobs_ratio"] = row["run_s"] / row["jobs_s"]
            done = n
        quiet_checks(serial, row, repeat)
        rows.append(row)
    probe = work / "one-more"   # the 101st RM, from a copy: the later N start from `done` RMs
    shutil.copytree(serial, probe, symlinks=True)
    lock_synth.add_rms(probe, 1, start=10_000)
    rows[-1]["one_more_s"], out = timed([str(BIN / "prbench"), "run"], probe)
    rows[-1]["one_more_stages"] = stages_run(out)
    return rows


def table(rows: list[dict]) -> str:
    cols = [("extra RMs", "extra", "{}"), ("stages run", "stages", "{}"), ("`prbench run`", "run_s", "{:.1f} s"),
            ("`--jobs`", "jobs_s", "{:.1f} s"), ("serial / jobs", "jobs_ratio", "{:.2f}x"),
            ("no-op `prbench run`", "noop_s", "{:.1f} s"), ("`dvc status`", "status_s", "{:.1f} s"),
            ("dvc.lock lines", "lock_lines", "{:,}"), ("+1 RM", "one_more_s", "{:.1f} s")]
    lines = ["| " + " | ".join(c[0] for c in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(fmt.format(r[k]) if k in r else "-" for _, k, fmt in cols) + " |")
    return "\n".join(lines)


def ratios(rows: list[dict]) -> list[str]:
    out = []
    first = rows[0]
    for r in rows[1:]:
        if r["extra"] > first["extra"]:
            per = (r["lock_lines"] - first["lock_lines"]) / (r["extra"] - first["extra"])
            out.append(f"dvc.lock: {per:.0f} lines per added RM ({first['extra']} -> {r['extra']}; goal <= "
                       f"{GOALS['lines_per_rm']:.0f})")
            out.append(f"no-op x{r['noop_s'] / first['noop_s']:.2f}, "
                       f"dvc status x{r['status_s'] / first['status_s']:.2f} from {first['extra']} to {r['extra']} extra RMs")
    last = rows[-1]
    out.append(f"at {last['extra']} extra RMs: no-op {last['noop_s']:.1f} s, dvc status {last['status_s']:.1f} s "
               f"(goals <= {GOALS['noop_s']:.0f} s each)")
    if "jobs_ratio" in last:
        out.append(f"--jobs: {last['jobs_ratio']:.2f}x serial (goal >= {GOALS['jobs_ratio']})")
    if "one_more_s" in last:
        out.append(f"one more RM: {last['one_more_s']:.1f} s, {last['one_more_stages']} stages "
                   f"(goal <= {GOALS['one_more_s']:.0f} s)")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", default="0,30,100", help="comma-separated numbers of extra random RMs")
    ap.add_argument("--lock-only", action="store_true", help="no stage runs: locks recorded by `dvc commit`")
    ap.add_argument("--jobs", type=int, default=2, help="the parallel run's J (0: none; skipped when "
                                                        "`prbench run` has no --jobs)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each quiet check (the median is shown)")
    ap.add_argument("--rev", default="HEAD", help="the commit a full run clones")
    ap.add_argument("--keep", action="store_true", help="keep the projects (their folder is printed)")
    ap.add_argument("--cache", default=None, help="a DVC cache holding the committed run's outputs (skips the cold run)")
    args = ap.parse_args(argv)
    extras = sorted({int(x) for x in args.extra.split(",")})
    work = Path(tempfile.mkdtemp(prefix="prbench-scale-"))
    jobs = args.jobs if args.jobs and not args.lock_only and has_jobs() else None
    if args.jobs and not args.lock_only and jobs is None:
        print("scale: `prbench run` has no --jobs here: the --jobs column stays empty", flush=True)
    try:
        rows = lock_only(extras, work, args.repeat) if args.lock_only else \
            full(extras, work, args.rev, jobs, args.repeat, args.cache)
    finally:
        if args.keep:
            print(f"scale: projects kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs; "
          f"{'locks recorded by dvc commit (no stage ran)' if args.lock_only else 'fresh clone at ' + args.rev}")
    print(table(rows))
    for line in ratios(rows):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
