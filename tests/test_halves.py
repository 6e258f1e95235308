"""Split-half test questions and split-aware artifacts: scoring reads one half of each domain's test
questions, Best-of-N and RL evaluation the other (seeded, recorded); editing one test answer changes only
what the scoring stages read, so DVC reruns those and the reports, never training or the downstream stages."""
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.core import halves, layout, stage_table as stages
from tasks.core.artifacts import file_hash, read_table
from tests.conftest import ROOT
from tests.stage_project import SAMPLE, project_params

DOMAINS = ("Art", "Lifestyle", "Society")


def _questions(per_domain=10, split="test"):
    return [{"id": f"{d}-{split}-{i}", "domain": d, "split": split} for d in DOMAINS for i in range(per_domain)]


def test_each_domain_splits_in_seeded_disjoint_halves():
    rows = halves.assign(_questions() + _questions(15, "train"), 0.5, seed=2604)
    test = [r for r in rows if r["split"] == "test"]
    for d in DOMAINS:
        mine = [r["half"] for r in test if r["domain"] == d]
        assert sorted(mine) == [halves.BENCHMARK] * 5 + [halves.DOWNSTREAM] * 5, d
    assert {r["half"] for r in rows if r["split"] == "train"} == {halves.BOTH}, "training questions are not split"
    assert halves.assign(_questions() + _questions(15, "train"), 0.5, seed=2604) == rows, "seeded"
    other = halves.assign(_questions(), 0.5, seed=7)
    assert [r["half"] for r in other] != [r["half"] for r in test], "another seed, another split"
    assert {r["half"] for r in halves.assign(_questions(), 0, seed=2604)} == {halves.BOTH}, "0 = no split"
    assert [r["half"] for r in halves.assign(_questions(1), 0.5, seed=1)] == [halves.BENCHMARK] * 3


def test_keep_reads_a_half_and_both():
    by_id = {"a": halves.BENCHMARK, "b": halves.DOWNSTREAM, "c": halves.BOTH}
    rows = [{"id": q} for q in "abc"]
    assert [r["id"] for r in halves.keep(rows, by_id, halves.DOWNSTREAM)] == ["b", "c"]
    assert [r["question_id"] for r in halves.keep([{"question_id": q} for q in "abc"], by_id, halves.BENCHMARK,
                                                  key="question_id")] == ["a", "c"]


def _ingest_and_pairs(root: Path, params: dict) -> dict:
    """ingest and pairs in process (reference pairs, no generation): {artifact path: content hash}."""
    from tasks.stages import ingest, pairs, profiles

    o = lambda d: {k: str(root / v) for k, v in d.items()}  # noqa: E731
    ingest.run(params["ingest"], o(layout.INGEST), params["common"]["seed"])
    profiles.run(params["profiles"], params["common"], {k: o(layout.INGEST)[k] for k in ("questions", "profiles")},
                 o(layout.PROFILES))
    inputs = {name: str(root / path) for name, path in stages.STAGES["pairs"].inputs.items()}
    pairs.run(params, inputs, o(layout.PAIRS))
    outs = [*layout.INGEST.values(), *layout.PROFILES.values(), *layout.PAIRS.values()]
    return {p: file_hash(root / p) for p in outs if (root / p).is_file() and not p.endswith((".png", ".json"))}


MEASURED = ("ingest", "profiles", "pairs")   # run here: their changed outputs are measured


def _rerun(changed: set[str]) -> set[str]:
    """The stages DVC reruns when the `changed` files differ: a measured stage whose input or output
    changed; after them, pessimistically, each stage reading a changed file or an output of a rerun stage."""
    ran, stale = set(), set(changed)
    for s in stages.TABLE:
        reads = [p for p in [*s.inputs.values(), *s.deps] if "${" not in p]
        if s.name in MEASURED:
            if any(p in changed for p in [*reads, *s.out().values()]):
                ran.add(s.name)
        elif any(x == p or x.startswith(p + "/") for p in reads for x in stale):
            ran.add(s.name)
            stale.update(s.out().values())
    return ran


@pytest.mark.timeout(120)
def test_editing_one_test_answer_reruns_only_the_scoring_side(tmp_path):
    data = tmp_path / "sample"
    shutil.copytree(SAMPLE / "rewardbench", data)
    params = project_params(tmp_path, configs=("Art_and_Entertainment",), splits=("train", "test"), limit=None)
    params["ingest"]["path"] = str(data)
    params["pairs"].update(generate=False, source="reference")
    before = _ingest_and_pairs(tmp_path, params)
    half = halves.read(str(tmp_path / layout.INGEST["halves"]))
    scored = read_table(tmp_path / layout.PAIRS["selected_pairs"], "judged_pairs").to_pylist()
    assert scored and {half[p["question_id"]] for p in scored} == {halves.BENCHMARK}, "scoring: one half"
    trains = read_table(tmp_path / layout.PAIRS["train_pairs"], "judged_pairs").to_pylist()
    assert trains and {p["split"] for p in trains} == {"train"}

    test_file = data / "Art_and_Entertainment" / "test-00000-of-00001.parquet"
    table = pq.read_table(test_file).to_pylist()
    edited = next(i for i, r in enumerate(table) if half[r["id"]] == halves.BENCHMARK)
    table[edited]["chosen"] += " Edited."
    pq.write_table(pq.read_table(test_file).from_pylist(table, schema=pq.read_schema(test_file)), test_file)
    after = _ingest_and_pairs(tmp_path, params)
    changed = {p for p in before if before[p] != after[p]}
    assert changed == {layout.INGEST["pairs"], layout.PAIRS["judged_pairs"], layout.PAIRS["selected_pairs"]}
    ran = _rerun(changed)
    assert ran == {"ingest", "pairs", "generic_pairs", "score_inputs", "score", "leaderboard", "human_eval",
                   "explain", "correlation", "report"}
    assert not ran & {"train_rm", "rl_train", "bon_sample", "bon_judge", "bon_score_inputs", "bon_score", "rl_eval",
                      "rubrics"}


def test_correlation_counts_the_questions_each_side_used():
    """From the tables read, not from params: a downstream table that answered a scored question shows."""
    from tasks.downstream.correlation.overlap import question_counts
    from tasks.downstream.correlation.sides import Side

    ours = Side("personalised", "scores", per_question={"a": {"q1": 1.0, "q2": 0.0}, "b": {"q3": 1.0}})
    other = Side("rb2-demo", "bench_scores", per_question={"a": {"rb2-demo:1": 1.0}})
    bon = Side("bon", "x", per_question={"a": {"q4": 0.5}, "b": {"q5": 0.1}})
    rl = Side("rl", "y", per_question={"a": {"q5": 0.3}})
    assert question_counts({"personalised": ours, "rb2-demo": other}, {"bon": bon, "rl": rl}) == \
        {"benchmark_n": 3, "downstream_n": 2, "overlap": 0}
    rl.per_question["b"] = {"q2": 0.4}
    assert question_counts({"personalised": ours}, {"bon": bon, "rl": rl})["overlap"] == 1


def test_the_committed_run_scored_and_answered_disjoint_halves():
    """The default run's own record (metrics/correlation.json, tracked in git): the questions its scores and its
    BoN / RL tables hold, counted from the tables the correlation stage read, share none."""
    import json

    split = json.loads((ROOT / "metrics" / "correlation.json").read_text())
    assert split["benchmark_n"] > 0 and split["downstream_n"] > 0 and split["overlap"] == 0
    assert split["primary"]["n_questions"] <= split["downstream_n"]
