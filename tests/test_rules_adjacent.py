"""docs/statistics.md#leaderboard, "Adjacent RMs": each RM is tested against the one ranked next by micro accuracy,
best first, EQUAL accuracies in name order (a before b); "above" only where the HOLM p over the strategy's adjacent
tests is below alpha. The cases sit where the neighbours part: three RMs of one accuracy (name order decides who
is tested against whom), and two tests whose raw p (0.031) is below 0.05 while Holm's (0.0625) is not."""
import pytest

from tasks.stages import adjacent as A
from tasks.stages.leaderboard import credits, leaderboard_rows
from tests.test_rules_tests import _rows

P = {"tie_policy": "strict", "bootstrap": 50, "ci": 0.95, "split": None}


def _tests(scores, p=P):
    return A.adjacent_tests(scores, leaderboard_rows(scores, p, 1), p, credits)["tests"]["none"]


def test_equal_accuracies_are_ranked_by_name_and_each_is_tested_against_the_next_name():
    scores = _rows("b", [1, 0, 1, 0]) + _rows("c", [0, 1, 0, 1]) + _rows("a", [1, 1, 0, 0]) + _rows("top", [1, 1, 1, 1])
    got = [(t["rank"], t["rm"], t["next"]) for t in _tests(scores)]
    assert got == [(1, "top", "a"), (2, "a", "b"), (3, "b", "c")]
    b_vs_c = _tests(scores)[2]
    assert b_vs_c["discordant"] == [2, 2] and b_vs_c["difference"] == 0.0


def test_above_the_next_needs_the_holm_p_below_alpha_not_the_raw_p():
    scores = _rows("A", [1] * 12) + _rows("B", [0] * 6 + [1] * 6) + _rows("C", [0] * 12)
    tests = _tests(scores)
    assert [(t["rm"], t["next"], t["discordant"]) for t in tests] == [("A", "B", [6, 0]), ("B", "C", [6, 0])]
    for t in tests:
        assert t["p"] == pytest.approx(2 * 0.5 ** 6, abs=1e-6) and t["p"] < 0.05
        assert t["p_holm"] == pytest.approx(2 * 2 * 0.5 ** 6, abs=1e-6)
        assert t["significant"] is False, "raw p 0.031 < 0.05, but p (Holm over 2 tests) 0.0625 is not"
    looser = _tests(scores, {**P, "ci": 0.9})
    assert all(t["significant"] for t in looser), "alpha = 1 - ci = 0.1: 0.0625 is below it"


def _in_domains(rm, per_domain: dict):
    return [{**r, "domain": d, "question_id": f"{d}-{r['question_id']}"} for d, credit in per_domain.items()
            for r in _rows(rm, credit)]


def test_the_board_order_is_micro_accuracy_even_where_macro_orders_otherwise():
    # X: 4 of 5 pairs (micro 0.8), domains 1.0 and 0.0 (macro 0.5); Y: 3 of 5 (micro 0.6), domains 0.5 and 1.0 (0.75)
    scores = _in_domains("X", {"d1": [1, 1, 1, 1], "d2": [0]}) + _in_domains("Y", {"d1": [1, 1, 0, 0], "d2": [1]})
    (t,) = _tests(scores)
    assert (t["rm"], t["next"], t["difference"]) == ("X", "Y", 0.2)
