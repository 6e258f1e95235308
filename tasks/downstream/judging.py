"""What Best-of-N and RL share about judged answers: each distinct answer judged once by the rubric judge,
and the mean judge score over questions with a percentile-bootstrap CI (bon_report's curve, rl_eval's
policies). One function each, so the two downstream methods judge and resample the same way."""
from __future__ import annotations

import warnings

import numpy as np


def distinct_answers(rows: list[dict]) -> list[tuple[tuple[str, str], str]]:
    """((question_id, answer_hash), text) of each distinct valid answer, sorted. The same text under two
    questions is two answers: each has its own rubric."""
    return sorted({(r["question_id"], r["answer_hash"]): r["text"] for r in rows if r["valid"]}.items())


def judge_once(rows: list[dict], questions: dict[str, dict], judge) -> dict[tuple[str, str], object]:
    """{(question_id, answer_hash): verdict} for each distinct valid answer of `rows`, in that sorted order."""
    todo = distinct_answers(rows)
    verdicts = judge.judge([(questions[q], text) for (q, _), text in todo]) if todo else []
    return {key: v for (key, _), v in zip(todo, verdicts)}


def bootstrap_means(values: np.ndarray, b: int, rng) -> np.ndarray:
    """b resampled means of each column of `values` (questions × columns): one resample of the questions
    per replicate, shared by every column (so columns compared are paired), drawn as multinomial counts
    (O(b × questions) memory). A NaN cell (no value for that question) is left out of its column's mean."""
    n = len(values)
    counts = rng.multinomial(n, np.full(n, 1 / n), size=b)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ np.nan_to_num(values)) / (counts @ ~np.isnan(values))


def percentile_ci(boot: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) percentile interval at level `ci` of each column of resampled values; an all-NaN
    column (e.g. a k no question reaches) is left NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return tuple(np.nanquantile(boot, [(1 - ci) / 2, (1 + ci) / 2], axis=0))
