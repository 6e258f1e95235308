"""Results in the Prefect UI: table artifacts under fixed keys, so the Artifacts page keeps each
table's history run after run. Presentation only: nothing here reaches a DVC output, so it is
no stage's dependency, and it runs after the (possibly cached) stage task, on every run."""
from __future__ import annotations

from prefect.artifacts import create_table_artifact

LEADERBOARD_KEY, BON_KEY, CORRELATION_KEY, EXPLAIN_KEY = "leaderboard", "bon-largest-k", "correlation", "explain"


def _cell(v):
    return round(v, 4) if isinstance(v, float) else v


def publish_table(key: str, rows: list[dict], columns: list[str], description: str) -> None:
    create_table_artifact(key=key, table=[{c: _cell(r.get(c)) for c in columns} for r in rows],
                          description=description)


def leaderboard(rows: list[dict]) -> None:
    """RM × strategy, micro accuracy with its bootstrap CI, best first within each strategy."""
    micro = sorted((r for r in rows if r["domain"] == "micro"),
                   key=lambda r: (r["strategy"], r["accuracy"] is None, -(r["accuracy"] or 0.0), r["rm"]))
    publish_table(LEADERBOARD_KEY, micro, ["rm", "strategy", "accuracy", "ci_low", "ci_high", "n", "ties", "invalid",
                                           "evaluation_only"],
                  "Leaderboard: micro accuracy per RM × profile strategy, bootstrap CI (data/leaderboard/)")


def bon(curve: list[dict]) -> None:
    """Best-of-N at the largest k: each RM's pick judged, with the oracle and random lines."""
    rows = [r for r in curve if r["domain"] == "all"]
    top = max((r["k"] for r in rows), default=None)
    rows = sorted((r for r in rows if r["k"] == top),
                  key=lambda r: (r["method"], r["judge_score"] is None, -(r["judge_score"] or 0.0), r["rm"]))
    publish_table(BON_KEY, rows, ["rm", "method", "k", "judge_score", "ci_low", "ci_high", "n_questions"],
                  f"Best-of-N at the largest k ({top}): mean judge score of each RM's pick, bootstrap CI (data/bon/)")


def correlation(rows: list[dict]) -> None:
    """Benchmark ranking vs downstream ranking: every metric with its CI and p-value."""
    publish_table(CORRELATION_KEY, rows, ["benchmark", "predictor", "downstream", "metric", "value", "ci_low",
                                          "ci_high", "null_random", "null_reversed", "p_value", "p_holm", "n_rms",
                                          "status"],
                  "Does the benchmark ranking of RMs predict their downstream ranking? (data/correlation/)")


def explain(rows: list[dict]) -> None:
    """Why RMs fail: per RM × strategy the share of pairs where it picked the longer answer, the length gap and the
    gain from the profile over `none`, each with its CI or why there is none (tasks/stages/explain/text.py)."""
    publish_table(EXPLAIN_KEY, rows, ["rm", "role", "strategy", "pairs", "accuracy", "picked_longer", "picked_longer_ci",
                                      "length_gap", "length_gap_ci", "gain_vs_none", "gain_ci",
                                      "right_only_with_profile", "right_only_without"],
                  "Why RMs fail: length bias (picked the longer answer; accuracy when the chosen is longer minus "
                  "shorter) and the gain from the profile over none, per RM × strategy (metrics/explain.json)")
