"""The pyarrow schema of every artifact prbench writes. Stages validate against these."""
from __future__ import annotations

import pyarrow as pa

ASPECT = pa.struct([("aspect", pa.string()), ("evidence", pa.string()), ("reason", pa.string())])

QUESTIONS = pa.schema([
    ("id", pa.string()),
    ("domain", pa.string()),          # Art / Lifestyle / Society
    ("split", pa.string()),
    ("category", pa.string()),
    ("question", pa.string()),
    ("narrative", pa.string()),       # evaluation-only: never reaches a generator or an RM
    ("rubric_aspects", pa.list_(ASPECT)),
])

PROFILES = pa.schema([
    ("question_id", pa.string()),
    ("item_id", pa.string()),
    ("position", pa.int32()),         # order in the user's original profile
    ("category", pa.string()),
    ("text", pa.string()),
])

PAIRS = pa.schema([
    ("question_id", pa.string()),
    ("domain", pa.string()),
    ("split", pa.string()),
    ("chosen", pa.string()),
    ("rejected", pa.string()),
    ("generator", pa.string()),       # "reference:<source>" for ingested pairs
    ("chosen_words", pa.int32()),
    ("rejected_words", pa.int32()),
    ("length_ratio", pa.float64()),   # chosen_words / rejected_words
])

QUARANTINE = pa.schema([
    ("file", pa.string()),
    ("row", pa.int64()),
    ("id", pa.string()),
    ("field", pa.string()),
    ("reason", pa.string()),
    ("raw", pa.string()),             # the offending row as JSON, so nothing is silently lost
])

RANKED_PROFILE = pa.schema([
    ("question_id", pa.string()),
    ("rank", pa.int32()),             # 1 = most relevant
    ("item_id", pa.string()),
    ("position", pa.int32()),
    ("category", pa.string()),
    ("text", pa.string()),
    ("score", pa.float64()),
])

PROFILE_CONTEXT = pa.schema([
    ("question_id", pa.string()),
    ("retriever", pa.string()),
    ("k", pa.int32()),
    ("item_ids", pa.list_(pa.string())),
    ("profile_text", pa.string()),    # what later prompts inject
])

SCHEMAS: dict[str, pa.Schema] = {
    "questions": QUESTIONS,
    "profiles": PROFILES,
    "pairs": PAIRS,
    "quarantine": QUARANTINE,
    "ranked_profile": RANKED_PROFILE,
    "profile_context": PROFILE_CONTEXT,
}


class SchemaMismatch(Exception):
    pass


def conform(table: pa.Table, name: str) -> pa.Table:
    """Return `table` cast to the named schema, or raise naming the first column that differs."""
    schema = SCHEMAS[name]
    if table.schema.names != schema.names:
        raise SchemaMismatch(f"artifact '{name}': columns {table.schema.names} != {schema.names}")
    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatch(f"artifact '{name}': {exc}") from exc
