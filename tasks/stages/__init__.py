"""One module (or package) per benchmark-side DVC stage: ingest, profiles, rubrics, pairs, generic_pairs,
train_rm, score, bench_score (benchmarks/), leaderboard, human_eval. Imports tasks.core and tasks.models."""
