"""Scale-out without a cluster: the `scale` params, per-RM `resources`, chunked scoring giving the
same bytes as one batch, the local task runner's chunk tasks (cached per chunk), and the one-line
error a worker gives when it cannot read an input. The real cluster is in tests/test_cluster.py."""
import copy
import os
from pathlib import Path

import pytest

from tasks.core import layout
from tasks.stages import score
from tasks.core.artifacts import file_hash, read_table, write_table
from tasks.core.errors import ConfigError
from tests.stage_project import make_project, save_params

CHEAP_RMS = {"length-longer": {"kind": "length-longer"}, "random": {"kind": "random"},
             "similarity": {"kind": "similarity", "encoder": "embedded:all-MiniLM-L6-v2"}}
CONFIGS = ("Lifestyle_and_Personal_Development", "Art_and_Entertainment", "Society_and_Culture")


def scale_project(root: Path, rms=None, chunk_size=4) -> dict:
    """The whole bundled sample (train pairs for a Bradley-Terry RM; 30 test pairs scored), reference
    pairs selected, three strategies."""
    params = make_project(root, configs=CONFIGS, splits=("train", "test"), limit=None)
    reference = read_table(root / layout.INGEST["pairs"], "pairs").to_pylist()
    write_table([{**r, "source": "reference", "judge_chosen": 1.0, "judge_rejected": 0.0, "valid": True}
                 for r in reference], root / layout.PAIRS["selected_pairs"], "judged_pairs")
    params["scoring"].update(rms=copy.deepcopy(rms or CHEAP_RMS), per_domain_limit=None, benchmarks=["personalised"],
                             strategies=["none", "raw_profile", "oracle"])
    params["scale"] = {**params.get("scale", {}), "chunk_size": chunk_size}
    save_params(root, params)
    return params


def inputs(root: Path) -> dict:
    from tasks.core.stage_table import STAGES

    return {k: str(root / v) for k, v in STAGES["score"].inputs.items()}


def outputs(root: Path, rm: str) -> dict:
    return {k: str(root / v) for k, v in layout.scores(rm).items()}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    return root, scale_project(root)


def test_scale_params_are_checked():
    from flows.runner import scale_params

    assert scale_params({})["task_runner"] == "local"
    for bad, key in [({"task_runner": "spark"}, "scale.task_runner"), ({"adress": "x"}, "scale.adress"),
                     ({"chunk_size": 0}, "scale.chunk_size"), ({"root": "relative/dir"}, "scale.root")]:
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            scale_params({"scale": bad})


def test_every_kind_accepts_resources_and_no_rm_sees_them(project):
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm, resource_requests

    _, params = project
    res = Resources(params)
    for name, entry in CHEAP_RMS.items():
        plain = make_rm(name, entry, res)
        placed = make_rm(name, {**entry, "resources": {"gpu": 1, "cpu": 2}}, res)
        assert "resources" not in placed.entry and placed.identity() == plain.identity()
    assert resource_requests("x", {"kind": "random", "resources": {"gpu": 1}}) == {"gpu": 1.0}
    for bad in ({"gpu": 0}, {"gpu": "one"}, [1]):
        with pytest.raises(ConfigError, match=r"scoring\.rms\.x\.resources"):
            make_rm("x", {"kind": "random", "resources": bad}, res)


def test_resources_reach_each_engine_in_its_own_terms():
    from tasks.ops.task_runners import dask_resources, ray_options

    assert dask_resources({"gpu": 1.0, "A100": 1.0}) == {"GPU": 1.0, "A100": 1.0}   # `dask worker --resources GPU=1`
    assert ray_options({"gpu": 1.0, "cpu": 4.0}) == {"num_gpus": 1.0, "num_cpus": 4.0}
    assert ray_options({"gpu": 0.5, "A100": 1.0}) == {"num_gpus": 0.5, "resources": {"A100": 1.0}}


