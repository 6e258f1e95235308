"""A real Dask cluster on 127.0.0.1 (`dask scheduler` + two `dask worker` processes): the score and
bon_score stages sent to it give the Parquet bytes of the local run, per-RM resources route chunks
to the worker that has them, an unmet request and an unreadable project fail in one line, and
SIGKILLing a worker mid-run still completes with the same bytes (its chunk reruns on the other).
Every process is started and stopped here (process groups, killed in a finally)."""
import shutil
import threading
import time
from pathlib import Path

import pytest
import yaml

from tasks.downstream import bon
from tasks.core import layout
from tasks.stages import score
from tasks.core.artifacts import file_hash
from tasks.core.runlog import read_counters
from tests.dask_cluster import DaskCluster
from tests.fakes.openai_server import FakeOpenAIServer
from tests.stage_project import save_params
from tests.test_bon_stage import BON
from tests.test_scale import CHEAP_RMS, inputs, outputs, scale_project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(360)]

RMS = CHEAP_RMS   # three RMs: a rule, a seeded one, and a real encoder (MiniLM) whose floats must match
BON_RMS = ("length-longer", "similarity")
CHUNK = 16        # 6 chunks per RM (3 strategies x 2 slices of the 30 pairs): enough to spread, few task overheads


def in_process_reference(root: Path, params: dict) -> dict:
    """Sample BoN answers (dummy policy), and score every RM here, in one process."""
    from tasks.downstream.bon import sample, select

    params["bon"] = {**BON, "questions_limit": 3}
    save_params(root, params)
    bon_in = {**inputs(root), "ranked_profile": str(root / layout.PROFILES["ranked_profile"]),
              "halves": str(root / layout.INGEST["halves"]),
              "samples": str(root / bon.SAMPLE["samples"])}
    sample.run(params, bon_in, {k: str(root / v) for k, v in bon.SAMPLE.items()})
    expected = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)   # as a stage runs: inputs are project-relative
        for rm in RMS:
            score.run(params, rm, inputs(root), outputs(root, rm))
            expected[f"score/{rm}"] = file_hash(outputs(root, rm)["scores"])
        for rm in BON_RMS:
            out = {k: str(root / v) for k, v in bon.scores(rm).items()}
            select.run(params, rm, bon_in, out)
            expected[f"bon/{rm}"] = file_hash(out["scores"])
    return expected


def copy_project(src: Path, dst: Path, **scale) -> dict:
    """The inputs only (no outputs, own caches): nothing computed there yet."""
    for sub in ("data/ingest", "data/profiles", "data/pairs", "data/models", "data/bon/samples.parquet"):
        if not (src / sub).exists():
            continue
        (dst / sub).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (src / sub).is_dir() else shutil.copy2)(src / sub, dst / sub)
    params = yaml.safe_load((src / "params.yaml").read_text())
    params["common"]["cache_dir"] = str(dst / "cache")
    params["scale"] = {**params["scale"], **scale}
    save_params(dst, params)
    return params


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    return root, in_process_reference(root, scale_project(root, rms=RMS, chunk_size=CHUNK))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = DaskCluster(tmp_path_factory.mktemp("dask"))
    try:
        yield c.start({"cpu-worker": {}, "gpu-worker": {"GPU": 1}})
    finally:
        c.stop()
        assert not c.alive(), "no cluster process outlives the test"


def worker_counts(metrics_path: str) -> dict:
    chunks = read_counters(metrics_path)["chunks"]
    return {k.split()[2]: v for k, v in chunks.items() if k.startswith("dask worker")}


def n_chunks(root: Path, rm: str) -> int:
    return len(score.plan(yaml.safe_load((root / "params.yaml").read_text()), rm, inputs(root)))


def test_stages_on_the_cluster_give_the_local_bytes(reference, cluster, tmp_path, monkeypatch, prefect_harness):
    from prefect import flow

    from flows.stage import flow_of
    bon_score_flow = flow_of("bon_score")
    from flows.common import main
    from flows.pipeline import _fanned_out

    src, expected = reference
    copy_project(src, tmp_path, task_runner="dask", address=cluster.address)
    monkeypatch.chdir(tmp_path)

    @flow
    def all_rms_at_once():   # as `prbench run --no-dvc` runs a per-RM stage on a cluster
        return [s.is_completed() for s in _fanned_out("score", sorted(RMS), None)]

    assert all(all_rms_at_once())
    ran = {}
    for rm in RMS:
        assert file_hash(layout.scores(rm)["scores"]) == expected[f"score/{rm}"], rm
        for worker, n in worker_counts(layout.scores(rm)["metrics"]).items():
            ran[worker] = ran.get(worker, 0) + n
    for rm in BON_RMS:
        assert main(bon_score_flow, rm=rm) == 0
        assert file_hash(bon.scores(rm)["scores"]) == expected[f"bon/{rm}"], rm
    assert set(ran) == {"cpu-worker", "gpu-worker"}, ran
    assert sum(ran.values()) == len(RMS) * n_chunks(tmp_path, "random"), ran


