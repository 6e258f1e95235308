"""The RL downstream side: per test question, the score rl_eval counted for the answer of the policy
trained with each RM (data/rl/answers.parquet `score`: the judge's verdict, or its minimum for an empty
answer or an unparseable verdict, so no question drops out). The untrained baseline row is a reference
line, never an RM."""
from __future__ import annotations

import math
from pathlib import Path

from tasks.errors import ConfigError, DataError

RL_COLUMNS = ("rm", "baseline", "question_id", "score")


def load_rl(path: str | None):
    import pyarrow.parquet as pq

    from tasks.correlation.sides import Side

    if not path or not Path(path).exists():
        raise ConfigError("correlation.downstream: 'rl' needs data/rl/answers.parquet (run the rl_eval stage first)")
    table = pq.read_table(path)
    missing = [c for c in RL_COLUMNS if c not in table.column_names]
    if missing:
        raise DataError(path, f"missing column(s) {', '.join(missing)}")
    side = Side("rl", f"{path}: greedy answer of the policy trained with each RM")
    for r in table.select(list(RL_COLUMNS)).to_pylist():
        if not r["baseline"] and r["score"] is not None and math.isfinite(r["score"]):
            side.per_question.setdefault(r["rm"], {})[r["question_id"]] = float(r["score"])
    return side
