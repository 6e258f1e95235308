"""The error analysis (tasks/stages/explain/): the length bias the definitions imply for the null baselines,
scored by the real baseline RMs on the bundled sample's test pairs; the leaderboard's accuracy recovered; the
explorer's outcome predicates per scope; the gain from the profile per pair; CIs and "too few"; the word diff."""
import json

import numpy as np
import pytest

from tasks.core.rm_labels import CONTESTANT, NULL_BASELINE
from tasks.models.rms.registry import make_rm
from tasks.stages import leaderboard
from tasks.stages.explain import analysis
from tasks.stages.explain.cells import (CHOSEN_LONGER, CHOSEN_SHORTER, DISAGREE, EQUAL, EVERY_WRONG, LONGER_REJECTED,
                                        ONLY_WITH, ONLY_WITHOUT, cells, length_relation, pair_outcomes, words)
from tasks.stages.explain.diff import word_diff
from tasks.stages.explain.pairs import profile_bins
from tasks.stages.score import score_rows
from tests.conftest import SAMPLE

P = {"tie_policy": "strict", "bootstrap": 400, "ci": 0.95, "min_n": 10, "profile_bins": 3, "split": "test"}
DOMAINS = {"Art_and_Entertainment": "Art", "Lifestyle_and_Personal_Development": "Lifestyle", "Society_and_Culture": "Society"}


def sample_pairs() -> tuple[list[dict], dict]:
    """The bundled sample's 30 test pairs (chosen the longer in about half) and their questions."""
    pairs, questions = [], {}
    for config, domain in DOMAINS.items():
        rows = json.loads((SAMPLE / "pairs" / f"{config}_test.json").read_text(encoding="utf-8"))
        qs = {q["id"]: q for q in json.loads((SAMPLE / "lamp_qa" / f"{config}_test.json").read_text(encoding="utf-8"))}
        for r in rows:
            pairs.append({"question_id": r["id"], "domain": domain, "split": "test", "chosen": r["chosen"],
                          "rejected": r["rejected"]})
            questions[r["id"]] = {**qs[r["id"]], "domain": domain}
    return pairs, questions


def facts(pairs: list[dict], questions: dict) -> list[dict]:
    return [{"question_id": p["question_id"], "length_relation": length_relation(p["chosen"], p["rejected"]),
             "category": questions[p["question_id"]]["category"], "profile_posts": len(questions[p["question_id"]]["profile"]),
             "profile_bin": "all"} for p in pairs]


def scored(rms: dict, pairs, questions, strategies=("none",)) -> list[dict]:
    """Real score rows: each RM of `rms` (name -> params entry) through the score stage's own function."""
    return [r for name, entry in rms.items() for s in strategies
            for r in score_rows(make_rm(name, entry, None), "personalised", s, pairs, questions,
                                {q: "" for q in questions})]


@pytest.fixture(scope="module")
def baselines():
    pairs, questions = sample_pairs()
    rms = {"length-longer": {"kind": "length-longer"}, "length-shorter": {"kind": "length-shorter"},
           "random": {"kind": "random", "seed": 7}}
    rows = facts(pairs, questions)
    cs = cells(scored(rms, pairs, questions), {r["question_id"]: r["length_relation"] for r in rows}, "strict",
               {rm: NULL_BASELINE for rm in rms})
    return analysis.analyse(cs, rows, P, 2604), rows


def test_length_baselines_pick_the_longer_answer_as_their_definitions_say(baselines):
    metrics, rows = baselines
    unequal = sum(r["length_relation"] != EQUAL for r in rows)
    assert 0 < sum(r["length_relation"] == CHOSEN_LONGER for r in rows) < unequal, "the sample has both kinds of pair"
    longer = metrics["rms"]["length-longer"]["strategies"]["none"]
    shorter = metrics["rms"]["length-shorter"]["strategies"]["none"]
    assert longer["picked_longer"] == {"value": 1.0, "n": unequal, "ci": [1.0, 1.0], "status": "ok"}
    assert shorter["picked_longer"] == {"value": 0.0, "n": unequal, "ci": [0.0, 0.0], "status": "ok"}
    # accuracy when the chosen is the longer answer minus when it is the shorter: +100 pp and -100 pp
    assert longer["accuracy_by_length"][CHOSEN_LONGER]["value"] == 1.0 == shorter["accuracy_by_length"][CHOSEN_SHORTER]["value"]
    assert longer["length_gap"]["value"] == 1.0 and shorter["length_gap"]["value"] == -1.0
    rnd = metrics["rms"]["random"]["strategies"]["none"]["picked_longer"]["value"]
    assert 0.2 < rnd < 0.8, "a coin per answer has no length preference"


