"""The generic_pairs stage on a tiny project: the same chosen, a rejected written from the question
alone (dummy backend) or taken from another user (degraded, deterministic); unparsed generations
kept with their raw text and counted, never in the benchmark."""
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.stages import generic_pairs
from tasks.core import layout
from tasks.core.artifacts import file_hash, read_table, write_table
from tasks.core.errors import ConfigError
from tasks.models.llm import Completion
from tasks.core.runlog import read_counters
from tests.conftest import ROOT
from tests.stage_project import make_project, save_params

GENERIC = {"mode": "generate", "llm": "test-llm", "prompt": str(ROOT / "prompts/pair_generic.txt"), "splits": ["test"],
           "questions_limit": None, "per_domain_limit": 4, "max_words": 100, "temperature": 0.0, "top_p": 1.0,
           "max_tokens": 140,
           "parse_retries": 1, "temperature_bump": 0.3}


def project(root: Path, limit=3, configs=("Lifestyle_and_Personal_Development",), **generic) -> dict:
    """Ingested sample + selected pairs = the reference pairs (as the pairs stage selects them by default)."""
    params = make_project(root, limit=limit, configs=configs)
    params["generic_pairs"] = {**params["generic_pairs"], **GENERIC, **generic}
    save_params(root, params)
    reference = read_table(root / layout.INGEST["pairs"], "pairs").to_pylist()
    write_table([{**r, "source": "reference", "judge_chosen": 1.0, "judge_rejected": 0.0, "valid": True}
                 for r in reference], root / layout.PAIRS["selected_pairs"], "judged_pairs")
    return params


def paths(root: Path):
    inputs = {"questions": str(root / layout.INGEST["questions"]), "selected_pairs": str(root / layout.PAIRS["selected_pairs"])}
    out = {"generic_pairs": str(root / "data/pairs/generic.parquet"), "generated": str(root / "data/pairs/generic_generated.parquet"),
           "metrics": str(root / "metrics/generic_pairs.json")}
    return inputs, out


def run(root: Path, params: dict) -> dict:
    inputs, out = paths(root)
    return generic_pairs.run(params, inputs, out)


def test_generate_mode_with_the_dummy_backend(tmp_path):
    params = project(tmp_path)
    metrics = run(tmp_path, params)
    _, out = paths(tmp_path)
    selected = {r["question_id"]: r for r in pq.read_table(tmp_path / layout.PAIRS["selected_pairs"]).to_pylist()}
    rows = read_table(out["generic_pairs"], "judged_pairs").to_pylist()
    assert len(rows) == 3 and {r["source"] for r in rows} == {"generic"}
    for r in rows:
        assert r["chosen"] == selected[r["question_id"]]["chosen"]
        assert r["rejected"] and r["rejected"] != r["chosen"] and r["generator"] == "dummy:dummy"
        assert r["judge_chosen"] is not None and r["judge_rejected"] is not None
    assert metrics["mode"] == "generate" and metrics["usable"] == 3 and metrics["invalid"] == 0
    assert metrics["generic"]["overall"]["pairs"] == 3
    assert read_counters(out["metrics"])["llm:test-llm"]["calls"] == 3
    assert "run" not in json.loads(Path(out["metrics"]).read_text()), "counters stay out of DVC metrics"


class RecordingLLM:
    """Records prompts; replies with `reply(question_text)`."""

    class backend:
        @staticmethod
        def identity():
            return "fake:recorder"

    def __init__(self, reply):
        self.reply, self.prompts = reply, []

    def generate_many(self, requests, progress=None):
        self.prompts += [messages[-1]["content"] for messages, _, _ in requests]
        return [Completion(self.reply(messages[-1]["content"]), 1, 1, 0.0) for messages, _, _ in requests]


