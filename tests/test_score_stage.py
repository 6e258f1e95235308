"""The score stage on a small project, outside the dvc end-to-end test: the generic benchmark beside
the personalised one, `per_domain_limit` and the split filter, an unknown RM or benchmark, and the
default pointwise judge (`verdict: logprobs`) scored through the LLM layer's log-probabilities."""
import json
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from tasks.core import layout
from tasks.stages import score
from tasks.core.artifacts import read_table, write_table
from tasks.core.errors import ConfigError
from tasks.models.llm.backends.dummy import DummyBackend
from tasks.core.prompts import render
from tasks.models.rms.base import PairInput
from tasks.models.rms.registry import make_rm
from tasks.models.rms.base import user_message
from tasks.core.runlog import read_counters
from tests.conftest import ROOT
from tests.stage_project import make_project

CONFIGS = ("Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture")
GENERIC_REJECTED = "Just do it."   # 3 words, shorter than every chosen answer of the sample


def _project(root: Path, **scoring) -> dict:
    """3 sample questions per domain and split; selected = the reference pairs of both splits; a
    generic benchmark whose rejected answer is one short, non-personal line."""
    params = make_project(root, configs=CONFIGS, splits=("train", "test"), limit=3)
    pairs = read_table(root / layout.INGEST["pairs"], "pairs").to_pylist()
    write_table([{**p, "source": "reference", "judge_chosen": 1.0, "judge_rejected": 0.0, "valid": True}
                 for p in pairs], root / layout.PAIRS["selected_pairs"], "judged_pairs")
    write_table([{**p, "rejected": GENERIC_REJECTED, "rejected_words": 3, "length_ratio": p["chosen_words"] / 3,
                  "generator": "test:generic", "source": "generic", "judge_chosen": 1.0, "judge_rejected": 0.0,
                  "valid": True} for p in pairs if p["split"] == "test"],
                root / layout.GENERIC_PAIRS["generic_pairs"], "judged_pairs")
    params["scoring"] = {"splits": ["test"], "per_domain_limit": None, "benchmarks": ["personalised", "generic"],
                         "strategies": ["none", "oracle"], "generic_strategies": ["raw_profile"],
                         "rms": {"longer": {"kind": "length-longer"}}, **scoring}
    return params


def _inputs(root: Path) -> dict:
    return {"questions": str(root / layout.INGEST["questions"]),
            "selected_pairs": str(root / layout.PAIRS["selected_pairs"]),
            "generic_pairs": str(root / layout.GENERIC_PAIRS["generic_pairs"]),
            "profile_context": str(root / layout.PROFILES["profile_context"]),
            "inferred_rubrics": str(root / layout.RUBRICS["inferred_rubrics"])}


def _run(root: Path, params: dict, rm: str = "longer") -> tuple[dict, list[dict], dict]:
    out = {k: str(root / v) for k, v in layout.scores(rm).items()}
    metrics = score.run(params, rm, _inputs(root), out)
    return metrics, read_table(out["scores"], "scores").to_pylist(), out


def _words(text: str) -> int:
    return len(text.split())


def test_generic_benchmark_is_scored_beside_the_personalised_one(tmp_path):
    params = _project(tmp_path)
    metrics, rows, out = _run(tmp_path, params)
    selected = [p for p in read_table(tmp_path / layout.PAIRS["selected_pairs"], "judged_pairs").to_pylist()
                if p["split"] == "test"]
    by_kind = defaultdict(list)
    for r in rows:
        by_kind[(r["benchmark"], r["strategy"])].append(r)
    # personalised pairs under every strategy; the generic ones under generic_strategies only
    assert sorted(by_kind) == [("generic", "raw_profile"), ("personalised", "none"), ("personalised", "oracle")]
    ids = [p["question_id"] for p in selected]
    assert all([r["question_id"] for r in group] == ids for group in by_kind.values())
    want = {p["question_id"]: _words(p["chosen"]) > _words(p["rejected"]) for p in selected}
    assert [r["correct"] for r in by_kind[("personalised", "none")]] == [want[i] for i in ids]
    assert all(r["correct"] and r["score_rejected"] == 3.0 for r in by_kind[("generic", "raw_profile")])
    assert {r["rm"] for r in rows} == {"longer"} and all(r["split"] == "test" for r in rows)
    summary = metrics["strategies"]
    assert set(summary) == {"generic/raw_profile", "personalised/none", "personalised/oracle"}
    generic = summary["generic/raw_profile"]
    assert (generic["pairs"], generic["correct"], generic["ties"], generic["invalid"], generic["accuracy_strict"]) == \
        (9, 9, 0, 0, 1.0)
    assert summary["personalised/none"]["correct"] == sum(want.values())
    written = json.loads(Path(out["metrics"]).read_text())
    assert written["strategies"] == summary and "run" not in written


def test_per_domain_limit_keeps_the_first_pairs_of_each_domain_in_the_split(tmp_path):
    params = _project(tmp_path, per_domain_limit=2, benchmarks=["personalised"], strategies=["none"])
    _, rows, _ = _run(tmp_path, params)
    kept, seen = [], defaultdict(int)
    for p in read_table(tmp_path / layout.PAIRS["selected_pairs"], "judged_pairs").to_pylist():
        if p["split"] == "test":
            seen[p["domain"]] += 1
            if seen[p["domain"]] <= 2:
                kept.append(p["question_id"])
    assert len(kept) == 6 and [r["question_id"] for r in rows] == kept
    assert {r["domain"] for r in rows} == {"Art", "Lifestyle", "Society"}


