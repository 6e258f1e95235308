"""What `prbench diff` leads with: the leaderboard per RM × strategy and the primary correlation, each
change with the new value's interval and whether it is beyond noise; at most MAX_LINES lines.

"Beyond noise" here: the old value lies outside the new value's CI as the metrics file holds it (the
leaderboard's bootstrap over questions; the primary correlation's CI over RMs and questions). It is a
screen, not a test: it ignores the old value's own uncertainty, and over many rows some cross by chance.
A paired test of two runs needs both runs' per-item scores (`prbench report --compare` has them)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

LEADERBOARD, CORRELATION = "metrics/leaderboard.json", "metrics/correlation.json"
MAX_LINES = 40


def read_at(rev: str | None, path: str, cwd=".") -> dict | None:
    """A metrics file at a git revision (None: the workspace); None where it does not exist."""
    if rev is None:
        p = Path(cwd) / path
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None
    proc = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=cwd, capture_output=True, text=True)
    return json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None


def headline_metrics(board: dict | None, corr: dict | None) -> dict:
    """metrics/headline.json (the report stage writes it): what `dvc metrics diff --targets metrics/headline.json`
    shows, a few dozen rows: accuracy per RM × ranked strategy (evaluation-only ones left out) with its CI,
    and the primary correlation's estimate, CI and p. The positive-control ladder's rungs are left out: the
    primary test is their one headline number. The null baselines (correlation.json `null_baselines`) are one
    range per strategy, however many there are. dvc's table leaves the [lo, hi] lists out; prbench diff shows them."""
    out: dict = {"leaderboard": {}}
    controls = set((corr or {}).get("positive_controls") or [])
    nulls = set((corr or {}).get("null_baselines") or [])
    ranges: dict = {}
    for rm, per in sorted(((board or {}).get("rms") or {}).items()):
        if rm in controls:
            continue
        for s, e in sorted(per.items()):
            if e.get("evaluation_only") or not isinstance(e.get("micro"), dict):
                continue
            if rm in nulls:
                ranges.setdefault(s, []).append(e["micro"].get("accuracy"))
            else:
                out["leaderboard"].setdefault(rm, {})[s] = {"accuracy": e["micro"].get("accuracy"), "ci": e["micro"].get("ci")}
    if ranges:
        out["null_baselines"] = {s: {"rms": len(v), "min": min((x for x in v if x is not None), default=None),
                                     "max": max((x for x in v if x is not None), default=None)}
                                 for s, v in sorted(ranges.items())}
    p = (corr or {}).get("primary")
    if isinstance(p, dict):
        out["primary"] = {k: p.get(k) for k in ("estimate", "ci", "p", "significant", "power")}
    return out


def beyond_noise(old, ci) -> bool | None:
    """True when `old` is outside the new value's interval `ci`; None when either is missing."""
    if not isinstance(old, (int, float)) or not (isinstance(ci, list) and len(ci) == 2 and None not in ci):
        return None
    return not ci[0] <= old <= ci[1]


def _row(what: str, old, new, ci) -> dict:
    change = new - old if isinstance(old, (int, float)) and isinstance(new, (int, float)) else None
    return {"what": what, "old": old, "new": new, "change": change, "ci": ci, "beyond": beyond_noise(old, ci)}


def leaderboard_rows(old: dict | None, new: dict | None, nulls=frozenset()) -> list[dict]:
    """One row per RM × strategy whose micro accuracy changed (or that came or went); a null baseline's labelled."""
    def cells(board):
        return {(rm, s): e.get("micro", {}) for rm, per in ((board or {}).get("rms") or {}).items() for s, e in per.items()}

    before, after = cells(old), cells(new)
    rows = []
    for rm, s in sorted(before.keys() | after.keys()):
        o, n = before.get((rm, s), {}), after.get((rm, s), {})
        if o.get("accuracy") != n.get("accuracy"):
            rows.append({**_row(f"{rm} · {s}" + (" (null baseline)" if rm in nulls else ""), o.get("accuracy"),
                                n.get("accuracy"), n.get("ci")), "null": rm in nulls})
    return rows


def primary_row(old: dict | None, new: dict | None) -> dict | None:
    """The pre-registered primary correlation (correlation.json's `primary`) when the new run has one."""
    p = (new or {}).get("primary")
    if not isinstance(p, dict):
        return None
    o = ((old or {}).get("primary") or {}).get("estimate")
    what = f"primary: {p.get('benchmark')}/{p.get('strategy')} vs {p.get('method')} {p.get('statistic')}"
    row = _row(what, o, p.get("estimate"), p.get("ci"))
    row["note"] = f"p={p['p']:.3g}" if isinstance(p.get("p"), (int, float)) else ""
    return row


def headline_rows(rev_a: str, rev_b: str | None, cwd=".") -> list[dict]:
    """The primary correlation first, then the leaderboard's changes, the ones beyond noise and largest first;
    the null baselines' (reference points, however many: correlation.json `null_baselines`) after the others."""
    corr_a, corr_b = read_at(rev_a, CORRELATION, cwd), read_at(rev_b, CORRELATION, cwd)
    primary = primary_row(corr_a, corr_b)
    nulls = {rm for c in (corr_a, corr_b) for rm in (c or {}).get("null_baselines") or []}
    board = leaderboard_rows(read_at(rev_a, LEADERBOARD, cwd), read_at(rev_b, LEADERBOARD, cwd), nulls)
    board.sort(key=lambda r: (r["null"], not r["beyond"], -abs(r["change"] or 0), r["what"]))
    return ([primary] if primary else []) + board


def _num(x, signed=False) -> str:
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return "-" if x is None else str(x)
    return f"{x:+.4f}" if signed else f"{x:.4f}"


def format_headline(rows: list[dict], rev_a: str, rev_b: str | None, others: int) -> str:
    """At most MAX_LINES lines; what did not fit, and every other changed metric, is behind `--all`."""
    span = f"{rev_a} -> {rev_b or 'workspace'}"
    lines = [f"headline ({span}): accuracy per RM · strategy, the primary correlation; beyond noise: the old value "
             "is outside the new 95% CI"]
    if not rows:
        lines.append("no leaderboard accuracy and no primary correlation changed")
    fit = rows[:MAX_LINES - 4]
    table = [["", "old", "new", "change", "new 95% CI", "beyond noise"]]
    for r in fit:
        ci = f"[{_num(r['ci'][0])}, {_num(r['ci'][1])}]" if r["beyond"] is not None else "-"
        flag = {True: "yes", False: "no", None: "-"}[r["beyond"]] + (f"  {r['note']}" if r.get("note") else "")
        table.append([r["what"], _num(r["old"]), _num(r["new"]), _num(r["change"], True), ci, flag])
    if fit:
        widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip() for t in table]
    hidden = len(rows) - len(fit)
    if hidden or others:
        more = ", ".join(x for x in (f"{hidden} more headline row(s)" if hidden else "",
                                     f"{others} other changed metric(s)" if others else "") if x)
        lines.append(f"{more}: `prbench diff {rev_a}{' ' + rev_b if rev_b else ''} --all`")
    return "\n".join(lines)
