"""The BoN stages on a tiny ingested project (dummy LLM as policy, length/random RMs): outputs,
no rubric in the policy prompt, pairwise-only RMs reported, and adding an RM scoring only it
while every sample and verdict is reused (0 new LLM calls, 0 new embeddings)."""
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.downstream import bon
from tasks.core.artifacts import file_hash
from tests.conftest import ROOT
from tests.stage_project import make_project, save_params

BON = {"policy_llm": "test-llm", "prompt": str(ROOT / "prompts" / "bon_policy.txt"), "system_prompt": None, "n": 4, "temperature": 1.0,
       "top_p": 0.9, "max_tokens": 48, "max_words": 60, "profile_k": 5, "max_words_per_post": 60,
       "splits": ["test"], "domains": None, "questions_limit": 2, "strategy": "raw_profile", "max_k": 8,
       "bootstrap": 200, "ci": 0.95,
       "judge": {"kind": "embedding", "encoder": "embedded:all-MiniLM-L6-v2", "partly": 0.35, "well": 0.5}}
CONFIGS = ("Lifestyle_and_Personal_Development", "Art_and_Entertainment")


def project(root: Path, rms: dict) -> dict:
    params = make_project(root, configs=CONFIGS, limit=4)   # 2 of 4 per domain are the downstream half
    params["bon"] = dict(BON)
    params["scoring"]["rms"] = rms
    save_params(root, params)
    return params


def paths(root: Path) -> dict:
    from tasks.core import layout

    r = lambda d: {k: str(root / v) for k, v in d.items()}  # noqa: E731
    return {"inputs": {"questions": str(root / layout.INGEST["questions"]), "halves": str(root / layout.INGEST["halves"]),
                       "ranked_profile": str(root / layout.PROFILES["ranked_profile"]),
                       "profile_context": str(root / layout.PROFILES["profile_context"]),
                       "samples": str(root / bon.SAMPLE["samples"]), "judged": str(root / bon.JUDGE["judged"])},
            "sample": r(bon.SAMPLE), "judge": r(bon.JUDGE), "report": r(bon.REPORT),
            "scores": lambda rm: r(bon.scores(rm))}


def run_all(params, p, rms) -> dict:
    from tasks.downstream.bon import judge_stage, report, sample, select

    m = {"sample": sample.run(params, p["inputs"], p["sample"]),
         "judge": judge_stage.run(params, p["inputs"], p["judge"])}
    for rm in rms:
        m[rm] = select.run(params, rm, p["inputs"], p["scores"](rm))
    scores = {rm: p["scores"](rm)["scores"] for rm in rms}
    m["report"] = report.run(params, {**p["inputs"], "scores": scores}, p["report"])
    return m