def test_unknown_rm_or_benchmark_is_one_config_error_and_writes_nothing(tmp_path):
    params = _project(tmp_path)
    with pytest.raises(ConfigError, match=r"^scoring.rms: unknown name 'lnger' \(did you mean 'longer'\?\)"):
        _run(tmp_path, params, rm="lnger")
    params["scoring"]["benchmarks"] = ["personalised", "generc"]
    with pytest.raises(ConfigError, match=r"^scoring.benchmarks: unknown name 'generc' \(did you mean 'generic'\?\)"):
        _run(tmp_path, params)
    assert not (tmp_path / layout.SCORES_DIR).exists(), "no partial scores"


# --- the default pointwise judge: verdict from log-probabilities ---------------------------------

# the embedded pointwise judge (the default lists it in a comment only, to save its calls)
POINTWISE = ("smollm2-pointwise", {"kind": "judge-pointwise", "llm": "smollm2", "verdict": "logprobs"})


def _default_pointwise_entry() -> tuple[str, dict]:
    rms = yaml.safe_load((ROOT / "params.yaml").read_text())["scoring"]["rms"]
    name, entry = next(((n, e) for n, e in rms.items() if e["kind"] == "judge-pointwise"), POINTWISE)
    assert entry.get("verdict", "logprobs") == "logprobs", "the embedded pointwise judge uses log-probabilities"
    return name, entry


def test_default_pointwise_judge_scores_log_odds_of_yes_through_the_dummy_backend(tmp_path):
    name, entry = _default_pointwise_entry()
    params = _project(tmp_path, benchmarks=["personalised"], strategies=["none"], rms={name: {**entry, "llm": "test-llm"}})
    _, rows, out = _run(tmp_path, params, rm=name)
    pairs = {p["question_id"]: p for p in read_table(tmp_path / layout.PAIRS["selected_pairs"], "judged_pairs").to_pylist()}
    questions = {q["id"]: q["question"] for q in read_table(tmp_path / layout.INGEST["questions"], "questions").to_pylist()}
    prompt = entry.get("prompt", "prompts/rm_pointwise.txt")
    backend = DummyBackend()

    def log_odds(qid, answer):   # what the backend itself says for that answer's prompt (no context: strategy none)
        lp = backend.choice_logprobs(render(str(ROOT / prompt), user=user_message(questions[qid], ""), answer=answer),
                                     ["Yes", "No"])
        return round(lp["Yes"] - lp["No"], 6)

    assert len(rows) == 9 and all(not r["invalid"] for r in rows)
    for r in rows:
        p = pairs[r["question_id"]]
        assert (r["score_chosen"], r["score_rejected"]) == (log_odds(p["question_id"], p["chosen"]),
                                                            log_odds(p["question_id"], p["rejected"]))
        assert r["correct"] == (r["score_chosen"] > r["score_rejected"])
    assert len({r["score_chosen"] for r in rows}) > 3, "real, distinct scores"
    counters = read_counters(out["metrics"])["llm:test-llm"]
    assert (counters["calls"], counters["cache_hits"]) == (18, 0)   # one log-prob call per answer
    _run(tmp_path, params, rm=name)
    again = read_counters(out["metrics"])["llm:test-llm"]
    assert (again["calls"], again["cache_hits"]) == (0, 18)


class _YesForGood:
    """An LLM whose next-token log-probs say Yes to an answer marked GOOD and No otherwise; it can
    only answer log-prob requests, so a judge that generated a reply instead would fail here."""

    class backend:
        @staticmethod
        def identity():
            return "scripted:yes-for-good"

    def __init__(self):
        self.asked = []

    def choice_logprobs(self, messages, choices):
        self.asked.append(choices)
        good = "GOOD" in messages[0]["content"]
        return {"Yes": -0.1 if good else -3.0, "No": -3.0 if good else -0.1}


class _Res:
    seed = 5

    def __init__(self, llm):
        self._llm = llm

    def llm(self, name):
        return self._llm


def test_pointwise_logprobs_verdict_prefers_the_answer_the_model_says_yes_to():
    name, entry = _default_pointwise_entry()
    llm = _YesForGood()
    rm = make_rm(name, {**entry, "llm": "x"}, _Res(llm))
    pairs = [PairInput("q1", "Q?", "ctx", "a GOOD answer", "a plain answer"),
             PairInput("q2", "Q?", "ctx", "a plain answer", "a GOOD answer")]
    first, second = rm.score_pairs(pairs)
    assert (first.chosen.score, first.rejected.score) == (pytest.approx(2.9), pytest.approx(-2.9))
    assert second.chosen.score < second.rejected.score
    assert llm.asked == [["Yes", "No"]] * 4
    bare = make_rm("bare", {"kind": "judge-pointwise", "llm": "x"}, _Res(llm))   # no verdict given: log-probs too
    assert [s.chosen.score > s.rejected.score for s in bare.score_pairs(pairs)] == [True, False]
