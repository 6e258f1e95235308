"""The RL downstream side: per test question, the score rl_eval counted for the answer of the policy
trained with each RM (data/rl/answers.parquet `score`: the judge's verdict, or its minimum for an empty
answer or an unparseable verdict, so no question drops out). The untrained baseline row is a reference
line, never an RM."""
from __future__ import annotations

import math

RL_COLUMNS = ("rm", "baseline", "question_id", "score")


def load_rl(path: str | None):
    from tasks.correlation.sides import Side, read_downstream
    from tasks.layout import RL_EVAL

    side = Side("rl", f"{path}: the answer of the policy trained with each RM (rl.eval's decoding)")
    for r in read_downstream(path, "rl", "rl_eval", RL_EVAL["answers"], RL_COLUMNS):
        if not r["baseline"] and r["score"] is not None and math.isfinite(r["score"]):
            side.per_question.setdefault(r["rm"], {})[r["question_id"]] = float(r["score"])
    return side
