"""The statistics against small cases computed by hand: Krippendorff's alpha, the Wilcoxon
signed-rank test, the rank-biserial effect size, mean ± sd over item means, the parity verdict."""
import math

import pytest

from tasks.stages.human_eval import DIMENSIONS, PERSONAL
from tasks.stages.human_eval.analysis import (describe, krippendorff_alpha, parity, proxy_vs_human, rank_biserial,
                                       signed_rank, summarize)


def test_alpha_is_one_for_identical_annotators():
    same = [1, 3, 5, 2, 4, 4]
    assert krippendorff_alpha([same, same, same], "ordinal", [1, 2, 3, 4, 5]) == 1.0


def test_ordinal_alpha_by_hand():
    # Two coders, units (1,1) (2,2) (3,3) (1,2). Coincidences: o11=o22=o33=2, o12=o21=1; n1=3, n2=3, n3=2, n=8.
    # Ordinal d²(c,k) = (sum_{g=c..k} n_g - (n_c+n_k)/2)²: d12 = (6-3)² = 9, d13 = (8-2.5)² = 30.25, d23 = (5-2.5)² = 6.25.
    # alpha = 1 - (n-1) * sum o*d / sum n_c n_k d = 1 - 7*(2*9) / (2*(9*9 + 6*30.25 + 6*6.25)) = 1 - 126/600 = 0.79
    assert krippendorff_alpha([[1, 2, 3, 1], [1, 2, 3, 2]], "ordinal", [1, 2, 3, 4, 5]) == 0.79


def test_alpha_undefined_cases_are_none():
    assert krippendorff_alpha([[4, 4, 4]], "ordinal", [1, 2, 3, 4, 5]) is None           # one coder
    assert krippendorff_alpha([[4, math.nan], [math.nan, 5]], "ordinal") is None        # no unit rated twice


def test_wilcoxon_and_rank_biserial_by_hand():
    chosen, rejected = [5, 4, 5, 3, 4.5], [1, 2, 2, 4, 2]
    # d = 4, 2, 3, -1, 2.5 -> ranks of |d|: 5, 2, 4, 1, 3. W+ = 14, W- = 1.
    # Exact two-sided p: of the 2^5 sign patterns, W- <= 1 for {} and {1}: p = 2 * 2/32 = 0.125.
    # Rank-biserial (W+ - W-) / (W+ + W-) = 13/15.
    res = signed_rank(chosen, rejected)
    assert res["statistic"] == 1.0 and res["p_value"] == 0.125 and res["nonzero"] == 5
    assert res["rank_biserial"] == round(13 / 15, 4)
    assert rank_biserial(rejected, chosen) == pytest.approx(-13 / 15)


def test_no_difference_gives_no_test_rather_than_a_crash():
    res = signed_rank([4, 5, 3], [4, 5, 3])
    assert res == {"n": 3, "nonzero": 0, "statistic": None, "p_value": None, "rank_biserial": None}


def ratings(table: dict, annotator="a", domain="Art") -> list[dict]:
    """{(item, side, dim): score} -> rating rows."""
    return [{"annotator": annotator, "item_id": i, "side": s, "dimension": d, "score": v, "domain": domain}
            for (i, s, d), v in table.items()]


def test_describe_averages_annotators_per_item_first():
    rs = ratings({("i1", "chosen", PERSONAL): 5, ("i2", "chosen", PERSONAL): 3}, "a")
    rs += ratings({("i1", "chosen", PERSONAL): 3}, "b")
    # item means: i1 = 4, i2 = 3 -> mean 3.5, sd (ddof 1) = sqrt(0.5)
    got = describe(rs)[PERSONAL]["all"]["chosen"]
    assert got == {"mean": 3.5, "sd": round(math.sqrt(0.5), 4), "n": 2}


def _desc(general: tuple, personal: tuple) -> dict:
    d = {dim: {"all": {"chosen": {"mean": general[0]}, "rejected": {"mean": general[1]}}} for dim in DIMENSIONS}
    d[PERSONAL] = {"all": {"chosen": {"mean": personal[0]}, "rejected": {"mean": personal[1]}}}
    return d


def test_parity_verdicts():
    holds = parity(_desc((4.6, 4.5), (4.85, 1.45)), 0.5, 1.0)
    assert holds["holds"] is True and holds["general_gap"] == 0.1 and holds["personal_gap"] == 3.4
    assert holds["within_paper_range"] == {"general_chosen": True, "general_rejected": True,
                                           "personal_chosen": True, "personal_rejected": True}
    assert parity(_desc((4.9, 3.9), (4.8, 1.5)), 0.5, 1.0)["verdict"].startswith("fails: general")
    assert parity(_desc((4.5, 4.5), (4.0, 3.8)), 0.5, 1.0)["verdict"].startswith("fails: personal")
    empty = {dim: {} for dim in DIMENSIONS}
    assert parity(empty, 0.5, 1.0)["verdict"] == "insufficient data"


def test_summary_counts_invalid_ratings_but_never_uses_them():
    rs = ratings({("i1", "chosen", PERSONAL): 5, ("i1", "rejected", PERSONAL): None})
    s = summarize(rs, 0.5, 1.0)
    assert s["ratings"] == 1 and s["invalid_ratings"] == 1
    assert s["per_dimension"][PERSONAL]["all"]["rejected"]["mean"] is None


def test_proxy_against_human_mean():
    human = ratings({(f"i{k}", "chosen", PERSONAL): 1 + k % 5 for k in range(6)}, "h1")
    human += ratings({(f"i{k}", "chosen", PERSONAL): 1 + k % 5 for k in range(6)}, "h2")
    perfect = ratings({(f"i{k}", "chosen", PERSONAL): 1 + k % 5 for k in range(6)}, "proxy")
    got = proxy_vs_human(perfect, human)[PERSONAL]
    assert got == {"units": 6, "alpha_interval": 1.0, "spearman": 1.0}
    assert proxy_vs_human(perfect, human)["factuality"] == {"units": 0, "alpha_interval": None, "spearman": None}
