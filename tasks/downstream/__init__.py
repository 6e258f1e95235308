"""Downstream validation: does an RM's ranking help a policy? Best-of-N (bon/), RL (rl/), and the
correlation of benchmark and downstream rankings (correlation/, with the downstream-method registry in
correlation/methods.py). Imports tasks.core, tasks.models and tasks.core.stage_table."""
