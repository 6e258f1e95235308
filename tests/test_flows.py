"""The stage flows under a real (test-harness) Prefect server: outputs, cross-run caching,
recomputation when a cached output was removed, and the whole in-process pipeline (every dvc.yaml
stage, per-RM fan-out, dependency order, stop at the first failure, every file a stage reads declared)."""
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from tasks.core import layout
from tasks.core.artifacts import file_hash, read_table
from tests import file_reads
from tests.conftest import ROOT, ingest_params, make_row, write_json_rows
from tests.test_llm_transformers import build_tiny_llama
from tests.stage_project import DUMMY, project_params, save_params, use_test_llm


@pytest.fixture
def project(tmp_path, monkeypatch):
    data = tmp_path / "raw"
    write_json_rows(data / "Lifestyle_and_Personal_Development_test.json", [make_row(i, prefix="2_0") for i in range(3)])
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["ingest"] = ingest_params(data)
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    params["profiles"]["k"] = 4
    params["pairs"]["profile_k"] = 4   # <= profiles.k (a params rule)
    use_test_llm(params, DUMMY)
    params["pairs"]["source"] = "generate"   # these rows carry no reference pairs
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_pipeline_flow_runs_caches_and_repairs(project, prefect_harness):
    from flows.common import main
    from flows.pipeline import pipeline

    assert main(pipeline, until="pairs") == 0
    outputs = [Path(p) for p in ("data/ingest/questions.parquet", "data/ingest/profiles.parquet",
                                 "data/profiles/ranked.parquet", "data/profiles/context.parquet",
                                 "data/rubrics/inferred.parquet", "data/pairs/generated.parquet",
                                 "metrics/ingest.json", "metrics/profiles.json", "metrics/pairs.json")]
    assert all(p.exists() for p in outputs)
    stamps = {p: p.stat().st_mtime_ns for p in outputs}
    hashes = {p: file_hash(p) for p in outputs if p.suffix == ".parquet"}

    assert main(pipeline, until="pairs") == 0       # same inputs: Prefect serves the cached results
    assert {p: p.stat().st_mtime_ns for p in outputs} == stamps

    os.remove("data/profiles/ranked.parquet")         # a cached result whose file is gone is recomputed
    assert main(pipeline, until="pairs") == 0
    assert {p: file_hash(p) for p in hashes} == hashes


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_flow_failure_is_reported_not_raised(project, prefect_harness, capsys):
    from flows.common import main
    from flows.stage import flow_of
    ingest_flow = flow_of("ingest")

    write_json_rows(project / "raw" / "Lifestyle_and_Personal_Development_test.json", [make_row(0, question="")])
    assert main(ingest_flow) == 1
    assert "row 0 (id=1_0_0): field 'question': empty" in capsys.readouterr().err


# --- the whole pipeline in one process (`prbench run --no-dvc`) on tiny params -------------------

CONFIGS = ("Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture")
PIPELINE_RMS = ("bradley-terry", "length-longer", "random", "similarity")


def _tiny_pipeline_project(root: Path) -> dict:
    """The default params, shrunk: 2 sample questions per domain and split (a test one per half), bm25, one short training
    epoch, 2 BoN samples, fewer resamples, four RMs, and every LLM (planner, pair writer, generic
    answers, proxy annotator, BoN policy) the dummy backend."""
    shutil.copytree(ROOT / "prompts", root / "prompts")   # a project folder carries its prompts, as the repo does
    params = project_params(root, configs=CONFIGS, splits=("train", "test"), limit=2)   # a test question per half
    shrink = lambda group, **values: group.update({k: v for k, v in values.items() if k in group})  # noqa: E731
    shrink(params["train_rm"], epochs=1, max_length=128)
    shrink(params["bon"], n=2, max_k=2, bootstrap=200)
    shrink(params["leaderboard"], bootstrap=200)
    shrink(params["correlation"], bootstrap=200, permutations=999)
    if "rl" in params:   # no RM trains a policy here (tests/test_rl.py does): no rl_train stage, and
        shrink(params["rl"], rms=[], max_words=10)   # the untrained policy, a tiny random Llama, answers
        shrink(params["rl"].get("policy", {}), model=str(build_tiny_llama(root / "tiny-policy", max_positions=4096)))
        shrink(params["rl"].get("eval", {}), questions_limit=1, max_tokens=8, bootstrap=200)
    params["generic_pairs"]["llm"] = params["human_eval"]["proxy_llm"] = params["bon"]["policy_llm"] = "test-llm"
    # four RMs, one of each kind the stages treat apart (a rule, a seeded one, an encoder, the trained
    # one): the fan-out is the same for seven, each costs three flow runs a pass (the judges: test_rms)
    params["scoring"]["rms"] = {k: v for k, v in params["scoring"]["rms"].items() if k in PIPELINE_RMS}
    assert sorted(params["scoring"]["rms"]) == sorted(PIPELINE_RMS)
    params["benchmarks"] = {}   # bench_score has its own tests (test_bench_stage)
    save_params(root, params)
    return params