def test_the_generator_sees_the_question_only_and_unparsed_replies_are_kept_not_invented(tmp_path, monkeypatch):
    params = project(tmp_path)
    questions = {q["id"]: q for q in read_table(tmp_path / layout.INGEST["questions"], "questions").to_pylist()}
    first = sorted(questions)[0]
    rambling = " ".join(["word"] * 300)   # over max_words with no sentence end: never parses
    fake = RecordingLLM(lambda prompt: rambling if questions[first]["question"] in prompt else "A short general answer.")
    monkeypatch.setattr("tasks.models.resources.Resources.llm", lambda self, name: fake)
    metrics = run(tmp_path, params)
    for q in questions.values():
        prompt = next(p for p in fake.prompts if q["question"] in p)
        assert all(a["aspect"] not in prompt and a["evidence"] not in prompt for a in q["rubric_aspects"])
        assert q["narrative"] not in prompt and "past posts" not in prompt
    _, out = paths(tmp_path)
    generated = {r["question_id"]: r for r in read_table(out["generated"], "generated_pairs").to_pylist()}
    bad = generated[first]
    assert bad["rejected"] is None and not bad["format_ok"] and bad["rejected_raw"] == rambling
    assert bad["error"].startswith("parse:") and bad["attempts"] == 2
    usable = read_table(out["generic_pairs"], "judged_pairs").to_pylist()
    assert first not in {r["question_id"] for r in usable} and len(usable) == 2
    assert {r["rejected"] for r in usable} == {"A short general answer."}
    assert metrics["invalid"] == 1 and metrics["invalid_reasons"] == {"parse": 1} and metrics["usable"] == 2


def test_degraded_mode_is_deterministic_and_uses_another_users_answer(tmp_path):
    runs = []
    for name in ("one", "two"):
        root = tmp_path / name
        root.mkdir()
        params = project(root, mode="degraded", llm="no-such-llm")   # degraded never builds an LLM
        metrics = run(root, params)
        runs.append({k: file_hash(v) for k, v in paths(root)[1].items() if v.endswith(".parquet")})
    assert runs[0] == runs[1]
    assert metrics["generator"] == "degraded" and metrics["run"].get("llm:no-such-llm") is None
    selected = {r["question_id"]: r for r in pq.read_table(root / layout.PAIRS["selected_pairs"]).to_pylist()}
    for r in read_table(paths(root)[1]["generic_pairs"], "judged_pairs").to_pylist():
        donor = r["generator"].removeprefix("degraded:chosen-of:")
        assert donor != r["question_id"] and r["rejected"] == selected[donor]["chosen"]
        assert selected[donor]["domain"] == r["domain"] and selected[donor]["split"] == r["split"]
    assert generic_pairs.donor_index(1, "q", 7) == generic_pairs.donor_index(1, "q", 7)


def test_degraded_without_a_donor_is_counted_not_filled(tmp_path):
    params = project(tmp_path, limit=1, mode="degraded")   # one question per domain: nobody to borrow from
    metrics = run(tmp_path, params)
    generated = read_table(paths(tmp_path)[1]["generated"], "generated_pairs").to_pylist()
    assert len(generated) == 1 and generated[0]["rejected"] is None and "no other question" in generated[0]["error"]
    assert metrics["invalid"] == 1 and metrics["usable"] == 0
    assert read_table(paths(tmp_path)[1]["generic_pairs"], "judged_pairs").num_rows == 0


def test_bad_mode_and_empty_split_fail_with_one_line(tmp_path):
    params = project(tmp_path, mode="paraphrase")
    with pytest.raises(ConfigError, match="generic_pairs.mode: unknown mode 'paraphrase'"):
        run(tmp_path, params)
    params["generic_pairs"].update(mode="degraded", splits=["validation"])
    with pytest.raises(ConfigError, match="no selected pairs in validation"):
        run(tmp_path, params)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_flow_under_prefect(tmp_path, monkeypatch, prefect_harness):
    from flows.common import main
    from flows.stage import flow_of
    generic_pairs_flow = flow_of("generic_pairs")

    project(tmp_path, mode="degraded")
    _, out = paths(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(generic_pairs_flow) == 0
    assert read_table(layout.GENERIC_PAIRS["generic_pairs"], "judged_pairs").num_rows == 3
