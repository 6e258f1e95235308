"""RL as a downstream method: per test question, the score rl_eval counted for the answer of the policy
trained with each RM (data/rl/answers.parquet `score`: the judge's verdict, or its minimum for an empty
answer or an unparseable verdict, so no question drops out). The untrained baseline row is a reference
line, never an RM."""
from __future__ import annotations

import math

from tasks import layout
from tasks.downstream import DOWNSTREAM, Method

RL_COLUMNS = ("rm", "baseline", "question_id", "score")


def load_rl(path: str | None, p: dict | None = None):
    from tasks.correlation.sides import Side, read_downstream

    side = Side("rl", f"{path}: the answer of the policy trained with each RM (rl.eval's decoding)")
    for r in read_downstream(path, "rl", "rl_eval", layout.RL_EVAL["answers"], RL_COLUMNS):
        if not r["baseline"] and r["score"] is not None and math.isfinite(r["score"]):
            side.per_question.setdefault(r["rm"], {})[r["question_id"]] = float(r["score"])
    return side


DOWNSTREAM.register("rl")(Method(
    "rl", "RL", layout.RL_EVAL["answers"], "rl_eval", load_rl,
    report={"rl_eval": layout.RL_EVAL["eval"], "rl_metrics": layout.RL_EVAL["metrics"]}))