def test_stages_end_to_end_and_adding_an_rm_reuses_everything(tmp_path, figures):
    params = project(tmp_path, {"length-longer": {"kind": "length-longer"}})
    p = paths(tmp_path)
    first = run_all(params, p, ["length-longer"])

    samples = pq.read_table(p["sample"]["samples"]).to_pylist()
    assert len(samples) == 4 * 4 and first["sample"]["valid"] == 16   # 2 domains × 2 questions × N=4
    assert first["sample"]["run"]["llm:test-llm"]["calls"] == 16
    assert {r["sample_index"] for r in samples} == {0, 1, 2, 3}
    assert first["judge"]["judged"] + first["judge"]["duplicate_answers"] == 16
    assert first["report"]["ks"] == [1, 2, 4] and first["report"]["skipped_ks_above_n"] == [8]
    lines = first["report"]["lines"]
    assert set(lines) == {"length-longer", "(oracle)", "(random)"}
    at = lambda line, k: lines[line]["expected"][str(k)]["score"]  # noqa: E731
    assert at("(oracle)", 4) >= at("length-longer", 4) and at("(oracle)", 4) >= at("(random)", 4)
    assert at("(random)", 1) == pytest.approx(at("length-longer", 1)), "k=1 is a uniform pick for every RM"
    curve = pq.read_table(p["report"]["curve"]).to_pylist()
    assert {r["domain"] for r in curve} == {"all", "Lifestyle", "Art"}
    assert all(r["ci_low"] <= r["judge_score"] <= r["ci_high"] for r in curve)
    (ax,) = figures[Path(p["report"]["plot"]).name]
    drawn = {rm: (x, [round(v, 6) for v in y]) for rm, (x, y) in ax["lines"].items()}
    assert drawn == {rm: ([1.0, 2.0, 4.0], [round(r["judge_score"], 6) for r in sorted(
        (r for r in curve if r["rm"] == rm and r["domain"] == "all" and r["method"] == "expected"), key=lambda r: r["k"])])
        for rm in lines}, "one line per RM and per reference, at the curve's expected judge score for each k"
    kept = {v: file_hash(v) for v in (p["sample"]["samples"], p["judge"]["judged"],
                                      p["scores"]("length-longer")["scores"])}

    params["scoring"]["rms"]["random"] = {"kind": "random"}
    second = run_all(params, p, ["length-longer", "random"])
    assert second["sample"]["run"]["llm:test-llm"]["calls"] == 0, "every sample came from the call cache"
    assert second["sample"]["run"]["llm:test-llm"]["cache_hits"] == 16
    assert second["judge"]["run"]["embeddings"]["encoded"] == 0, "every verdict's embeddings were cached"
    assert {k: file_hash(k) for k in kept} == kept, "samples, verdicts and the old RM's scores are unchanged"
    assert set(second["report"]["lines"]) == {"length-longer", "random", "(oracle)", "(random)"}
    assert second["report"]["lines"]["length-longer"] == lines["length-longer"], "adding an RM moves no other line"


def test_the_policy_answers_only_the_downstream_half(tmp_path):
    """Best-of-N samples the test questions ingest set aside for downstream, never the half the benchmark scores
    (questions_limit off: with it, both halves held as many questions per domain)."""
    from tasks.core import halves
    from tasks.downstream.bon import sample

    params = project(tmp_path, {"length-longer": {"kind": "length-longer"}})
    params["bon"].update(questions_limit=None, n=1)
    p = paths(tmp_path)
    split = halves.read(p["inputs"]["halves"])
    down = {q for q, h in split.items() if h == halves.DOWNSTREAM}
    assert down and {q for q, h in split.items() if h == halves.BENCHMARK}
    metrics = sample.run(params, p["inputs"], p["sample"])
    assert {r["question_id"] for r in pq.read_table(p["sample"]["samples"]).to_pylist()} == down
    assert metrics["questions"] == len(down)


def test_policy_prompt_never_holds_the_rubric_or_narrative(tmp_path):
    from tasks.core.artifacts import read_table
    from tasks.downstream.bon.sample import pick_questions, policy_prompts

    params = project(tmp_path, {})
    p = paths(tmp_path)
    questions = pick_questions(read_table(p["inputs"]["questions"], "questions").to_pylist(), params["bon"])
    prompts = policy_prompts(questions, read_table(p["inputs"]["ranked_profile"], "ranked_profile").to_pylist(),
                             params["bon"])
    assert len(questions) == 4 and {q["split"] for q in questions} == {"test"}
    for q, m in zip(questions, prompts):
        text = m[0]["content"]
        assert q["question"] in text and q["narrative"] not in text
        assert not any(a["aspect"] in text or a["evidence"] in text for a in q["rubric_aspects"])


def test_pairwise_only_rm_is_reported_not_bon_capable(tmp_path):
    from tasks.downstream.bon import report, sample, select

    params = project(tmp_path, {"pw": {"kind": "judge-pairwise", "llm": "test-llm"}})
    params["bon"]["n"] = 2
    p = paths(tmp_path)
    sample.run(params, p["inputs"], p["sample"])
    from tasks.downstream.bon import judge_stage

    judge_stage.run(params, p["inputs"], p["judge"])
    m = select.run(params, "pw", p["inputs"], p["scores"]("pw"))
    assert not m["bon_capable"] and "pairwise-only" in m["not_capable_reason"]
    assert pq.read_table(p["scores"]("pw")["scores"]).num_rows == 0
    rep = report.run(params, {**p["inputs"], "scores": {"pw": p["scores"]("pw")["scores"]}}, p["report"])
    assert rep["not_bon_capable"] == ["pw"] and "pw" not in rep["lines"]


