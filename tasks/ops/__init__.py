"""Operations around runs: releases (watch, score, commit as a transaction), git and locks, dvc runs, the
report page and `prbench score`. May import every layer of tasks/ below it."""