def _dvc_stages(rms, benchmarks=(), rl_rms=()) -> dict:
    """dvc.yaml's stages, foreach expanded over `rms` (`benchmarks` for bench_score, `rl_rms` for rl_train):
    {(stage, rm or None): (deps, outs)}."""
    def paths(entries, key):
        named = {e if isinstance(e, str) else next(iter(e)) for e in entries or []}
        return {p.replace("${key}", key or "").replace("${item}", key or "") for p in named}

    stages = {}
    for name, spec in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].items():
        keys = {"${benchmarks}": benchmarks, "${rl.rms}": rl_rms}.get(spec.get("foreach"), rms)
        for rm, body in ([(k, spec["do"]) for k in keys] if "foreach" in spec else [(None, spec)]):
            deps = {d for d in paths(body.get("deps"), rm) if "${" not in d}
            outs = set().union(*(paths(body.get(k), rm) for k in ("outs", "metrics", "plots")))
            stages[(name, rm)] = (deps, outs)
    return stages


def _cut_short_model(folder: Path) -> Path:
    """A seq-cls model folder with every file a load needs, its weights cut to nothing (a download stopped early)."""
    from tasks.models.encoders import EMBEDDED

    shutil.copytree(EMBEDDED["all-MiniLM-L6-v2"](), folder)
    (folder / "model.safetensors").write_bytes(b"")
    return folder