def test_a_chunk_scored_alone_gives_the_rows_the_stage_writes(tmp_path, monkeypatch):
    """What a Dask or Ray worker runs (select.score_chunk, the RM built there from params): the same scores,
    truncation flags, kind and identity as the stage's own run, its counters under `run`."""
    from tasks.downstream.bon import sample, select
    from tasks.models import chunks

    params = project(tmp_path, {"length-longer": {"kind": "length-longer"},
                                "pw": {"kind": "judge-pairwise", "llm": "test-llm"}})
    p = paths(tmp_path)
    sample.run(params, p["inputs"], p["sample"])
    select.run(params, "length-longer", p["inputs"], p["scores"]("length-longer"))
    stage = {(r["question_id"], r["sample_index"]): (r["score"], r["truncated"])
             for r in pq.read_table(p["scores"]("length-longer")["scores"]).to_pylist()}
    plan = select.plan(params, "length-longer", p["inputs"])
    assert plan and plan[0]["start"] == 0
    got = [select.score_chunk(params, "length-longer", p["inputs"], c, key={"t": 1}) for c in plan]
    assert {r["kind"] for r in got} == {"length-longer"} and all("run" in r and r["not_capable"] is None for r in got)
    by_hash = {(q, h): (s, t) for r in got for q, h, s, t in r["scores"]}
    samples = pq.read_table(p["sample"]["samples"]).to_pylist()
    assert {(r["question_id"], r["sample_index"]): by_hash[(r["question_id"], r["answer_hash"])]
            for r in samples if r["valid"]} == stage
    rm, _ = chunks.built_rm(params, "length-longer", {"t": 1})   # the worker's RM, built once per process
    assert {r["identity"] for r in got} == {rm.identity()}
    from tasks.models.rms.base import AnswerScore

    monkeypatch.setattr(rm, "score_answers", lambda items: [AnswerScore(1.0, truncated=len(t) % 2 == 1)
                                                            for _, _, t in items])
    cut = select.score_chunk(params, "length-longer", p["inputs"], plan[0], key={"t": 1})
    texts = {(r["question_id"], r["answer_hash"]): r["text"] for r in samples if r["valid"]}
    assert [t for _, _, _, t in cut["scores"]] == [len(texts[(q, h)]) % 2 == 1 for q, h, _, _ in cut["scores"]]
    pw = select.score_chunk(params, "pw", p["inputs"], {"start": 0, "stop": 2}, key={"t": 1})
    assert pw["scores"] == [] and "pairwise-only" in pw["not_capable"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_flows_cache_and_adding_an_rm_runs_only_its_bon_score(tmp_path, monkeypatch, prefect_harness):
    from flows.stage import flow_of
    bon_judge_flow = flow_of("bon_judge")
    bon_report_flow = flow_of("bon_report")
    bon_sample_flow = flow_of("bon_sample")
    bon_score_flow = flow_of("bon_score")
    from flows.common import main

    params = project(tmp_path, {"length-longer": {"kind": "length-longer"}})
    monkeypatch.chdir(tmp_path)

    def repro(rms):
        assert main(bon_sample_flow) == 0 and main(bon_judge_flow) == 0
        assert all(main(bon_score_flow, rm=rm) == 0 for rm in rms) and main(bon_report_flow) == 0

    repro(["length-longer"])
    fixed = [bon.SAMPLE["samples"], bon.JUDGE["judged"], bon.scores("length-longer")["scores"]]
    stamps = {f: Path(f).stat().st_mtime_ns for f in fixed}
    params["scoring"]["rms"]["random"] = {"kind": "random"}
    save_params(tmp_path, params)
    repro(["length-longer", "random"])
    assert {f: Path(f).stat().st_mtime_ns for f in fixed} == stamps, "only bon_score@random and the report ran"
    assert Path(bon.scores("random")["scores"]).exists()
    assert "random" in json.loads(Path(bon.REPORT["metrics"]).read_text())["lines"]
