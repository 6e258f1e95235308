"""What a release did to the board: "X: accuracy a [lo, hi], rank r of n, change vs previous",
from the leaderboard rows before and after its `dvc repro` (micro accuracy, one strategy)."""
from __future__ import annotations

from pathlib import Path

from tasks.stages.leaderboard import MICRO


def ranking(rows: list[dict], strategy: str) -> list[dict]:
    """Micro rows of one strategy, best first (equal accuracies by RM name); unscored RMs last."""
    mine = [r for r in rows if r["domain"] == MICRO and r["strategy"] == strategy]
    return sorted(mine, key=lambda r: (r["accuracy"] is None, -(r["accuracy"] or 0.0), r["rm"]))


def summary(before: list[dict], after: list[dict], rm: str, strategy: str) -> dict:
    board, old = ranking(after, strategy), ranking(before, strategy)
    row = next((r for r in board if r["rm"] == rm), None)
    if row is None:
        raise ValueError(f"{rm} is not on the leaderboard under strategy {strategy!r}")
    prev = next((r for r in old if r["rm"] == rm), None)
    out = {"rm": rm, "strategy": strategy, "accuracy": row["accuracy"], "ci_low": row["ci_low"],
           "ci_high": row["ci_high"], "n_pairs": row["n"], "rank": board.index(row) + 1, "of": len(board),
           "previous_accuracy": None, "previous_rank": None, "change": None}
    if prev is not None:
        out.update(previous_accuracy=prev["accuracy"], previous_rank=old.index(prev) + 1,
                   change=None if None in (row["accuracy"], prev["accuracy"]) else row["accuracy"] - prev["accuracy"])
    return out


def _num(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def markdown(s: dict, model: str, revision: str, report: Path | None = None) -> str:
    head = (f"**{s['rm']}**: accuracy {_num(s['accuracy'])} [{_num(s['ci_low'])}, {_num(s['ci_high'])}], "
            f"rank {s['rank']} of {s['of']}")
    if s["previous_accuracy"] is None:
        change = "change vs previous version: none (new on the board)"
    else:
        delta = "-" if s["change"] is None else f"{s['change']:+.3f}"
        change = (f"change vs previous version: {delta} (was {_num(s['previous_accuracy'])}, "
                  f"rank {s['previous_rank']})")
    lines = [f"{head}; {change}", "",
             f"- model: `{model}` at revision `{revision}`",
             f"- micro accuracy under the `{s['strategy']}` strategy over {s['n_pairs']} pairs, bootstrap CI",
             "- every RM × strategy: the `leaderboard` table artifact"]
    if report is not None and Path(report).exists():
        lines.append(f"- the report page: [{Path(report).name}]({Path(report).resolve().as_uri()})")
    return "\n".join(lines) + "\n"
