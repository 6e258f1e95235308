"""docs/statistics.md#human-evaluation, the parity verdict: the general gap is AT MOST human_eval.general_gap_max
and chosen - rejected on personal fit is AT LEAST human_eval.personal_gap_min; the personal gap is signed, so a
rejected answer that fits the user better fails however large the gap. Cases exactly on both thresholds."""
from tasks.stages.human_eval import DIMENSIONS, PERSONAL
from tasks.stages.human_eval.analysis import parity


def _desc(general: tuple, personal: tuple) -> dict:
    d = {dim: {"all": {"chosen": {"mean": general[0]}, "rejected": {"mean": general[1]}}} for dim in DIMENSIONS}
    d[PERSONAL] = {"all": {"chosen": {"mean": personal[0]}, "rejected": {"mean": personal[1]}}}
    return d


def test_gaps_exactly_on_both_thresholds_hold():
    got = parity(_desc((4.5, 4.0), (4.0, 3.0)), general_gap_max=0.5, personal_gap_min=1.0)
    assert (got["general_gap"], got["personal_gap"], got["holds"]) == (0.5, 1.0, True)


def test_just_past_either_threshold_fails_naming_it():
    general = parity(_desc((4.5, 3.75), (4.0, 3.0)), 0.5, 1.0)
    assert general["holds"] is False and general["verdict"].startswith("fails: general")
    personal = parity(_desc((4.5, 4.0), (4.0, 3.25)), 0.5, 1.0)
    assert personal["holds"] is False and personal["verdict"].startswith("fails: personal")


def test_a_rejected_answer_that_fits_better_fails_however_large_the_gap():
    got = parity(_desc((4.5, 4.5), (1.5, 4.75)), 0.5, 1.0)
    assert got["personal_gap"] == -3.25 and got["holds"] is False
    assert got["verdict"].startswith("fails: personal")


def test_rank_biserial_drops_zero_differences_as_the_wilcoxon_beside_it_does():
    from tasks.stages.human_eval.analysis import rank_biserial, signed_rank

    chosen, rejected = [5, 4, 3, 4], [1, 4, 4, 2]
    # d = 4, 0, -1, 2; the zero dropped: ranks of |d| 3, 1, 2, W+ = 5, W- = 1, r = 4/6 (with it kept: 5/10)
    assert rank_biserial(chosen, rejected) == 4 / 6
    res = signed_rank(chosen, rejected)
    assert (res["n"], res["nonzero"], res["statistic"], res["rank_biserial"]) == (4, 3, 1.0, round(4 / 6, 4))
