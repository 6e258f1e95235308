"""An other benchmark by its publisher's own score (tasks/downstream/correlation/published.py): each RM's number is
the importer's published score over that RM's rows of the asked strategy (the "none" rows where the benchmark
has no such strategy; no number for an RM not scored under it), a fixed number per RM labelled with the rule, the RM's kind kept (null baselines are
told apart by it). Worked out by hand on RewardBench 2's best-of-4 rule."""
from __future__ import annotations

import pytest

from tasks.core.artifacts import write_table
from tasks.core.errors import ConfigError
from tasks.downstream.correlation import published


def _row(rm, strategy, item, correct, incorrect, kind="seq-cls"):
    return {"rm": rm, "benchmark": "rb2", "source": "rewardbench2", "rm_kind": kind, "rm_identity": rm,
            "strategy": strategy, "item_id": item, "subset": "Math", "split": "test", "n_correct": 1,
            "n_incorrect": len(incorrect), "method": "pointwise", "scores_correct": correct,
            "scores_incorrect": incorrect, "margins": [], "correct": None, "tie": None, "tie_credit": None,
            "invalid": False, "chance": 0.25, "truncated": False, "input_hashes": []}


@pytest.fixture
def folders(tmp_path):
    folder = tmp_path / "bench_scores" / "rb2"
    folder.mkdir(parents=True)
    write_table([_row("rm-b", "none", "m1", [0.9], [0.1, 0.2, 0.3]), _row("rm-b", "none", "m2", [0.1], [0.9, 0.2, 0.3]),
                 _row("rm-b", "raw_profile", "m1", [0.9], [0.1, 0.9, 0.3]), _row("rm-b", "raw_profile", "m2", [0.9], [0.1, 0.2, 0.3])],
                folder / "rm-b.parquet", "list_scores")
    write_table([_row("length", "none", "m1", [0.5], [0.5, 0.5, 0.5], kind="length-longer")],   # one row only
                folder / "length.parquet", "list_scores")
    return {"rb2": str(folder)}


def test_each_rm_gets_its_published_score_of_the_asked_strategy(folders):
    side = published.load_published(["rb2"], folders, "raw_profile")["rb2:published"]
    # rm-b, raw_profile: m1 top shared by two -> 1/2, m2 right -> 1: mean 0.75. length (sorted first) has no raw_profile rows: no
    # number (not its "none" one beside the others' raw_profile ones), and no crash
    assert side.fixed == {"rm-b": 0.75} and side.kinds == {"rm-b": "seq-cls"}
    assert side.source == "published" and side.rule.startswith("RewardBench 2 (rewardbench 0.1.4 run_v2)")
    assert published.label(side) == f"published: {side.rule}"
    none = published.load_published(["rb2"], folders, "none")["rb2:published"]
    assert none.fixed == {"rm-b": 0.5, "length": 0.25}, "rm-b: m1 right, m2 wrong; length: all four tied at the top, 1/4"
    assert none.kinds == {"rm-b": "seq-cls", "length": "length-longer"}


def test_names_split_and_an_entry_without_scores_is_refused(folders):
    assert published.split_names(["personalised", "rb2:published", "generic"]) == (["personalised", "generic"], ["rb2"])
    with pytest.raises(ConfigError, match=r"correlation.benchmarks: 'rb3:published': no bench_score output for it; "
                                          r".*did you mean 'rb2'"):
        published.load_published(["rb3"], folders, "none")


def test_a_benchmark_without_the_asked_strategy_gives_its_none_numbers(tmp_path):
    folder = tmp_path / "rb2"
    folder.mkdir()
    write_table([_row("rm-b", "none", "m1", [0.9], [0.1, 0.9, 0.3])], folder / "rm-b.parquet", "list_scores")
    side = published.load_published(["rb2"], {"rb2": str(folder)}, "raw_profile")["rb2:published"]
    assert side.fixed == {"rm-b": 0.5}, "no user history in it: every RM by its none rows"
