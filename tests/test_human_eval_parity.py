"""Human-eval parity and its tests (issue 11 item 10): the general-quality gap is the mean of
per-item |chosen - rejected| (gaps of opposite sign on different items cannot cancel), the four
Wilcoxon p-values come raw and Holm-corrected, and a tiny p-value is never printed as 0."""
import json

import pytest

from tasks.stages.human_eval import DIMENSIONS, GENERAL, PERSONAL
from tasks.stages.human_eval.analysis import holm, summarize


def ratings(table: dict) -> list[dict]:
    return [{"annotator": "a", "item_id": i, "side": s, "dimension": d, "score": v, "domain": "Art"}
            for (i, s, d), v in table.items()]


def _items(n, general, personal=(5, 1)):
    """n items; general(i) -> (chosen, rejected) on every general dimension."""
    table = {}
    for i in range(n):
        for d in GENERAL:
            table[(f"i{i}", "chosen", d)], table[(f"i{i}", "rejected", d)] = general(i)
        table[(f"i{i}", "chosen", PERSONAL)], table[(f"i{i}", "rejected", PERSONAL)] = personal
    return ratings(table)


def test_per_item_gaps_of_opposite_sign_do_not_cancel():
    swings = _items(10, lambda i: (5, 3) if i % 2 else (3, 5))   # equal means, every item 2 apart
    parity = summarize(swings, 0.5, 1.0)["parity"]
    assert parity["general_gap_of_means"] == 0.0 and parity["general_gap"] == 2.0
    assert parity["holds"] is False and parity["verdict"].startswith("fails: general")
    steady = summarize(_items(10, lambda i: (5, 5)), 0.5, 1.0)["parity"]
    assert steady["general_gap"] == 0.0 and steady["holds"] is True


def test_holm_by_hand():
    raw = {"factuality": 0.01, "relevance": 0.04, "helpfulness": 0.03, "personal_fit": 0.001, "none": None}
    # sorted: 0.001 x 4 = 0.004; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04 -> 0.06 (monotone)
    assert holm(raw) == pytest.approx({"personal_fit": 0.004, "factuality": 0.03, "helpfulness": 0.06,
                                       "relevance": 0.06, "none": None})


def test_tiny_p_values_keep_their_precision_and_come_with_holm():
    s = summarize(_items(30, lambda i: (4 + i % 2, 4)), 0.5, 1.0)
    w = s["wilcoxon"][PERSONAL]
    assert 0 < w["p_value"] < 1e-6, "30 items all 4 points apart: a tiny p, not 0.0"
    assert "e-" in json.dumps(w["p_value"])
    assert w["p_holm"] == pytest.approx(4 * w["p_value"]), "the smallest of four p-values, times 4"
    general = s["wilcoxon"]["factuality"]
    assert general["p_holm"] == pytest.approx(3 * general["p_value"]) and general["p_holm"] > general["p_value"]
    assert all("p_holm" in s["wilcoxon"][d] for d in DIMENSIONS)