def test_resources_route_chunks_and_an_unmet_request_fails_in_one_line(reference, cluster, tmp_path, monkeypatch,
                                                                      prefect_harness, capsys):
    from flows.common import main
    from flows.stage import flow_of
    score_flow = flow_of("score")

    params = copy_project(reference[0], tmp_path, task_runner="dask", address=cluster.address)
    params["scoring"]["rms"] = {"on-gpu": {"kind": "random", "resources": {"gpu": 1}},
                                "two-gpus": {"kind": "random", "resources": {"gpu": 2}}}
    save_params(tmp_path, params)
    monkeypatch.chdir(tmp_path)
    assert main(score_flow, rm="on-gpu") == 0
    assert worker_counts(layout.scores("on-gpu")["metrics"]) == {"gpu-worker": n_chunks(tmp_path, "on-gpu")}
    capsys.readouterr()
    assert main(score_flow, rm="two-gpus") == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("scoring.rms.two-gpus.resources: each task needs GPU=2, but no worker") and "GPU=1" in err
    assert len(err.splitlines()) == 1 and not Path(layout.scores("two-gpus")["scores"]).exists()


def test_a_worker_that_cannot_see_the_project_says_so(reference, cluster, tmp_path, monkeypatch, prefect_harness,
                                                      capsys):
    from flows.common import main
    from flows.stage import flow_of
    score_flow = flow_of("score")

    copy_project(reference[0], tmp_path, task_runner="dask", address=cluster.address, root="/mnt/not-mounted/prbench")
    monkeypatch.chdir(tmp_path)
    assert main(score_flow, rm="length-longer") == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("/mnt/not-mounted/prbench: no project folder there on dask worker ") and "README" in err


def test_a_worker_killed_mid_run_costs_nothing_but_time(reference, tmp_path, monkeypatch, prefect_harness):
    from flows.common import main
    from flows.stage import flow_of
    score_flow = flow_of("score")

    src = reference[0]
    judge = {"kind": "judge-pointwise", "llm": "slow-judge", "prompt": str(Path(__file__).parents[1] /
                                                                         "prompts/rm_pointwise.txt")}
    with FakeOpenAIServer(latency_s=0.05) as server:
        params = yaml.safe_load((src / "params.yaml").read_text())
        params["llms"]["slow-judge"] = {"backend": "openai", "model": "judge", "base_url": server.url + "/v1"}
        params["scoring"]["rms"] = {"judge": judge}
        params["scale"]["chunk_size"] = 4   # 24 chunks of a slow fake judge: a kill lands mid-run
        local = tmp_path / "local"
        copy_project(src, local)
        params["common"]["cache_dir"] = str(local / "cache")
        save_params(local, params)
        score.run(params, "judge", inputs(local), outputs(local, "judge"))
        want = file_hash(outputs(local, "judge")["scores"])
        calls = server.requests

        with DaskCluster(tmp_path / "dask") as cluster:
            cluster.start({"w1": {}, "w2": {}})
            proj = tmp_path / "cluster"
            copy_project(src, proj, task_runner="dask", address=cluster.address)
            params["common"]["cache_dir"] = str(proj / "cache")
            params["scale"] = {**params["scale"], "task_runner": "dask", "address": cluster.address}
            save_params(proj, params)
            killed, finished = [], threading.Event()

            def kill_a_busy_worker():
                with cluster.client() as c:
                    names = {addr: w["name"] for addr, w in c.scheduler_info(n_workers=-1)["workers"].items()}
                    while not killed and not finished.is_set():
                        busy = [names[a] for a, keys in c.processing().items() if keys]
                        if busy and server.requests > calls + 20:   # both workers are into their chunks
                            cluster.kill(busy[0])
                            killed.append(busy[0])
                        time.sleep(0.05)

            killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
            killer.start()
            monkeypatch.chdir(proj)
            try:
                assert main(score_flow, rm="judge") == 0
            finally:
                finished.set()
                killer.join(timeout=30)
            assert killed, "a worker was killed while it held a chunk"
            assert cluster.workers().keys() == {"w1", "w2"} - set(killed)
            assert file_hash(layout.scores("judge")["scores"]) == want
            ran = worker_counts(layout.scores("judge")["metrics"])
            chunks = read_counters(layout.scores("judge")["metrics"])["chunks"]
            survivor = ({"w1", "w2"} - set(killed)).pop()
            # a chunk the killed worker finished but whose result died with it reruns as a cache hit
            # (its result was persisted): computed once, counted as cached, never lost
            assert chunks["total"] == 24 and sum(ran.values()) + chunks["cached"] == 24, chunks
            assert ran[survivor] > ran.get(killed[0], 0), ran
        assert not cluster.alive()
