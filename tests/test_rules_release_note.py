"""A release's note (docs/releases.md): its rank among the micro accuracies of `releases.rank_strategy`, best
first, equal accuracies by RM name, unscored RMs last; the change is the new accuracy minus the previous one."""
from __future__ import annotations

import pytest

from tasks.ops import release_note


def _row(rm, acc, strategy="none", domain="micro"):
    return {"rm": rm, "strategy": strategy, "domain": domain, "accuracy": acc,
            "ci_low": None if acc is None else acc - 0.1, "ci_high": None if acc is None else acc + 0.1, "n": 10}


def test_the_ranking_is_best_first_equal_accuracies_by_name_unscored_last():
    rows = [_row("zeta", 0.6), _row("none-yet", None), _row("alpha", 0.6), _row("zero", 0.0), _row("top", 0.9),
            _row("alpha", 0.1, strategy="raw_profile"), _row("top", 0.1, domain="Art")]
    assert [r["rm"] for r in release_note.ranking(rows, "none")] == ["top", "alpha", "zeta", "zero", "none-yet"]


def test_a_release_tied_with_an_earlier_name_ranks_after_it_and_its_change_is_new_minus_old():
    before = [_row("alpha", 0.6), _row("beta", 0.7)]
    after = [_row("beta", 0.6), _row("alpha", 0.6)]
    s = release_note.summary(before, after, "beta", "none")
    assert (s["rank"], s["of"], s["previous_rank"]) == (2, 2, 1)
    assert s["change"] == pytest.approx(-0.1)
    assert "change vs previous version: -0.100 (was 0.700, rank 1)" in release_note.markdown(s, "acme/beta", "abc")
