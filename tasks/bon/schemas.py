"""pyarrow schemas of the BoN artifacts. Registered into tasks.schemas.SCHEMAS on import so
write_table/read_table validate them; once they live in tasks/schemas.py this is a no-op."""
from __future__ import annotations

import pyarrow as pa

from tasks.schemas import SCHEMAS

BON_SAMPLES = pa.schema([              # data/bon/samples.parquet: one row per (question, sample)
    ("question_id", pa.string()),
    ("domain", pa.string()),
    ("split", pa.string()),
    ("sample_index", pa.int32()),      # i of N; also the LLM call's sample index (its own cache key)
    ("text", pa.string()),             # null when the call failed: never an invented answer
    ("valid", pa.bool_()),
    ("error", pa.string()),            # why it is invalid ("" when valid)
    ("generator", pa.string()),        # the policy's backend identity
    ("answer_hash", pa.string()),      # sha256 of text; null when invalid
    ("finish_reason", pa.string()),    # "length" = cut at bon.max_tokens (still valid); null when failed
])

BON_JUDGED = pa.schema([               # data/bon/judged.parquet: one row per distinct (question, answer)
    ("answer_hash", pa.string()),
    ("question_id", pa.string()),
    ("judge_score", pa.float64()),     # sum / (2 × #aspects) in [0, 1]; null when the verdict did not parse
    ("per_aspect", pa.list_(pa.int32())),   # 0/1/2 per gold aspect; null when unparseable
    ("valid", pa.bool_()),
    ("judge", pa.string()),            # the judge's identity
    ("judge_raw", pa.string()),        # the LLM judge's reply ("" for the embedding judge)
])

BON_SCORES = pa.schema([               # data/bon/scores/<rm>.parquet: one row per sample
    ("rm", pa.string()),
    ("strategy", pa.string()),
    ("question_id", pa.string()),
    ("sample_index", pa.int32()),
    ("score", pa.float64()),           # null: invalid sample or no usable RM score
    ("truncated", pa.bool_()),         # the RM cut some context (never the answer)
])

BON_PER_QUESTION = pa.schema([         # data/bon/per_question.parquet
    ("rm", pa.string()),               # an RM, or the reference lines "(oracle)" / "(random)"
    ("question_id", pa.string()),
    ("domain", pa.string()),
    ("k", pa.int32()),
    ("method", pa.string()),           # first_k | expected
    ("judge_score", pa.float64()),     # null: no usable candidate (counted in metrics)
    ("candidates", pa.int32()),        # usable candidates the pick was made from
])

BON_CURVE = pa.schema([                # data/bon/curve.parquet
    ("rm", pa.string()),
    ("domain", pa.string()),           # "all" or a domain
    ("k", pa.int32()),
    ("method", pa.string()),
    ("judge_score", pa.float64()),     # mean over questions
    ("ci_low", pa.float64()),          # percentile bootstrap over questions, seeded
    ("ci_high", pa.float64()),
    ("gain_over_k1", pa.float64()),
    ("n_questions", pa.int64()),
])

BON_SCHEMAS = {"bon_samples": BON_SAMPLES, "bon_judged": BON_JUDGED, "bon_scores": BON_SCORES,
               "bon_per_question": BON_PER_QUESTION, "bon_curve": BON_CURVE}

for _name, _schema in BON_SCHEMAS.items():
    SCHEMAS.setdefault(_name, _schema)
