"""Planner and pair-generation logic: parsing, matching, the rubric judge, validity, selection."""
import pytest

from tasks.models.judge import EmbeddingJudge, Verdict, parse_digit, parse_digit_list
from tasks.stages.pairs import judge_pairs, parse_answer, select
from tasks.stages.rubrics import match_scores, parse_aspects
from tests.figures import bars_by_tick


@pytest.fixture(scope="module")
def encoder():
    from tasks.models.encoders import Encoder

    return Encoder("embedded:all-MiniLM-L6-v2")


def test_parse_aspects_formats():
    parse = parse_aspects(3)
    assert parse("Sure!\n- Low budget\n* Beginner level.\n1. Vegetarian\n2) Quick") == \
        ["Low budget", "Beginner level", "Vegetarian"]
    assert parse('["cheap", "quiet"]') == ["cheap", "quiet"]
    with pytest.raises(ValueError):
        parse("The user likes cheap things.")


def test_match_scores(encoder):
    rec, prec = match_scores(["Keeps the cost low", "Mentions knitting"], ["Budget under 40 euros", "Low cost"],
                             encoder, threshold=0.5)
    assert rec == 0.5 and prec == 0.5
    assert match_scores(["Low cost"], ["Low cost"], encoder, 0.99) == (1.0, 1.0)


def test_parse_answer_limits_words():
    parse = parse_answer(10)
    assert parse('Reply: "Use a balcony planter."') == "Use a balcony planter."
    assert parse("One two three four five. Six seven eight nine ten eleven twelve.") == "One two three four five."
    with pytest.raises(ValueError, match="no sentence end"):
        parse("one two three four five six seven eight nine ten eleven")
    with pytest.raises(ValueError, match="empty"):
        parse("  Answer:  ")


QUESTION = {"id": "q", "question": "How do I start a vegetable garden?",
            "rubric_aspects": [{"aspect": "Small budget", "evidence": "I only have 40 euros", "reason": ""},
                               {"aspect": "Tiny balcony", "evidence": "my balcony is one metre wide", "reason": ""}]}
FITS = ("With 40 euros you can start small: two cheap pots and seed packets cost little. "
        "On a one metre balcony, grow herbs and cherry tomatoes in a railing planter.")
MISSES = "Rent a tractor, plough half an acre, and install drip irrigation across the whole field for maximum yield."


def test_embedding_judge_prefers_the_answer_that_covers_aspects(encoder):
    judge = EmbeddingJudge(encoder, partly=0.35, well=0.5)
    good, bad = judge.judge([(QUESTION, FITS), (QUESTION, MISSES)])
    assert good.score > bad.score
    assert good.score == sum(good.per_aspect) / 4, "normalised: sum / (2 x #aspects)"


def test_llm_verdict_parsing_and_invalid_counting():
    assert parse_digit("Rating: 2") == 2
    with pytest.raises(ValueError):
        parse_digit("excellent")
    assert parse_digit_list(3)("Scores: [2, 0, 1]") == [2, 0, 1]
    for bad in ("[2, 0]", "[3, 0, 1]", "none"):
        with pytest.raises(ValueError):
            parse_digit_list(3)(bad)
    assert Verdict(None).score is None and not Verdict(None).valid
    assert Verdict([2, 1, 0, 1]).score == 0.5


class FixedJudge:
    def __init__(self, scores):
        self.scores = scores

    def judge(self, items):
        return [Verdict(None) if self.scores[a] is None else Verdict([self.scores[a]]) for _, a in items]


def _pair(qid, chosen, rejected):
    return {"question_id": qid, "domain": "Art", "split": "test", "chosen": chosen, "rejected": rejected,
            "generator": "g", "chosen_words": 1, "rejected_words": 1, "length_ratio": 1.0}


def test_validity_and_selection():
    judge = FixedJudge({"good": 2, "bad": 0, "unparsed": None})
    qs = {q: QUESTION for q in "abcd"}
    pairs = [_pair("a", "good", "bad"), _pair("b", "bad", "good"), _pair("c", "good", "unparsed"),
             _pair("d", None, None)]
    judged = judge_pairs(pairs, qs, judge, "generate")
    assert [p["valid"] for p in judged] == [True, False, False, False]
    assert judged[2]["judge_rejected"] is None, "an unparsed verdict is not scored 0"
    assert [p["question_id"] for p in select(judged, keep_invalid=False)] == ["a"]
    assert [p["question_id"] for p in select(judged, keep_invalid=True)] == ["a", "b", "c"]


def test_pairs_stage_plot_shows_each_sources_judge_means_per_domain(tmp_path, figures):
    """The validity plot read back: a panel per judged source, a chosen and a rejected bar per domain
    at the judge means of metrics/pairs.json, the validity rate in the title."""
    from pathlib import Path

    from tasks.core import layout
    from tasks.stages import pairs
    from tests.stage_project import make_project

    params = make_project(tmp_path, configs=("Lifestyle_and_Personal_Development", "Art_and_Entertainment"), limit=2)
    inputs = {"questions": str(tmp_path / layout.INGEST["questions"]),
              "ranked_profile": str(tmp_path / layout.PROFILES["ranked_profile"]),
              "reference_pairs": str(tmp_path / layout.INGEST["pairs"]), "halves": str(tmp_path / layout.INGEST["halves"])}
    out = {k: str(tmp_path / v) for k, v in layout.PAIRS.items()}
    metrics = pairs.run(params, inputs, out)
    panels = figures[Path(out["plot"]).name]
    assert [ax["title"] for ax in panels] == [f"{s} pairs: validity {metrics[s]['overall']['validity_rate']}"
                                              for s in ("generate", "reference")]
    for ax, source in zip(panels, ("generate", "reference")):
        per = metrics[source]["per_domain"]
        assert set(per) == {"Art", "Lifestyle"}
        for side in ("chosen", "rejected"):
            assert bars_by_tick(ax, side) == pytest.approx({d: per[d][f"judge_{side}_mean"] for d in per}), (source, side)
