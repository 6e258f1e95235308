"""Scores that rank or compare answers are rounded to 6 decimals, so a tie is a tie on every machine
(docs/determinism.md, docs/statistics.md): retrieval's order, a judge's log-ratio, the similarity baseline and
the mixture RM. Each case is one whose unrounded floats differ in the last bits, or whose values differ below
a coarser rounding."""
from __future__ import annotations

import math

from tasks.models import retrieval
from tasks.models.rms.judges import log_ratio


def test_retrieval_ties_scores_equal_to_six_decimals_and_keeps_profile_order():
    assert 0.1 + 0.2 != 0.3
    assert retrieval.order([0.3, 0.1 + 0.2]) == [0, 1], "equal to 6 decimals: profile order"
    assert retrieval.order([0.3, 0.3001]) == [1, 0], "1e-4 apart is not a tie"
    assert retrieval.order([0.3, 0.3000004]) == [0, 1], "4e-7 apart rounds to the same 6 decimals"


def test_a_judges_log_ratio_is_rounded_to_six_decimals():
    assert 0.3 - 0.1 != 0.7 - 0.5
    assert log_ratio(0.3, 0.1) == log_ratio(0.7, 0.5) == 0.2
    assert log_ratio(-1.0, -math.inf) is None and log_ratio(-math.inf, -math.inf) is None


def _six(scores) -> bool:
    return all(s == round(s, 6) for s in scores)


def test_the_similarity_baseline_and_the_mixture_rm_score_to_six_decimals(tmp_path):
    from tasks.core.artifacts import write_table
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm

    q = {"id": "q1", "question": "How do I start running?", "domain": "Lifestyle", "split": "test",
         "rubric_aspects": [{"aspect": "gradual mileage increase", "evidence": "e", "reason": "r"}],
         "narrative": "n", "category": "fitness"}
    path = write_table([q], tmp_path / "questions.parquet", "questions")
    res = Resources({"common": {"seed": 1, "cache_dir": str(tmp_path / "cache")}})
    items = [(q["question"], "I run twice a week.", a) for a in (
        "Increase your mileage gradually, about ten percent a week.", "Buy expensive shoes first.",
        "Run slowly and build up.", "Sign up for a marathon tomorrow.")]
    sim = [s.score for s in make_rm("sim", {"kind": "similarity"}, res).score_answers(items)]
    mix = [s.score for s in make_rm("m", {"kind": "mixture", "weight": 0.5, "questions": str(path)}, res)
           .score_answers(items)]
    for scores in (sim, mix):
        assert len(set(scores)) == len(scores) and _six(scores), scores
        assert not all(s == round(s, 3) for s in scores), "more than 3 decimals kept"
