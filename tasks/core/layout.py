"""Artifact paths of every stage (relative to the project root): their one source. The stage table
(tasks/core/stage_table.py) names which are each stage's outputs, and dvc.yaml is generated from it."""
INGEST = {
    "questions": "data/ingest/questions.parquet",
    "profiles": "data/ingest/profiles.parquet",
    "pairs": "data/ingest/pairs.parquet",
    "halves": "data/ingest/halves.parquet",         # test questions: benchmark or downstream half (core/halves.py)
    "quarantine": "data/ingest/quarantine.parquet",
    "metrics": "metrics/ingest.json",
    "plot": "plots/ingest_profile_sizes.png",
}
PROFILES = {
    "ranked_profile": "data/profiles/ranked.parquet",
    "profile_context": "data/profiles/context.parquet",
    "metrics": "metrics/profiles.json",
}
RUBRICS = {
    "inferred_rubrics": "data/rubrics/inferred.parquet",
    "metrics": "metrics/rubrics.json",
}
PAIRS = {
    "generated_pairs": "data/pairs/generated.parquet",
    "judged_pairs": "data/pairs/judged.parquet",      # every source, judged
    "selected_pairs": "data/pairs/selected.parquet",  # what scoring reads (pairs.source): the benchmark half
    "train_pairs": "data/pairs/train.parquet",        # the selected pairs of train_rm.splits: what trains
    "metrics": "metrics/pairs.json",
    "plot": "plots/pairs_validity.png",
}
GENERIC_PAIRS = {                                   # the baseline benchmark: rejected = a non-personalised answer
    "generic_pairs": "data/pairs/generic.parquet",
    "generated": "data/pairs/generic_generated.parquet",   # every generation, raw replies kept
    "metrics": "metrics/generic_pairs.json",
}
TRAIN_RM = {
    "model": "data/models/bradley-terry",            # a save_pretrained folder (model + tokenizer)
    "metrics": "metrics/train_rm.json",
}
SCORES_DIR = "data/scores"                          # one <rm>.parquet per RM (a dvc foreach stage each)


def scores(rm: str) -> dict:
    return {"scores": f"{SCORES_DIR}/{rm}.parquet", "metrics": f"metrics/scores/{rm}.json"}


RM_INPUTS_DIR = "data/rm_inputs"                    # <stage>/<rm>.json: a per-RM stage's shared inputs, hashed


def rm_inputs(stage: str, rm: str) -> str:
    """The file standing for what stage@rm reads besides its own outputs (tasks/stages/fingerprint.py)."""
    return f"{RM_INPUTS_DIR}/{stage}/{rm}.json"


BENCH_SCORES_DIR = "data/bench_scores"              # <benchmark>/<rm>.parquet (a dvc foreach stage per benchmark)
BENCH_METRICS_DIR = "metrics/bench_scores"          # <benchmark>.json


def bench_scores(benchmark: str) -> dict:
    return {"scores": f"{BENCH_SCORES_DIR}/{benchmark}", "metrics": f"{BENCH_METRICS_DIR}/{benchmark}.json"}


LEADERBOARD = {
    "leaderboard": "data/leaderboard/leaderboard.parquet",
    "metrics": "metrics/leaderboard.json",
    "plot_accuracy": "plots/leaderboard_accuracy.png",
    "plot_heatmap": "plots/leaderboard_domains.png",
    "plot_data": "plots/leaderboard.csv",              # for `dvc plots show/diff`
}
EXPLAIN = {                                        # why an RM fails a user: the pair explorer's data, the error analysis
    "cells": "data/explain/cells.parquet",          # one row per (pair, RM, strategy) scored
    "pairs": "data/explain/pairs.parquet",          # one row per scored pair: what the RMs saw, what the user wanted
    "metrics": "metrics/explain.json",
    "plot": "plots/explain_length.png",
}
HUMAN_EVAL = {
    "ratings": "data/human_eval/ratings.parquet",            # human + llm-proxy ratings, unblinded
    "proxy_replies": "data/human_eval/proxy_replies.parquet",
    "quarantine": "data/human_eval/quarantine.parquet",
    "metrics": "metrics/human_eval.json",
    "plot": "plots/human_eval.png",
}
BON_SAMPLE = {"samples": "data/bon/samples.parquet", "metrics": "metrics/bon_sample.json"}
BON_JUDGE = {"judged": "data/bon/judged.parquet", "metrics": "metrics/bon_judge.json"}
BON_SCORES_DIR = "data/bon/scores"                  # one <rm>.parquet per RM (a dvc foreach stage each)


def bon_scores(rm: str) -> dict:
    return {"scores": f"{BON_SCORES_DIR}/{rm}.parquet", "metrics": f"metrics/bon_scores/{rm}.json"}


BON_REPORT = {"per_question": "data/bon/per_question.parquet", "curve": "data/bon/curve.parquet",
              "metrics": "metrics/bon.json", "plot": "plots/bon_curve.png"}
CORRELATION = {
    "correlation": "data/correlation/correlation.parquet",
    "points": "data/correlation/points.parquet",          # the raw (RM, accuracy, downstream score) table
    "metrics": "metrics/correlation.json",
    "plot": "plots/correlation.png",
}
# `prbench serve`'s release watcher: models announced so far (git-tracked, not a DVC output)
RELEASES = {"state": "data/releases/registered.json"}
RL_POLICIES_DIR = "data/rl/policies"                # one <rm>/ checkpoint folder per RM (a dvc foreach stage each)


def rl_train(rm: str) -> dict:
    return {"policy": f"{RL_POLICIES_DIR}/{rm}", "metrics": f"metrics/rl_train/{rm}.json",
            "plot_data": f"plots/rl_train/{rm}.csv", "plot": f"plots/rl_train/{rm}.png"}


RL_EVAL = {"eval": "data/rl/eval.parquet", "answers": "data/rl/answers.parquet", "metrics": "metrics/rl.json",
           "plot": "plots/rl_scores.png"}
METRICS_DIR = "metrics"   # every stage's metrics file: tracked in git; DVC declares the headline alone (tasks/core/dag.py)
REPORT = {"page": "report/index.html", "pairs": "report/pairs.html", "headline": "metrics/headline.json"}                # one self-contained page; compare pages go under results/
# what the page's code version hashes (the report stage depends on all of it, so the hash is never stale)
REPORT_CODE_VERSION = ["flows", "tasks", "prompts", "pyproject.toml"]
# Downstream methods as the correlation and the report read them: the per-question table (one judge score
# per RM and question), the stage that writes it, and what the report's section shows. Their readers are
# registered under the same names in tasks/downstream/correlation/methods.py (a test holds the two equal).
DOWNSTREAM = {
    "bon": {"per_question": BON_REPORT["per_question"], "stage": "bon_report",
            "report": {"bon_curve": BON_REPORT["curve"], "bon_metrics": BON_REPORT["metrics"]}},
    "rl": {"per_question": RL_EVAL["answers"], "stage": "rl_eval",
           "report": {"rl_eval": RL_EVAL["eval"], "rl_metrics": RL_EVAL["metrics"]}},
}
