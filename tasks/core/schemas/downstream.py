"""What the downstream stages write: correlation, human evaluation, best-of-N and RL."""
from __future__ import annotations

import pyarrow as pa

CORRELATION = pa.schema([                # one row per benchmark × predictor × downstream × metric
    ("benchmark", pa.string()),           # personalised | generic | an external baseline's name
    ("predictor", pa.string()),           # accuracy (mean credit) | worst_domain (lowest per-domain mean)
    ("downstream", pa.string()),          # bon | rl | an external downstream table's method
    ("metric", pa.string()),              # pearson | spearman | kendall_tau_b | weighted_tau | ndcg | rbo
    ("value", pa.float64()),              # null when there are too few RMs or the metric is undefined
    ("ci_low", pa.float64()),             # percentile bootstrap resampling RMs and questions (metrics' ci_method)
    ("ci_high", pa.float64()),
    ("ci_low_questions", pa.float64()),   # the same with the RMs fixed: questions only (too narrow with few RMs)
    ("ci_high_questions", pa.float64()),
    ("p_value", pa.float64()),            # one-sided permutation test (benchmark values permuted across RMs)
    ("p_holm", pa.float64()),             # Holm-adjusted over the benchmark's metrics × predictors × downstreams
    ("null_random", pa.float64()),        # what a random ranking gets on the same data (permutation mean)
    ("null_reversed", pa.float64()),      # what the reverse of the downstream order gets
    ("n_rms", pa.int64()),
    ("status", pa.string()),              # "ok" or why there is no value ("too few RMs (n=3 < 5)")
])

CORRELATION_POINTS = pa.schema([          # the raw (benchmark value, downstream score) table behind every number
    ("rm", pa.string()),
    ("benchmark", pa.string()),
    ("predictor", pa.string()),           # accuracy | worst_domain
    ("accuracy", pa.float64()),           # the predictor's value
    ("benchmark_rank", pa.int32()),       # 1 = best; equal values ordered by RM name
    ("downstream", pa.string()),
    ("downstream_score", pa.float64()),
    ("downstream_rank", pa.int32()),
    ("shares_llm_with", pa.string()),     # judges this RM shares its LLM with, e.g. "bon.judge" ("" = none)
    ("shares_encoder_with", pa.string()), # embedding judges this RM shares its encoder with, e.g. "bon.judge"
    ("in_distribution", pa.bool_()),      # the train_rm stage's RM: trained on pairs built like the benchmark's
])

HUMAN_EVAL_KEY = pa.schema([             # the unblinding key: never shown to annotators
    ("item_id", pa.string()),
    ("question_id", pa.string()),
    ("domain", pa.string()),
    ("split", pa.string()),
    ("chosen_answer", pa.string()),       # "A" | "B": which shown answer is the chosen one
    ("answer_a_sha256", pa.string()),     # the texts annotators saw, to detect changed pairs later
    ("answer_b_sha256", pa.string()),
    ("seed", pa.int64()),
])

HUMAN_RATINGS = pa.schema([              # one row per (annotator, item, answer, dimension)
    ("annotator", pa.string()),
    ("annotator_kind", pa.string()),      # human | llm-proxy: statistics never pool the two
    ("item_id", pa.string()),
    ("question_id", pa.string()),
    ("domain", pa.string()),
    ("split", pa.string()),
    ("answer", pa.string()),              # A | B, as shown
    ("side", pa.string()),                # chosen | rejected, after unblinding
    ("dimension", pa.string()),
    ("score", pa.int32()),                # 1-5; null = the proxy's reply never parsed
    ("source", pa.string()),              # the annotation file, or the proxy LLM's identity
    ("source_row", pa.int64()),
])

PROXY_REPLIES = pa.schema([              # the proxy's raw replies, one per rated answer
    ("item_id", pa.string()),
    ("question_id", pa.string()),
    ("answer", pa.string()),
    ("side", pa.string()),
    ("llm", pa.string()),
    ("valid", pa.bool_()),
    ("attempts", pa.int32()),
    ("error", pa.string()),
    ("raw_text", pa.string()),
])

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

RL_ANSWERS = pa.schema([               # data/rl/answers.parquet: one row per (policy, test question)
    ("rm", pa.string()),               # the RM the policy was trained with, or "(untrained)" (the baseline)
    ("baseline", pa.bool_()),
    ("question_id", pa.string()),
    ("domain", pa.string()),
    ("split", pa.string()),
    ("text", pa.string()),             # the greedy answer; null when the call failed
    ("valid", pa.bool_()),
    ("error", pa.string()),
    ("answer_hash", pa.string()),
    ("finish_reason", pa.string()),
    ("judge_score", pa.float64()),     # the rubric judge (bon.judge) in [0, 1]; null: invalid answer or verdict
    ("score", pa.float64()),           # what counts: judge_score, or the judge's minimum (0) when it is null
    ("policy", pa.string()),           # the transformers backend's identity (weights hash)
    ("seed", pa.int64()),              # the training seed of the RM's policy (rl.seeds); null for the baseline
])

RL_EVAL = pa.schema([                  # data/rl/eval.parquet: one row per policy
    ("rm", pa.string()),
    ("algorithm", pa.string()),        # ppo | grpo | rloo; null for the baseline
    ("baseline", pa.bool_()),
    ("mean_score", pa.float64()),      # mean score over every question (invalid answer or verdict = 0)
    ("ci_low", pa.float64()),          # percentile bootstrap over questions, seeded, the same resamples per row
    ("ci_high", pa.float64()),
    ("gain_over_baseline", pa.float64()),
    ("gain_ci_low", pa.float64()),     # paired: the baseline's score on the same resampled questions subtracted
    ("gain_ci_high", pa.float64()),
    ("questions", pa.int64()),
    ("scored", pa.int64()),            # questions with a judge verdict (the rest score 0)
    ("invalid_answers", pa.int64()),   # empty or failed answers
    ("unparseable_verdicts", pa.int64()),   # a valid answer the judge gave no parseable verdict for
    ("reward_failures", pa.int64()),   # failed rewards while training, each counted as the worst (null: baseline)
    ("policy", pa.string()),
    ("seeds", pa.int64()),             # training seeds (rl.seeds): the score is the mean of their policies'
    ("seed_sd", pa.float64()),         # sd (ddof 1) of the per-seed mean scores; null with one seed
    ("seed_range", pa.float64()),      # max - min of the per-seed mean scores; null with one seed
])