def test_the_analysis_accuracy_is_the_leaderboards_micro_accuracy_under_each_tie_policy():
    pairs, questions = sample_pairs()
    for p in pairs[::3]:   # equal lengths: the length rules tie on these pairs
        p["rejected"] = " ".join(p["chosen"].split()[:-1] + ["other."])
    rows = facts(pairs, questions)
    scores = scored({"length-longer": {"kind": "length-longer"}, "random": {"kind": "random"}}, pairs, questions)
    assert any(r["tie"] for r in scores)
    for policy in leaderboard.POLICIES:
        cs = cells(scores, {r["question_id"]: r["length_relation"] for r in rows}, policy, {})
        ours = analysis.analyse(cs, rows, {**P, "tie_policy": policy}, 1)
        board = leaderboard.leaderboard_rows(scores, {**P, "tie_policy": policy}, 1)
        for r in (r for r in board if r["domain"] == leaderboard.MICRO):
            e = ours["rms"][r["rm"]]["strategies"][r["strategy"]]["accuracy"]
            assert (e["value"], e["n"]) == (r["accuracy"], r["n"]), (policy, r["rm"])


def test_a_margin_is_chosen_minus_rejected_and_right_means_the_chosen_won():
    pairs, questions = sample_pairs()
    rows = facts(pairs, questions)
    cs = cells(scored({"length-longer": {"kind": "length-longer"}}, pairs, questions),
               {r["question_id"]: r["length_relation"] for r in rows}, "strict", {})
    by_id = {p["question_id"]: p for p in pairs}
    for c in cs:
        p = by_id[c["question_id"]]
        assert c["margin"] == words(p["chosen"]) - words(p["rejected"])
        assert c["right"] == (c["margin"] > 0) and c["tie"] == (c["margin"] == 0)
        assert c["picked_longer"] is (None if c["margin"] == 0 else True)


def test_length_relation_counts_words_as_the_length_rules_do():
    assert length_relation("one two  three", "four five six") == EQUAL, "as many words: neither is longer"
    assert length_relation("a b c d", "a b c") == CHOSEN_LONGER and length_relation("a b", "a b c") == CHOSEN_SHORTER
    assert length_relation("a\nb\tc", "abc def") == CHOSEN_LONGER, "whitespace of any kind splits words"
    rm = make_rm("length-longer", {"kind": "length-longer"}, None)
    text = " lead\tand\n trail  words "
    assert rm.score_answers([("q", "", text)])[0].score == words(text) == 4


def _cell(q, rm, s, right):
    return {"question_id": q, "rm": rm, "strategy": s, "right": right}


def test_outcomes_follow_the_scope_of_rms_and_strategies():
    rights = {("a", "none"): False, ("a", "raw_profile"): True, ("b", "none"): False, ("b", "raw_profile"): False,
              ("a", "planner"): False, ("b", "planner"): False}
    both = ["a", "b"]
    assert pair_outcomes(rights, both, ["planner"], CHOSEN_LONGER) == {EVERY_WRONG}
    assert pair_outcomes(rights, both, ["none"], CHOSEN_LONGER) == {EVERY_WRONG}
    assert pair_outcomes(rights, both, ["raw_profile"], CHOSEN_LONGER) == {DISAGREE, ONLY_WITH}
    assert pair_outcomes(rights, ["b"], ["raw_profile"], CHOSEN_LONGER) == {EVERY_WRONG}, "b alone: wrong everywhere"
    assert pair_outcomes(rights, both, ["none", "raw_profile", "planner"], CHOSEN_SHORTER) == \
        {DISAGREE, ONLY_WITH, LONGER_REJECTED}
    assert pair_outcomes({("a", "none"): True, ("a", "planner"): False}, ["a"], ["planner"], EQUAL) == \
        {EVERY_WRONG, ONLY_WITHOUT}
    assert pair_outcomes({("a", "none"): True, ("a", "planner"): True}, ["a"], ["planner"], EQUAL) == set()
    mixed = {("a", "none"): True, ("a", "raw_profile"): True, ("a", "planner"): False}
    assert pair_outcomes(mixed, ["a"], ["none", "raw_profile", "planner"], EQUAL) == {ONLY_WITHOUT}, \
        "wrong under one profile strategy: right only without it there"
    assert pair_outcomes({}, ["a"], ["none"], CHOSEN_SHORTER) == {LONGER_REJECTED}, "not scored: no RM was wrong"


