"""RewardBench 2's published rule, side by side with reward-bench's own functions: their outputs on
tied scores, zero spreads, missing spreads and a k-way tie at the top were recorded by running the
`rewardbench` 0.1.4 package's process_single_model and reroll_and_score_dataset (the command is in
the file; tests/tools/record_rb2_official.py), and prbench's Ties and best-of-N rules must equal them."""
import json

import pytest

from tasks.stages.benchmarks.rewardbench2 import best_of_n, ties_score
from tests.conftest import ROOT

OFFICIAL = json.loads((ROOT / "tests" / "data" / "rb2_official.json").read_text())


def _row(item_id, scores, num_correct, subset="Ties"):
    return {"item_id": item_id, "subset": subset, "method": "pointwise", "invalid": False,
            "scores_correct": [float(x) for x in scores[:num_correct]],
            "scores_incorrect": [float(x) for x in scores[num_correct:]]}


@pytest.mark.parametrize("case", sorted(OFFICIAL["ties"]))
def test_ties_equal_reward_benchs_process_single_model(case):
    want = OFFICIAL["ties"][case]
    got = ties_score([_row(*item) for item in want["items"]])
    if want["score"] is None:   # theirs: NaN (no prompt with a spread to compare)
        assert got is None
    else:
        assert got == round(want["score"], 4), case


def test_a_tie_at_the_top_is_worth_1_over_k_as_in_reroll_and_score_dataset():
    for case in OFFICIAL["best_of_n"]:
        assert best_of_n(_row("0", case["scores"], 1, "Math")) == pytest.approx(case["result"]), case["scores"]


def test_the_recording_says_how_it_was_made():
    assert OFFICIAL["made_by"].startswith("python tests/tools/record_rb2_official.py")
    assert OFFICIAL["package"] == "rewardbench 0.1.4 (PyPI)" and len(OFFICIAL["utils_py_sha256"]) == 64
