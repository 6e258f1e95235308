"""The benchmark's own artifacts, ingest to leaderboard: questions, profiles, pairs, scores."""
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

HALVES = pa.schema([                  # tasks/core/halves.py: which test questions score, which go downstream
    ("question_id", pa.string()),
    ("split", pa.string()),
    ("domain", pa.string()),
    ("half", pa.string()),            # benchmark | downstream | both (unsplit: train, or downstream_share 0)
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

INFERRED_RUBRICS = pa.schema([
    ("question_id", pa.string()),
    ("domain", pa.string()),
    ("split", pa.string()),
    ("aspects", pa.list_(pa.string())),   # null when the planner's reply never parsed
    ("valid", pa.bool_()),
    ("attempts", pa.int32()),
    ("error", pa.string()),
    ("raw_text", pa.string()),
    ("generator", pa.string()),
])

GENERATED_PAIRS = pa.schema([
    *PAIRS,                               # chosen/rejected null when generation never parsed
    ("format_ok", pa.bool_()),
    ("error", pa.string()),
    ("chosen_raw", pa.string()),
    ("rejected_raw", pa.string()),
    ("attempts", pa.int32()),
])

JUDGED_PAIRS = pa.schema([
    *PAIRS,
    ("source", pa.string()),              # generate | reference
    ("judge_chosen", pa.float64()),       # rubric judge score in [0, 1]
    ("judge_rejected", pa.float64()),
    ("valid", pa.bool_()),                # chosen beats rejected under the judge
])

SCORES = pa.schema([                     # one row per (RM, benchmark, strategy, pair): data/scores/<rm>.parquet
    ("rm", pa.string()),
    ("benchmark", pa.string()),           # personalised (the selected pairs) | generic (non-personalised rejected)
    ("rm_kind", pa.string()),
    ("rm_identity", pa.string()),
    ("strategy", pa.string()),
    ("question_id", pa.string()),
    ("domain", pa.string()),
    ("split", pa.string()),
    ("score_chosen", pa.float64()),       # null = no usable score (invalid)
    ("score_rejected", pa.float64()),
    ("correct", pa.bool_()),              # chosen strictly above rejected
    ("tie", pa.bool_()),
    ("invalid", pa.bool_()),
    ("truncated", pa.bool_()),            # some context was cut (never the answer)
    ("order_consistent", pa.bool_()),     # pairwise judges only: same verdict in both orders
    ("input_hash_chosen", pa.string()),
    ("input_hash_rejected", pa.string()),
    ("planner_failed", pa.bool_()),       # the planner's row never parsed: the RM saw the question only
    ("chosen_position", pa.string()),     # pairwise judges: "A" | "B" (one seeded order per pair) | "both"
    ("picked_a", pa.float64()),           # pairwise judges: share of verdicts for position A (0.5 = unbiased)
    ("score_dtype", pa.string()),         # the dtype the model computed the scores in (null: no model ran here)
])

LIST_SCORES = pa.schema([                # one row per (RM, benchmark, strategy, item): data/bench_scores/<b>/<rm>.parquet
    ("rm", pa.string()),
    ("benchmark", pa.string()),           # the params `benchmarks` entry's name
    ("source", pa.string()),              # its importer (rewardbench2, prism, ...)
    ("rm_kind", pa.string()),
    ("rm_identity", pa.string()),
    ("strategy", pa.string()),            # none | raw_profile (where the benchmark has user history)
    ("item_id", pa.string()),
    ("subset", pa.string()),
    ("split", pa.string()),
    ("n_correct", pa.int32()),
    ("n_incorrect", pa.int32()),
    ("method", pa.string()),              # pointwise | pairwise-each (a pairwise-only RM: each correct vs each incorrect)
    ("scores_correct", pa.list_(pa.float64())),    # every answer's score (pointwise), in the file's order
    ("scores_incorrect", pa.list_(pa.float64())),
    ("margins", pa.list_(pa.float64())),  # pairwise-each: correct i vs incorrect j, row-major
    ("correct", pa.bool_()),              # every correct answer above every incorrect one
    ("tie", pa.bool_()),
    ("tie_credit", pa.float64()),         # credit of a tie under the `half` policy (1/2 for a pair, 1/k best-of-k)
    ("invalid", pa.bool_()),
    ("chance", pa.float64()),             # 1 / C(m + n, m)
    ("truncated", pa.bool_()),
    ("input_hashes", pa.list_(pa.string())),
])

LEADERBOARD = pa.schema([
    ("rm", pa.string()),
    ("strategy", pa.string()),
    ("evaluation_only", pa.bool_()),      # the oracle strategy: an upper bound, not a benchmark result
    ("domain", pa.string()),              # a domain, "micro" (all pairs) or "macro" (mean of domains)
    ("n", pa.int64()),                    # pairs counted under the tie policy
    ("accuracy", pa.float64()),
    ("ci_low", pa.float64()),
    ("ci_high", pa.float64()),
    ("ties", pa.int64()),
    ("invalid", pa.int64()),
    ("truncated", pa.int64()),
    ("tie_policy", pa.string()),
    ("planner_failed_rows", pa.int64()),  # pairs whose planner row never parsed (scored with the question only)
    ("position_a_rate", pa.float64()),    # pairwise judges: share of verdicts for position A (0.5 = unbiased)
    ("shares_llm_with", pa.string()),     # judges this RM shares its LLM with, e.g. "bon.judge" ("" = none)
    ("shares_encoder_with", pa.string()), # embedding judges this RM shares its encoder with, e.g. "bon.judge"
    ("in_distribution", pa.bool_()),      # the train_rm stage's RM: trained on pairs built like the benchmark's
    ("implicit_reward", pa.string()),     # a DPO policy's log-probabilities: "DPO vs <ref>", "DPO, reference-free" ("" = no)
    ("score_dtype", pa.string()),         # the dtype its scores were computed in (null: no model ran here)
    ("within_resolution", pa.int64()),    # decided pairs whose margin is within that dtype's resolution
])

EXPLAIN_CELLS = pa.schema([              # data/explain/cells.parquet: one row per (pair, RM, strategy) scored
    ("question_id", pa.string()),
    ("domain", pa.string()),
    ("rm", pa.string()),
    ("role", pa.string()),                # contestant | null baseline | positive control (tasks/core/rm_labels.py)
    ("strategy", pa.string()),
    ("evaluation_only", pa.bool_()),
    ("margin", pa.float64()),             # score(chosen) - score(rejected); null = no usable score
    ("right", pa.bool_()),                # picked the chosen answer (a tie or an invalid score is not right)
    ("credit", pa.float64()),             # the leaderboard's credit under its tie policy; null = a tie dropped
    ("tie", pa.bool_()),
    ("invalid", pa.bool_()),
    ("truncated", pa.bool_()),
    ("picked_longer", pa.bool_()),        # preferred the longer answer; null = as long, or no preference
    ("chosen_position", pa.string()),     # pairwise judges: A | B | both
    ("planner_failed", pa.bool_()),
])

EXPLAIN_CONTEXT = pa.struct([("strategy", pa.string()), ("text", pa.string()), ("failed", pa.bool_())])
EXPLAIN_HUMAN = pa.struct([("kind", pa.string()), ("dimension", pa.string()), ("annotators", pa.int32()),
                           ("chosen", pa.float64()), ("rejected", pa.float64())])

EXPLAIN_PAIRS = pa.schema([              # data/explain/pairs.parquet: one row per scored pair, what the RMs saw
    ("question_id", pa.string()),         # the user: one question each
    ("domain", pa.string()),
    ("split", pa.string()),
    ("category", pa.string()),            # the question's StackExchange site
    ("question", pa.string()),
    ("chosen", pa.string()),
    ("rejected", pa.string()),
    ("chosen_words", pa.int32()),         # the length baselines' measure: whitespace-separated words
    ("rejected_words", pa.int32()),
    ("length_relation", pa.string()),     # chosen longer | chosen shorter | equal length
    ("profile_posts", pa.int32()),        # the user's past posts
    ("profile_bin", pa.string()),         # its bin of the scored pairs' profile sizes, e.g. "15–22 posts"
    ("aspects", pa.list_(pa.string())),   # the user's gold rubric aspects (evaluation only: never an RM input)
    ("contexts", pa.list_(EXPLAIN_CONTEXT)),   # each strategy's context as the RMs saw it; failed: question only
    ("judge_chosen", pa.float64()),       # the validity judge (pairs.judge) on the gold rubric, in [0, 1]
    ("judge_rejected", pa.float64()),
    ("valid", pa.bool_()),
    ("human", pa.list_(EXPLAIN_HUMAN)),   # human evaluation (or its LLM proxy): mean rating per side
])
