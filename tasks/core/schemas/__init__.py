"""The pyarrow schema of every artifact prbench writes. Stages validate against these: the benchmark's own
artifacts in pipeline.py, the downstream stages' in downstream.py."""
from __future__ import annotations

import pyarrow as pa

from tasks.core.errors import UserError
from tasks.core.schemas.pipeline import (  # noqa: F401 - every schema importable from here
    ASPECT, QUESTIONS, HALVES, PROFILES, PAIRS, QUARANTINE, RANKED_PROFILE, PROFILE_CONTEXT, INFERRED_RUBRICS,
    GENERATED_PAIRS, JUDGED_PAIRS, SCORES, LIST_SCORES, LEADERBOARD, EXPLAIN_CELLS, EXPLAIN_PAIRS,
)
from tasks.core.schemas.downstream import (  # noqa: F401 - every schema importable from here
    CORRELATION, CORRELATION_POINTS, HUMAN_EVAL_KEY, HUMAN_RATINGS, PROXY_REPLIES, BON_SAMPLES, BON_JUDGED,
    BON_SCORES, BON_PER_QUESTION, BON_CURVE, RL_ANSWERS, RL_EVAL,
)

SCHEMAS: dict[str, pa.Schema] = {
    "questions": QUESTIONS,
    "halves": HALVES,
    "profiles": PROFILES,
    "pairs": PAIRS,
    "quarantine": QUARANTINE,
    "ranked_profile": RANKED_PROFILE,
    "profile_context": PROFILE_CONTEXT,
    "inferred_rubrics": INFERRED_RUBRICS,
    "generated_pairs": GENERATED_PAIRS,
    "judged_pairs": JUDGED_PAIRS,
    "scores": SCORES,
    "list_scores": LIST_SCORES,
    "leaderboard": LEADERBOARD,
    "explain_cells": EXPLAIN_CELLS,
    "explain_pairs": EXPLAIN_PAIRS,
    "correlation": CORRELATION,
    "correlation_points": CORRELATION_POINTS,
    "human_eval_key": HUMAN_EVAL_KEY,
    "human_ratings": HUMAN_RATINGS,
    "proxy_replies": PROXY_REPLIES,
    "bon_samples": BON_SAMPLES,
    "bon_judged": BON_JUDGED,
    "bon_scores": BON_SCORES,
    "bon_per_question": BON_PER_QUESTION,
    "bon_curve": BON_CURVE,
    "rl_answers": RL_ANSWERS,
    "rl_eval": RL_EVAL,
}


class SchemaMismatch(UserError):
    """A table that does not have the schema it must: a user's file, or an output edited by hand."""


def conform(table: pa.Table, name: str) -> pa.Table:
    """Return `table` cast to the named schema, or raise naming the first column that differs."""
    schema = SCHEMAS[name]
    if table.schema.names != schema.names:
        raise SchemaMismatch(f"artifact '{name}': columns {table.schema.names} != {schema.names}")
    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatch(f"artifact '{name}': {exc}") from exc