def test_the_profile_gain_counts_pairs_right_only_with_and_only_without_the_context():
    mine = [{"question_id": q, "right": r} for q, r in [("1", True), ("2", True), ("3", False), ("4", True), ("5", False)]]
    none = {"1": False, "2": True, "3": True, "4": False}   # pair 5 was not scored under none: not paired
    g = analysis.profile_gain(mine, none, {**P, "min_n": 2}, lambda: np.random.default_rng(0))
    assert (g["n"], g["right_only_with"], g["right_only_without"]) == (4, 2, 1)
    assert g["net"]["value"] == 0.25 and g["net"]["ci"] is not None


def test_a_figure_below_min_n_keeps_its_value_and_claims_no_interval():
    rng = lambda: np.random.default_rng(3)  # noqa: E731
    few = analysis.estimate([1, 0, 1], P, rng)
    assert few == {"value": 0.6667, "n": 3, "ci": None, "status": "too few pairs (n = 3 < 10)"}
    assert analysis.estimate([1, 0] * 5, P, rng)["ci"] is not None, "min_n pairs carry a CI"
    enough = analysis.estimate([1, 0] * 10, P, rng)
    assert enough["status"] == "ok" and enough["ci"][0] < 0.5 < enough["ci"][1]
    assert enough == analysis.estimate([1, 0] * 10, P, rng), "seeded: the same interval every time"
    assert analysis.estimate([], P, rng)["status"] == "no pairs"
    gap = analysis.difference([1] * 12, [0] * 3, P, rng)
    assert gap["value"] == 1.0 and gap["ci"] is None and gap["status"] == "too few pairs (n = 3 < 10)"
    assert analysis.difference([1] * 12, [0, 1] * 6, P, rng)["ci"][1] <= 1.0


def test_profile_bins_cut_at_quantiles_of_the_scored_pairs():
    assert profile_bins(list(range(1, 10)), 3) == [(1, 3), (4, 6), (7, 9)]
    assert profile_bins([5, 5, 5, 5], 3) == [(5, 5)], "one size: one bin, never an empty one"
    assert profile_bins([1, 2, 2, 2, 9], 3) == [(1, 2), (9, 9)]
    assert profile_bins([], 3) == []


def test_outcome_counts_are_over_contestants_only():
    cs = [{**_cell("q1", rm, "none", False), "role": role} for rm, role in
          [("a", CONTESTANT), ("b", CONTESTANT), ("length-longer", NULL_BASELINE)]]
    cs += [{**_cell("q2", "a", "none", True), "role": CONTESTANT}, {**_cell("q2", "b", "none", False), "role": CONTESTANT},
           {**_cell("q2", "length-longer", "none", True), "role": NULL_BASELINE}]
    counts = analysis.outcome_counts(cs, {"q1": {"length_relation": EQUAL}, "q2": {"length_relation": EQUAL}}, ["none"])
    assert counts["none"] == {"contestants": 2, "pairs": 2, "every_contestant_wrong": 1, "contestants_disagree": 1}


@pytest.mark.parametrize("a, b", [("The quick brown fox  jumps over the dog.", "The slow brown fox jumps over a lazy dog."),
                                  ("same words here", "same words here"), ("", "all new"), ("  lead and  trail  ", "lead")])
def test_word_diff_marks_exactly_the_words_one_answer_has_alone(a, b):
    ra, rb = word_diff(a, b)
    assert "".join(ra) == a and "".join(rb) == b, "the runs are the answer, whitespace kept"
    shared_a = [w for r in ra[0::2] for w in r.split()]
    assert shared_a == [w for r in rb[0::2] for w in r.split()], "even runs: the same words in both"
    if a.split() == b.split():
        assert not any(r.strip() for r in ra[1::2] + rb[1::2])
    own = {w for r in ra[1::2] for w in r.split()}
    assert own.isdisjoint(set(b.split()) - set(a.split())), "a's own words are a's"


def test_word_diff_of_a_real_pair():
    ra, rb = word_diff("Buy a nylon-string guitar under £150.", "Buy a steel-string guitar with an amp.")
    assert ra == ["Buy a ", "nylon-string ", "guitar ", "under £150."]
    assert rb == ["Buy a ", "steel-string ", "guitar ", "with an amp."]
