"""Best-of-N as a downstream method: per test question, the judge score of the answer each RM picks out
of the policy's samples (`correlation.bon_method` at k = `correlation.bon_k`, null: the largest k)."""
from __future__ import annotations

import math

from tasks import layout
from tasks.downstream import DOWNSTREAM, Method
from tasks.errors import ConfigError

BON_COLUMNS = ("rm", "question_id", "k", "method", "judge_score")


def load_bon(path: str | None, p: dict):
    """BoN judge score per question of `bon_method` at k = `bon_k` (null: the largest k); a null score is missing."""
    from tasks.correlation.sides import Side, read_downstream

    rows = [r for r in read_downstream(path, "bon", "bon", layout.BON_REPORT["per_question"], BON_COLUMNS)
            if r["method"] == p["bon_method"]]
    if not rows:
        raise ConfigError(f"correlation.bon_method: no BoN rows with method '{p['bon_method']}' in {path}")
    k = p.get("bon_k") or max(r["k"] for r in rows)
    side = Side("bon", f"{path}: {p['bon_method']} at k={k}")
    for r in rows:
        if r["k"] == k and r["judge_score"] is not None and math.isfinite(r["judge_score"]):
            side.per_question.setdefault(r["rm"], {})[r["question_id"]] = float(r["judge_score"])
    return side


DOWNSTREAM.register("bon")(Method(
    "bon", "Best-of-N", layout.BON_REPORT["per_question"], "bon_report", load_bon,
    report={"bon_curve": layout.BON_REPORT["curve"], "bon_metrics": layout.BON_REPORT["metrics"]}))
