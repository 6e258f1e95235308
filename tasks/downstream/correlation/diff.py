"""`prbench diff REV_A [REV_B]`: which accuracies and correlations changed between two versions of
the data, params or code (git revisions: tags, commits, branches; REV_B defaults to the workspace).
It wraps `dvc metrics diff REV_A REV_B --json`; the plots side by side are `dvc plots diff REV_A REV_B`."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tasks.core.errors import ConfigError

KINDS = ("revision", "accuracy", "downstream", "correlation", "other")   # the data read first, then what it moved


def metrics_diff(rev_a: str, rev_b: str | None = None, *, cwd=".", targets: list[str] | None = None,
                 unchanged: bool = False) -> dict:
    """dvc's JSON: {file: {flattened.key: {"old", "new", "diff"?}}}, changed metrics only unless `unchanged`
    (the compare page shows both versions whole). dvc leaves out list values (e.g. a CI as [lo, hi]).
    `targets` (default: the metrics folder, every stage's metrics file): DVC declares only the headline as
    metrics (its own views fit a screen), and reads any JSON file it is pointed at."""
    from tasks.core.layout import METRICS_DIR

    cmd = [sys.executable, "-m", "dvc", "metrics", "diff", rev_a, *([rev_b] if rev_b else []), "--json"]
    cmd += ["--all"] if unchanged else []
    cmd += ["--targets", *(targets or [METRICS_DIR])]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    if proc.returncode != 0:
        why = next((line for line in reversed(proc.stderr.splitlines()) if line.strip()), f"exit {proc.returncode}")
        raise ConfigError(f"dvc metrics diff {rev_a} {rev_b or '(workspace)'}: {why.strip()}")
    return json.loads(proc.stdout or "{}")


def kind(key: str) -> str:
    """revision (the hub dataset's commit sha a stage read), accuracy (leaderboard, correlation inputs), downstream (BoN/PPO scores per RM), correlation, other."""
    parts = key.split(".")
    if parts[0] == "revision" or parts[-1] == "revision":
        return "revision"   # the dataset commit a stage read (ingest, bench_score): why the numbers moved
    if "correlations" in parts or "comparisons" in parts:
        return "correlation"
    if parts[0] == "downstream":
        return "downstream"
    return "accuracy" if "accuracy" in parts else "other"


def diff_rows(raw: dict, all_metrics: bool = False) -> list[dict]:
    """One row per changed metric in KINDS order; `other` only with all_metrics."""
    rows = [{"kind": kind(key), "file": file, "metric": key, "old": v.get("old"), "new": v.get("new"),
             "change": v.get("diff")} for file, changed in raw.items() for key, v in changed.items()]
    rows = [r for r in rows if all_metrics or r["kind"] != "other"]
    return sorted(rows, key=lambda r: (KINDS.index(r["kind"]), r["file"], r["metric"]))


def _cell(x, signed=False) -> str:
    if x is None:
        return "-"
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return f"{x:+.4f}" if signed else f"{x:.4f}"
    return str(x)


CI_OF = ("accuracy", "value", "estimate", "mean", "score", "gain", "difference")   # the value a sibling `ci` bounds


def intervals(obj, prefix: str = "") -> dict[str, list]:
    """{flattened key: [lo, hi]} for each value whose dict holds a `ci` beside it (as dvc flattens keys)."""
    out = {}
    if isinstance(obj, dict):
        ci = obj.get("ci")
        if isinstance(ci, list) and len(ci) == 2:
            out.update({prefix + k: ci for k in CI_OF if k in obj})
        for k, v in obj.items():
            out.update(intervals(v, f"{prefix}{k}."))
    return out


def with_intervals(rows: list[dict], rev_b: str | None, cwd=".") -> list[dict]:
    """Each row with the new value's CI (where its metrics file holds one) and whether it is beyond noise."""
    from tasks.downstream.correlation.headline import beyond_noise, read_at

    cis = {f: intervals(read_at(rev_b, f, cwd)) for f in {r["file"] for r in rows} if f.endswith(".json")}
    for r in rows:
        r["ci"] = cis.get(r["file"], {}).get(r["metric"])
        r["beyond"] = beyond_noise(r["old"], r["ci"])
    return rows


def format_diff(rows: list[dict], rev_a: str, rev_b: str | None) -> str:
    span = f"{rev_a} -> {rev_b or 'workspace'}"
    if not rows:
        return f"no accuracy, downstream score or correlation changed ({span})"
    lines = [["kind", "file", "metric", "old", "new", "change", "new CI", "beyond noise"]]
    for r in rows:
        ci = f"[{_cell(r['ci'][0])}, {_cell(r['ci'][1])}]" if r.get("ci") else "-"
        lines.append([r["kind"], r["file"], r["metric"], _cell(r["old"]), _cell(r["new"]), _cell(r["change"], True),
                      ci, {True: "yes", False: "no"}.get(r.get("beyond"), "-")])
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    body = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    plots = f"dvc plots diff {rev_a}" + (f" {rev_b}" if rev_b else "")
    return "\n".join([f"metrics changed ({span}); plots side by side: `{plots}`", *body])


def _in_headline(file: str, metric: str) -> bool:
    from tasks.downstream.correlation.headline import CORRELATION, LEADERBOARD

    parts = metric.split(".")
    return (file == LEADERBOARD and parts[0] == "rms" and parts[-2:] == ["micro", "accuracy"]) or (
        file == CORRELATION and metric == "primary.estimate")


def target_problems(targets: list[str], revs: list[str | None], cwd=".") -> list[str]:
    """Each --targets path that is neither in the workspace nor at a revision compared (dvc would diff nothing and
    say nothing changed), with "did you mean"."""
    from pathlib import Path

    from tasks.core.paths import near

    def at(rev: str, path: str) -> bool:
        return subprocess.run(["git", "cat-file", "-e", f"{rev}:{path}"], cwd=cwd, capture_output=True).returncode == 0
    where = ", ".join(["the workspace", *(r for r in revs if r)])
    return [f"--targets: no metrics file or folder '{t}' in {where}{near(Path(cwd) / t, t)}" for t in targets
            if not (Path(cwd) / t).exists() and not any(at(r, t) for r in revs if r)]


def cmd_diff(args) -> int:
    from tasks.downstream.correlation.headline import format_headline, headline_rows

    problems = target_problems(args.targets or [], [args.rev_a, args.rev_b])
    if problems:
        raise ConfigError("\n".join(problems))
    raw = metrics_diff(args.rev_a, args.rev_b, targets=args.targets)
    rows = diff_rows(raw, all_metrics=True)
    others = sum(not _in_headline(r["file"], r["metric"]) for r in rows)
    print(format_headline(headline_rows(args.rev_a, args.rev_b), args.rev_a, args.rev_b, 0 if args.all_metrics else others))
    if args.all_metrics:
        print()
        print(format_diff(with_intervals(rows, args.rev_b), args.rev_a, args.rev_b))
    return 0


def add_parser(subparsers):
    """Register `prbench diff` on the CLI's subparsers."""
    ap = subparsers.add_parser("diff", help="what changed between two versions: a headline (leaderboard, primary "
                                            "correlation) with intervals; --all for every metric (dvc metrics diff)")
    ap.add_argument("rev_a", help="a git revision: tag, commit or branch")
    ap.add_argument("rev_b", nargs="?", default=None, help="another revision (default: the workspace)")
    ap.add_argument("--all", "--all-metrics", dest="all_metrics", action="store_true",
                    help="after the headline, every changed metric with its interval")
    ap.add_argument("--targets", nargs="+", default=None, help="only these metrics files")
    ap.set_defaults(func=cmd_diff)
    return ap
