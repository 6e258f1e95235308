"""Does the benchmark predict downstream? RM rankings by benchmark accuracy against rankings by
downstream quality (BoN now, PPO later), with baselines from elsewhere for comparison.

- metrics.py: the agreement metrics (NDCG, RBO, weighted τ, Spearman, Kendall τ-b), permutation
  p-values and bootstrap CIs, with their conventions (gains, ties) stated once.
- batch.py: the same metrics over thousands of resamples or permutations at once (tested equal to metrics.py).
- stage.py: reading the sides (scores tables, BoN, external tables), the stage's `run`, table and plot.
- diff.py: `prbench diff REV_A REV_B`, metrics changed between two dataset/code versions.
"""
