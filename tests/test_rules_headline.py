"""The headline card's null-baseline range (docs/statistics.md#leaderboard, "The headline": "per strategy their
range (lowest–highest micro accuracy; the RMs at either end on hover)"): where several null baselines share the
lowest or the highest value, the one named is the first by name at either end, whatever order the board lists
them in."""
from tests.test_rules_report import _board


def test_a_tie_at_either_end_of_the_null_range_names_the_first_by_name():
    rows = [("real", "none", 0.9), ("zz-coin", "none", 0.6), ("aa-coin", "none", 0.6), ("mm-coin", "none", 0.6),
            ("zz-short", "none", 0.3), ("bb-short", "none", 0.3)]
    kinds = {rm: "random" for rm, _, _ in rows if rm != "real"}
    (got,) = _board(rows, {}, kinds=kinds)["nulls"]["ranges"]
    assert got["title"] == "lowest bb-short 0.3, highest aa-coin 0.6"
    assert got["text"] == "30.0–60.0%" and got["rms"] == 5
