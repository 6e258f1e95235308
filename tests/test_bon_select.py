"""BoN selection rules: first_k ties to the earliest sample, the closed-form expected best-of-k (RM ties
split evenly) against brute force over every subset, k > N skipped or clipped, unusable candidates excluded,
an RM's failed score ranked last (never skipped)."""
import itertools
import random

import pytest

from tasks.downstream.bon.report import ORACLE, RANDOM, ks_for, per_question_rows
from tasks.downstream.bon.select import best_of_k, first_k_pick, pick_probabilities, uniform_pick

CANDS = [(0, 0.5), (1, 0.9), (2, 0.9), (3, 0.1)]
JUDGE = {0: 0.2, 1: 0.6, 2: 1.0, 3: 0.0}


def test_first_k_picks_the_best_of_the_first_k_and_ties_go_to_the_earliest():
    assert [first_k_pick(CANDS, k) for k in (1, 2, 3, 4, 9)] == [0, 1, 1, 1, 1]
    assert [best_of_k(CANDS, JUDGE, k, "first_k") for k in (1, 2, 3)] == [0.2, 0.6, 0.6]


def test_unusable_candidates_are_excluded_not_scored():
    without_first = CANDS[1:]   # sample 0 invalid (or unscored): it is simply not a candidate
    assert first_k_pick(without_first, 1) is None
    assert best_of_k(without_first, JUDGE, 1, "first_k") is None
    assert first_k_pick(without_first, 2) == 1
    assert best_of_k([], {}, 4, "expected") is None
    assert uniform_pick({}, 1, "expected") is None


def brute_force(cands, judge, k):
    """Every size-k subset; a tie for its best RM score splits the pick evenly among the tied samples."""
    subsets = list(itertools.combinations(cands, k))
    total = 0.0
    for s in subsets:
        best = [i for i, v in s if v == max(v for _, v in s)]
        total += sum(judge[i] for i in best) / len(best)
    return total / len(subsets)


@pytest.mark.parametrize("seed", range(40))
def test_expected_best_of_k_equals_brute_force_over_all_subsets(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 8)
    indices = sorted(rng.sample(range(12), n))        # gaps: invalid samples left out
    cands = [(i, float(rng.choice([0, 1, 1, 2, 3]))) for i in indices]   # many ties
    judge = {i: rng.random() for i in indices}
    for k in range(1, n + 1):
        assert best_of_k(cands, judge, k, "expected") == pytest.approx(brute_force(cands, judge, k), abs=1e-12)
        assert sum(pick_probabilities(cands, k).values()) == pytest.approx(1.0)


def test_an_rm_tie_favours_no_sample_index():
    """Two samples the RM cannot tell apart: either order of their indices gives the same expectation."""
    judge = {0: 1.0, 1: 0.0, 2: 0.5}
    tied = [(0, 0.7), (1, 0.7), (2, 0.1)]
    swapped = {0: 0.0, 1: 1.0, 2: 0.5}
    for k in (1, 2, 3):
        assert best_of_k(tied, judge, k, "expected") == pytest.approx(best_of_k(tied, swapped, k, "expected"))
    assert pick_probabilities(tied, 3) == {0: 0.5, 1: 0.5, 2: 0.0}


def test_expected_edges():
    assert best_of_k(CANDS, JUDGE, 1, "expected") == pytest.approx(sum(JUDGE.values()) / 4)   # k=1: uniform
    assert best_of_k(CANDS, JUDGE, 4, "expected") == 0.8        # k=N: samples 1 and 2 tie for best: half each
    assert best_of_k(CANDS, JUDGE, 99, "expected") == 0.8       # k > N': clipped to N'


def test_ks_are_powers_of_two_up_to_n_and_larger_ones_are_skipped():
    assert ks_for(16, 128) == ([1, 2, 4, 8, 16], [32, 64, 128])
    assert ks_for(4, 4) == ([1, 2, 4], [])
    assert ks_for(5, 6) == ([1, 2, 4], [])
    assert ks_for(0, 8) == ([], [1, 2, 4, 8])


def _sample(q, i, valid=True):
    return {"question_id": q, "domain": "Art", "sample_index": i, "valid": valid,
            "answer_hash": f"{q}-{i}" if valid else None}


def test_per_question_rows_count_every_exclusion_and_draw_reference_lines():
    samples = [_sample("q1", 0), _sample("q1", 1, valid=False), _sample("q1", 2), _sample("q1", 3),
               _sample("q2", 0), _sample("q2", 1)]
    judged = {("q1", "q1-0"): 0.2, ("q1", "q1-2"): 1.0, ("q1", "q1-3"): None,   # q1-3: unparseable verdict
              ("q2", "q2-0"): 0.5, ("q2", "q2-1"): 0.25}
    rm = {("q1", 0): 3.0, ("q1", 2): 1.0, ("q1", 3): 9.0, ("q2", 0): None, ("q2", 1): None}
    rows, excluded = per_question_rows(samples, judged, {"rm": rm}, [1, 2, 4])
    assert excluded["rm"] == {"invalid_samples": 1, "no_rm_score": 2, "no_judge_score": 1,
                              "questions_without_candidates": 0, "questions_without_rm_score": 1}
    assert excluded[ORACLE]["no_judge_score"] == 1 and excluded[ORACLE]["no_rm_score"] == 0
    get = {(r["rm"], r["question_id"], r["k"], r["method"]): r["judge_score"] for r in rows}
    assert get[("rm", "q1", 1, "first_k")] == 0.2 and get[("rm", "q1", 4, "first_k")] == 0.2   # 3.0 beats 1.0
    assert get[("rm", "q1", 4, "expected")] == 0.2                                             # clipped to N'=2
    assert get[("rm", "q1", 1, "expected")] == pytest.approx(0.6)
    assert get[("rm", "q2", 4, "expected")] == 0.25            # no RM score at all: the question's worst, counted
    assert get[(ORACLE, "q1", 4, "expected")] == 1.0 and get[(ORACLE, "q2", 1, "first_k")] == 0.5
    assert get[(RANDOM, "q2", 4, "expected")] == pytest.approx(0.375) == get[(RANDOM, "q2", 1, "expected")]


def test_an_infinite_rm_score_neither_wins_nor_counts_as_scored():
    """+inf would win every Best-of-k: like NaN, neither inf is a score; the candidate stays, ranked below every
    finite one, and among failures the worst by the judge is picked."""
    samples = [_sample("q1", 0), _sample("q1", 1), _sample("q1", 2)]
    judged = {("q1", "q1-0"): 0.2, ("q1", "q1-1"): 1.0, ("q1", "q1-2"): 0.6}
    rm = {("q1", 0): float("inf"), ("q1", 1): float("-inf"), ("q1", 2): 0.5}
    rows, excluded = per_question_rows(samples, judged, {"rm": rm}, [1, 2, 4])
    assert excluded["rm"]["no_rm_score"] == 2
    get = {(r["k"], r["method"]): r["judge_score"] for r in rows if r["rm"] == "rm"}
    assert get[(4, "first_k")] == 0.6    # the one finite candidate
    assert get[(2, "first_k")] == 0.2    # samples 0 and 1 both failed: the worst of them
    assert get[(1, "expected")] == pytest.approx((0.2 + 1.0 + 0.6) / 3)   # k = 1: every candidate equally