@pytest.mark.parametrize("rm", sorted(CHEAP_RMS))
def test_chunks_give_the_bytes_of_one_batch(project, tmp_path, rm):
    root, params = project
    one = {**params, "scale": {"chunk_size": 10_000}}
    assert len(score.plan(one, rm, inputs(root))) == 3, "one chunk per strategy"
    chunked = score.plan(params, rm, inputs(root))
    assert len(chunked) == 3 * 8 and [c["stop"] - c["start"] for c in chunked[:8]] == [4] * 7 + [2]
    a, b = outputs(tmp_path / "one", rm), outputs(tmp_path / "chunked", rm)
    score.run(one, rm, inputs(root), a)
    m = score.run(params, rm, inputs(root), b)
    assert file_hash(a["scores"]) == file_hash(b["scores"])
    assert read_table(b["scores"], "scores").num_rows == 90 and m["run"]["chunks"]["total"] == 24


def test_mixed_models_across_workers_are_refused():
    from tasks.models.chunks import same_rm

    ok = [{"kind": "seq-cls", "identity": "seq-cls:m@a:1", "worker": "w1"}] * 2
    assert same_rm(ok, "m") == ("seq-cls", "seq-cls:m@a:1")
    with pytest.raises(ConfigError, match="workers built different models.*seq-cls:m@a:2 on w2"):
        same_rm(ok + [{"kind": "seq-cls", "identity": "seq-cls:m@a:2", "worker": "w2"}], "m")


def test_a_worker_that_cannot_read_an_input_names_the_path_and_itself(project, tmp_path):
    from flows.common import INVALID_INPUT
    from flows.runner import worker_label
    from flows.stage import chunk_task_of
    score_chunk_task = chunk_task_of("score")

    root, params = project
    rel = {"questions": layout.INGEST["questions"]}
    key = {"inputs": {layout.INGEST["questions"]: file_hash(root / layout.INGEST["questions"])}}
    args = {"params": params, "rm_name": "length-longer", "inputs": rel}
    chunk = {"benchmark": "personalised", "strategy": "none", "start": 0, "stop": 4}
    state = score_chunk_task.fn(root=str(tmp_path / "not-mounted"), args=args, key=key, chunk=chunk)
    assert state.name == INVALID_INPUT and len(state.message.splitlines()) == 1
    assert state.message.startswith(f"{tmp_path / 'not-mounted'}: no project folder there on {worker_label()}")
    (tmp_path / "empty").mkdir()
    state = score_chunk_task.fn(root=str(tmp_path / "empty"), args=args, key=key, chunk=chunk)
    missing = tmp_path / "empty" / layout.INGEST["questions"]
    assert state.message.startswith(f"{missing}: cannot be read on {worker_label()}")
    stale = {"inputs": {p: "0" * 64 for p in rel.values()}}   # every input, a hash it does not have
    state = score_chunk_task.fn(root=str(root), args=args, key=stale, chunk=chunk)
    assert state.name == INVALID_INPUT and "its content differs from the flow's" in state.message


@pytest.mark.timeout(300)   # slow: on the Prefect harness (conftest marks it)
def test_local_runner_flow_matches_in_process_and_reuses_chunks(tmp_path, monkeypatch, prefect_harness):
    from flows.common import main
    from flows.stage import flow_of
    score_flow = flow_of("score")
    from tasks.core.runlog import read_counters

    root = tmp_path / "proj"
    root.mkdir()
    scale_project(root, rms={"length-longer": {"kind": "length-longer", "resources": {"gpu": 1}}})
    expected = outputs(tmp_path / "in-process", "length-longer")
    score.run(score_project_params(root), "length-longer", inputs(root), expected)
    monkeypatch.chdir(root)
    assert main(score_flow, rm="length-longer") == 0, "local runner: resources are the machine's own"
    out = layout.scores("length-longer")
    assert file_hash(out["scores"]) == file_hash(expected["scores"])
    run = read_counters(out["metrics"])
    assert run["chunks"]["total"] == 24 and run["chunks"]["cached"] == 0
    os.remove(out["scores"])                       # a lost output: the stage reruns, its chunks come from the cache
    assert main(score_flow, rm="length-longer") == 0
    assert file_hash(out["scores"]) == file_hash(expected["scores"])
    assert read_counters(out["metrics"])["chunks"]["cached"] == 24


def score_project_params(root: Path) -> dict:
    import yaml

    return yaml.safe_load((root / "params.yaml").read_text())