def _subflow_runs(state) -> list[tuple[tuple[str, str | None], str]]:
    """The pipeline run's stage runs as Prefect recorded them, in start order: ((stage, rm), state type)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId
    from prefect.client.schemas.sorting import FlowRunSort

    parent = FlowRunFilterParentFlowRunId(any_=[state.state_details.flow_run_id])
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(parent_flow_run_id=parent),
                                     sort=FlowRunSort.START_TIME_ASC, limit=200)
        names = {f.id: f.name for f in client.read_flows(limit=200)}
    return [((names[r.flow_id], r.parameters.get("rm")), r.state.type.value) for r in runs]


def _assert_dependency_order(ran: list, stages: dict) -> None:
    """Every stage started after each stage that writes one of its deps (a file, a folder of outs, or a file in
    a folder out: an RM's fingerprint)."""
    for i, stage in enumerate(ran):
        for dep in stages[stage][0]:
            producers = {s for s, (_, outs) in stages.items()
                         if any(o == dep or o.startswith(dep + "/") or dep.startswith(o + "/") for o in outs)}
            assert producers <= set(ran[:i]), f"{stage} ran before {sorted(producers - set(ran[:i]))} (dep {dep})"


@pytest.mark.slow
@pytest.mark.timeout(480)
def test_whole_pipeline_fans_out_per_rm_in_dag_order_and_stops_at_the_first_failure(
        tmp_path, monkeypatch, prefect_harness, capsys):
    from flows.common import main
    from flows.pipeline import pipeline

    params = _tiny_pipeline_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    rms = sorted(params["scoring"]["rms"])
    stages = _dvc_stages(rms)

    # 0. a misspelt option: refused before any stage runs (the params schema), in one line
    good = dict(params["scoring"]["rms"]["random"])
    params["scoring"]["rms"]["random"] = {**good, "sed": 1}
    save_params(tmp_path, params)
    capsys.readouterr()   # the project's set-up output (the tiny policy's shards)
    assert main(pipeline) == 1
    assert capsys.readouterr().err.strip().startswith("params.yaml: scoring.rms.random.sed: not an option")
    assert not any(Path(o).exists() for s in stages for o in stages[s][1]), "no stage ran"

    # 1. an entry only its stage can find bad (a model folder whose weights file was cut short: its files are all
    # there, so the params check passes it): the pipeline stops there, as Failed, with the stage's one-line reason
    params["scoring"]["rms"]["random"] = {"kind": "seq-cls", "model": str(_cut_short_model(tmp_path / "cut-short"))}
    save_params(tmp_path, params)
    reads = file_reads.record(tmp_path, monkeypatch)   # every stage run from here: what it reads
    state = pipeline(return_state=True)
    assert state.is_failed() and state.message.startswith("score: scoring.rms.random.model: cannot load"), state.message
    failed_run = _subflow_runs(state)
    assert failed_run[-1] == (("score", "random"), "FAILED")
    assert all(kind == "COMPLETED" for _, kind in failed_run[:-1])
    later = {s for s in stages if s not in {stage for stage, _ in failed_run}}
    assert ("leaderboard", None) in later and ("score", "similarity") in later and ("bon_sample", None) in later
    assert not any(Path(o).exists() for s in later for o in stages[s][1]), "nothing after the failure ran"
    assert main(pipeline) == 1 and "score: scoring.rms.random.model: cannot load" in capsys.readouterr().err
    before = {p: Path(p).stat().st_mtime_ns for s, _ in failed_run[:-1] for p in stages[s][1] if Path(p).is_file()}

    # 2. fixed: every dvc.yaml stage runs once (per-RM ones once per RM), in an order dvc.yaml allows
    params["scoring"]["rms"]["random"] = good
    save_params(tmp_path, params)
    state = pipeline(return_state=True)
    assert state.is_completed(), state.message
    runs = _subflow_runs(state)
    ran = [stage for stage, _ in runs]
    assert all(kind == "COMPLETED" for _, kind in runs), runs
    assert sorted(ran, key=str) == sorted(stages, key=str), "the in-process pipeline runs dvc.yaml's stages"
    _assert_dependency_order(ran, stages)
    assert ran[:len(failed_run)] == [stage for stage, _ in failed_run], "the same order as before the failure"
    assert {p: Path(p).stat().st_mtime_ns for p in before} == before, "stages before the failure: from the cache"
    file_reads.stop()
    assert {stage for stage, _ in reads} == {stage for stage, _ in stages}, "every stage ran, its reads recorded"
    bad = file_reads.undeclared(reads, params)
    assert bad == {}, f"stages read files the stage table does not declare: {json.dumps(bad, indent=1)}"
    split = json.loads(Path(layout.CORRELATION["metrics"]).read_text())
    assert (split["benchmark_n"], split["downstream_n"], split["overlap"]) == (3, 3, 0), "one test question per half"
    # the split-half design on the run's own tables: what scoring reads and what BoN and RL answer never meet
    from tasks.core import halves

    half = halves.read(layout.INGEST["halves"])
    scored = {r["question_id"] for r in read_table(layout.PAIRS["selected_pairs"], "judged_pairs").to_pylist()}
    scored |= {r["question_id"] for rm in rms for r in read_table(layout.scores(rm)["scores"], "scores").to_pylist()}
    bon_q = {r["question_id"] for r in read_table(layout.BON_SAMPLE["samples"], "bon_samples").to_pylist()}
    rl_q = {r["question_id"] for r in read_table(layout.RL_EVAL["answers"], "rl_answers").to_pylist()}
    assert scored and bon_q and rl_q and not scored & (bon_q | rl_q)
    assert {half[q] for q in scored} == {halves.BENCHMARK} and {half[q] for q in bon_q | rl_q} == {halves.DOWNSTREAM}

    for rm in rms:   # the fan-out: each RM's own scores, every strategy, and its own BoN scores
        scores = read_table(layout.scores(rm)["scores"], "scores").to_pylist()
        assert {r["rm"] for r in scores} == {rm} and scores
        assert {r["strategy"] for r in scores if r["benchmark"] == "personalised"} == set(params["scoring"]["strategies"])
        assert Path(layout.bon_scores(rm)["scores"]).exists()
    board = read_table(layout.LEADERBOARD["leaderboard"], "leaderboard").to_pylist()
    assert {r["rm"] for r in board} == set(rms)
    assert all(Path(o).exists() for _, outs in stages.values() for o in outs)
