"""bon_score's own run (select.run, in process) on a hand-built project: every field of its metrics and every
row of its scores table worked out from the inputs — invalid samples, failed and non-finite RM scores,
truncation, a pairwise-only RM, a planner whose plan failed, the strategy checks — plus the small selection
edges (no pick from an empty subset)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tasks.core.artifacts import read_table, write_table
from tasks.core.errors import ConfigError
from tasks.downstream.bon import select
from tasks.models.rms.base import AnswerScore, RewardModel
from tasks.models.rms.registry import KINDS
from tests.conftest import ROOT

QUESTIONS = {"q1": "Which paint for a first mural?", "q2": "How to price a commission?"}
POSTS = {"q1": "Post 1: I paint walls.", "q2": "Post 1: I sell sketches."}
# (question, sample_index, text): the scripted RM reads its score from the first word ("none" = no score),
# "cut" = it truncated the context; None = the policy call failed (an invalid sample)
SAMPLES = [("q1", 0, "3"), ("q1", 1, None), ("q1", 2, "nan"), ("q1", 3, "1 cut"), ("q1", 4, "4"),
           ("q2", 0, "inf"), ("q2", 1, "none cut"), ("q2", 2, None), ("q2", 3, "2"), ("q2", 4, "2")]
DISTINCT = 7   # valid answers, q2's two "2" being one answer


class Scripted(RewardModel):
    kind = "scripted-bon"
    seen: list = []

    def identity(self) -> str:
        return "scripted-bon:v1"

    def score_answers(self, items):
        out = []
        for q, c, a in items:
            type(self).seen.append((q, c, a))
            word = a.split()[0]
            out.append(AnswerScore(None if word == "none" else float(word), truncated="cut" in a))
        return out


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setitem(KINDS, Scripted.kind, Scripted)
    monkeypatch.setattr(Scripted, "seen", [])
    return Scripted


def _hash(q, text):
    return None if text is None else f"h-{q}-{text}"   # the same text under one question: one answer


def project(tmp_path, strategy="raw_profile", rms=None, fidelity="corrected", inferred=None, rubric_splits=("test",)):
    questions = [{"id": q, "domain": "Art", "split": "test", "category": "c", "question": text,
                  "narrative": "never shown", "rubric_aspects": []} for q, text in QUESTIONS.items()]
    context = [{"question_id": q, "retriever": "bm25", "k": 1, "item_ids": ["p1"], "profile_text": t}
               for q, t in POSTS.items()]
    samples = [{"question_id": q, "domain": "Art", "split": "test", "sample_index": i, "text": t,
                "valid": t is not None, "error": "" if t else "policy failed", "generator": "dummy",
                "answer_hash": _hash(q, t), "finish_reason": "stop" if t else None} for q, i, t in SAMPLES]
    inputs = {k: str(tmp_path / f"{k}.parquet") for k in ("questions", "profile_context", "samples")}
    write_table(questions, inputs["questions"], "questions")
    write_table(context, inputs["profile_context"], "profile_context")
    write_table(samples, inputs["samples"], "bon_samples")
    if inferred is not None:
        inputs["inferred_rubrics"] = str(tmp_path / "inferred.parquet")
        write_table([{"question_id": q, "domain": "Art", "split": "test", "aspects": a, "valid": a is not None,
                      "attempts": 1, "error": "", "raw_text": "", "generator": "dummy"} for q, a in inferred.items()],
                    inputs["inferred_rubrics"], "inferred_rubrics")
    params = {"common": {"seed": 0, "cache_dir": str(tmp_path / "cache"), "fidelity": fidelity},
              "scale": {"chunk_size": 3}, "bon": {"strategy": strategy, "splits": ["test"]},
              "rubrics": {"splits": list(rubric_splits)},
              "scoring": {"rms": rms or {"scripted": {"kind": Scripted.kind}}},
              "llms": {"test-llm": {"backend": "dummy", "model": "dummy"}}}
    out = {"scores": str(tmp_path / "scores.parquet"), "metrics": str(tmp_path / "bon_score.json")}
    return params, inputs, out


def table(out):
    return read_table(out["scores"], "bon_scores").to_pylist()


def written(out):
    return json.loads(Path(out["metrics"]).read_text(encoding="utf-8"))


@pytest.mark.parametrize("fidelity, header", [("corrected", "My past posts:\n"), ("release", "")],
                         ids=["corrected", "release"])
def test_metrics_and_rows_count_every_sample_as_the_rules_say(tmp_path, scripted, fidelity, header):
    params, inputs, out = project(tmp_path, fidelity=fidelity)
    m = select.run(params, "scripted", inputs, out)
    want = {"rm": "scripted", "kind": "scripted-bon", "identity": "scripted-bon:v1", "strategy": "raw_profile",
            "evaluation_only": False, "samples": 10, "invalid_samples": 2, "bon_capable": True,
            "not_capable_reason": None,
            "scored": 5,            # 3, 1, 4 on q1; q2's "2" twice
            "no_score": 3,          # NaN, inf and no score at all; the 2 invalid samples are not "no score"
            "truncated": 2,         # a cut context counts whether or not a score came back
            "planner_failed_questions": 0,
            "run": {"chunks": {"total": 3, "cached": 0, "this process": 3}}}   # 7 distinct answers, 3 a chunk
    assert m == want
    assert written(out) == {k: v for k, v in want.items() if k != "run"}, "the tracked file: results, no counters"
    rows = table(out)
    assert all(r["rm"] == "scripted" and r["strategy"] == "raw_profile" for r in rows)
    got = [(r["question_id"], r["sample_index"], r["score"], r["truncated"]) for r in rows]
    nan = got.pop(2)
    assert nan[:2] == ("q1", 2) and math.isnan(nan[2]) and nan[3] is False
    assert got == [("q1", 0, 3.0, False), ("q1", 1, None, False), ("q1", 3, 1.0, True), ("q1", 4, 4.0, False),
                   ("q2", 0, math.inf, False), ("q2", 1, None, True), ("q2", 2, None, False),
                   ("q2", 3, 2.0, False), ("q2", 4, 2.0, False)]
    # each distinct answer scored once, with its question and the posts under the run's fidelity
    assert sorted(scripted.seen) == sorted({(QUESTIONS[q], header + POSTS[q], t) for q, _, t in SAMPLES if t})
    assert len(scripted.seen) == DISTINCT


def test_planner_counts_only_its_sampled_questions_whose_plan_failed(tmp_path, scripted):
    # q2's plan never parsed (scored with the question only); q3's failed too but BoN never sampled it
    params, inputs, out = project(tmp_path, "planner", inferred={"q1": ["Budget", "Tone"], "q2": None, "q3": None})
    m = select.run(params, "scripted", inputs, out)
    assert (m["strategy"], m["planner_failed_questions"], m["scored"], m["no_score"]) == ("planner", 1, 5, 3)
    assert {r["strategy"] for r in table(out)} == {"planner"}
    assert {(q, c) for q, c, _ in scripted.seen} == {(QUESTIONS["q1"], "What I expect in an answer: Budget; Tone"),
                                                     (QUESTIONS["q2"], "")}


def test_planner_without_rubrics_for_the_bon_split_is_refused_naming_bon_strategy(tmp_path, scripted):
    params, inputs, out = project(tmp_path, "planner", inferred={"q1": ["Budget"]}, rubric_splits=("train",))
    with pytest.raises(ConfigError, match=r"^bon\.strategy: 'planner' needs planner rubrics for split 'test'"):
        select.run(params, "scripted", inputs, out)


def test_the_gold_rubric_strategy_is_refused_naming_bon_strategy(tmp_path, scripted):
    params, inputs, out = project(tmp_path, "oracle")
    with pytest.raises(ConfigError, match=r"^bon\.strategy: 'oracle' is evaluation-only"):
        select.run(params, "scripted", inputs, out)


def test_a_pairwise_only_rm_is_not_bon_capable_and_writes_no_rows(tmp_path):
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm

    entry = {"kind": "judge-pairwise", "llm": "test-llm", "prompt": str(ROOT / "prompts" / "rm_pairwise.txt")}
    params, inputs, out = project(tmp_path, rms={"pw": entry})
    m = select.run(params, "pw", inputs, out)
    assert m.pop("run")["chunks"] == {"total": 1, "cached": 0, "this process": 1}   # no answers to cut: one call
    assert m == {"rm": "pw", "kind": "judge-pairwise", "identity": make_rm("pw", entry, Resources(params)).identity(),
                 "strategy": "raw_profile", "evaluation_only": False, "samples": 10, "invalid_samples": 2,
                 "bon_capable": False, "not_capable_reason": "judge-pairwise: pairwise-only, no score for an answer "
                 "on its own", "scored": 0, "no_score": 0, "truncated": 0, "planner_failed_questions": 0}
    assert table(out) == []


def test_a_kind_that_declines_pointwise_scoring_reports_its_own_reason(tmp_path, monkeypatch):
    class NeedsReference(Scripted):
        kind = "needs-reference"

        def score_answers(self, items):
            raise NotImplementedError("needs-reference: scores an answer only against a reference answer")

    monkeypatch.setitem(KINDS, NeedsReference.kind, NeedsReference)
    params, inputs, out = project(tmp_path, rms={"ref": {"kind": "needs-reference"}})
    m = select.run(params, "ref", inputs, out)
    assert (m["bon_capable"], m["not_capable_reason"]) == (False, "needs-reference: scores an answer only against "
                                                                  "a reference answer")
    assert (m["scored"], m["no_score"], m["truncated"]) == (0, 0, 0) and table(out) == []


def test_a_rerun_in_one_process_scores_with_the_model_as_it_is_now(tmp_path, monkeypatch):
    """The stage builds its RM for each run: retrained weights under the same entry are never a stale copy."""
    class Weighted(Scripted):
        kind = "weighted-bon"
        OPTIONS = {"weights": str}

        def __init__(self, name, entry):
            super().__init__(name, entry)
            self.offset = float(open(entry["weights"], encoding="utf-8").read())

        def identity(self):
            return f"weighted-bon:{self.offset}"

        def score_answers(self, items):
            return [AnswerScore(self.offset) for _ in items]

    monkeypatch.setitem(KINDS, Weighted.kind, Weighted)
    weights = tmp_path / "weights.txt"
    params, inputs, out = project(tmp_path, rms={"w": {"kind": "weighted-bon", "weights": str(weights)}})
    for offset in ("1", "10"):
        weights.write_text(offset)
        assert select.run(params, "w", inputs, out)["identity"] == f"weighted-bon:{float(offset)}"
        assert {r["score"] for r in table(out) if r["score"] is not None} == {float(offset)}


def test_a_bad_entry_fails_naming_its_rm(tmp_path, scripted):
    params, inputs, out = project(tmp_path, rms={"scripted": {"kind": Scripted.kind, "temprature": 0}})
    with pytest.raises(ConfigError, match=r"^scoring\.rms\.scripted\.temprature: not an option"):
        select.run(params, "scripted", inputs, out)


def test_chunks_from_two_different_models_are_refused_and_nothing_is_written(tmp_path, scripted):
    params, inputs, out = project(tmp_path)
    chunk = {"scores": [], "not_capable": None, "kind": "scripted-bon", "run": {}}
    two = lambda cs: [{**chunk, "identity": "scripted-bon:v1", "worker": "a"},  # noqa: E731
                      {**chunk, "identity": "scripted-bon:v2", "worker": "b"}]
    with pytest.raises(ConfigError, match=r"^scoring\.rms\.scripted: workers built different models"):
        select.run(params, "scripted", inputs, out, map_chunks=two)
    assert not (tmp_path / "scores.parquet").exists()


def test_on_a_terminal_the_bar_counts_chunks_under_the_stage_and_rm(tmp_path, scripted, monkeypatch, capsys):
    monkeypatch.setattr("tasks.core.progress.shown", lambda: True)
    params, inputs, out = project(tmp_path)
    assert select.run(params, "scripted", inputs, out)["scored"] == 5
    err = capsys.readouterr().err
    assert "bon_score scripted" in err and "?chunk/s" in err


def test_no_pick_from_an_empty_subset():
    cands = [(0, 0.5), (1, 0.9)]
    assert select.pick_probabilities(cands, 0) == {} == select.pick_probabilities(cands, -1)
    assert select.pick_probabilities([], 2) == {}
    assert select.best_of_k(cands, {0: 0.1, 1: 0.7}, 0, "expected") is None
