"""`dvc repro` end to end in a temp copy of the repo: outputs, a no-op second run, and
byte-identical Parquet after deleting the outputs. (dvc.yaml against the stage table: test_stage_table.py.)"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flows import server
from tasks.core.artifacts import file_hash
from tasks.core.runlog import record_path
from tests.conftest import ROOT, Deadline
from tests.stage_project import fit_to_rms

def _copy_repo(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    subprocess.run(["git", "init", "-q"], cwd=dst, check=True)


def _dvc(cwd, *args):
    proc = subprocess.run(["dvc", *args], cwd=cwd, env=_clone_env(), capture_output=True, text=True, timeout=600)   # a no-op repro or a status: no stage runs here
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


# A seeded RM, an encoder, the trained one, an LLM judge (SmolLM2's log-probs: the floats most
# exposed to batch and thread effects): four, the fewest a rank correlation takes. The others
# (the length rules, the pairwise judge) repeat their kind's code; each RM costs three stages a run.
REDUCED_RMS = ("random", "similarity", "bradley-terry", "smollm2-pointwise")


TINY_POLICY = "tiny-policy"


def reduce_params(repo: Path) -> dict:
    """The default params on a few questions and short prompts: every stage runs, with the real
    MiniLM, trl training (reward model and RL policy), SmolLM2 as the judge RM and the sampling BoN
    policy (temperature 1, seeded). The text-writing stages (planner, pair writer, generic pairs,
    annotator proxy) use the dummy LLM: greedy SmolLM2 text is what the BoN policy already shows,
    and their calls were most of this test's time. The RL policy is a tiny random Llama in the
    clone (`TINY_POLICY`): the same trl and transformers code as SmolLM2's, without its ~1 min GGUF
    conversion per clone and its minute per update (test_llm_transformers converts SmolLM2)."""
    from tests.stage_project import DUMMY

    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["llms"]["writer"] = dict(DUMMY)
    for stage, key in (("rubrics", "llm"), ("pairs", "llm"), ("generic_pairs", "llm"), ("human_eval", "proxy_llm")):
        params[stage][key] = "writer"
    params["ingest"]["configs"] = params["ingest"]["configs"][:2]   # two domains, 4 questions per domain and split:
    params["ingest"]["limit_per_split"] = 4                          # 16 of the sample's 90 questions
    params["profiles"].update(context_k=2, max_words_per_post=30)
    params["rubrics"].update(questions_limit=1, profile_k=2, max_words_per_post=30)
    params["pairs"].update(generate_per_domain=1, profile_k=2, max_words_per_post=30)
    params["generic_pairs"]["per_domain_limit"] = 1
    params["scoring"].update(per_domain_limit=1, strategies=["raw_profile"])   # the one the reports rank by
    rms = {**params["scoring"]["rms"], "smollm2-pointwise": {"kind": "judge-pointwise", "llm": "smollm2",
                                                               "verdict": "logprobs"}}   # not in the default's RMs
    params["scoring"]["rms"] = {k: v for k, v in rms.items() if k in REDUCED_RMS}
    params["bon"].update(questions_limit=1, n=2, max_k=2, max_tokens=24, max_words=20, profile_k=2,
                         max_words_per_post=20, bootstrap=100)
    params["human_eval"]["proxy_limit"] = 1
    params["train_rm"].update(epochs=1, max_length=128)
    params["leaderboard"]["bootstrap"] = 100
    params["correlation"].update(bootstrap=100, permutations=99)
    params["rl"].update(profile_k=1, max_words_per_post=20, rms=["bradley-terry"])   # the trained RM as reward
    params["rl"]["policy"]["model"] = TINY_POLICY   # relative: the same params at both paths
    params["rl"]["train"].update(updates=1, response_length=8, train_layers=1)
    params["rl"]["eval"].update(questions_limit=1, max_tokens=8, bootstrap=100)
    (repo / "params.yaml").write_text(yaml.safe_dump(fit_to_rms(params), sort_keys=False))
    return params


def _clone_env() -> dict:
    """A fresh clone's environment: this venv on PATH, the clone's own Prefect home (its result
    store is a cache too: a shared one would make the second clone warm), no PYTHONPATH."""
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    for var in ("PYTHONPATH", "PREFECT_HOME", "PREFECT_API_URL"):
        env.pop(var, None)
    return env


def _repro(repo: Path, log: Path):
    """`prbench run` (the main job: `dvc repro` with one local Prefect server for all its stages),
    its output to `log` (a pipe nobody reads while the other clone runs would stall it)."""
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "flows.cli", "run"], cwd=repo, env=_clone_env(),
                                stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _finish(proc, log: Path, timeout: float) -> str:
    proc.wait(timeout=timeout)
    out = log.read_text()
    assert proc.returncode == 0, out[-4000:]
    return out


def _outputs_of(repo: Path, stage: dict) -> list[str]:
    """The files under a dvc.lock stage's outputs (a folder output: every file in it)."""
    files = []
    for o in stage.get("outs", []):
        p = repo / o["path"]
        files += [f.relative_to(repo).as_posix() for f in (sorted(x for x in p.rglob("*") if x.is_file())
                                                            if p.is_dir() else [p])]
    return files


def _outputs(repo: Path) -> dict[str, str]:
    """sha256 of every file under every output dvc.lock records (Parquet, models, metrics, plots)."""
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    return {f: file_hash(repo / f) for stage in lock["stages"].values() for f in sorted(_outputs_of(repo, stage))}


RUNNING = r"Running stage '([^']+)'"
# The end-to-end test took 574 s in CI (2026-12-02, 2 cores, the suite's other process beside it) and
# 1774 s on 2 cores shared with other agents' work (load 7-11): ~5x CI, ~1.7x that.
E2E_LIMIT_S = 3000


def _mentions_cache(counters: dict) -> bool:
    return any(k in ("cache_hits", "cached") or isinstance(v, dict) and _mentions_cache(v) for k, v in counters.items())


def _cache_readers(repo: Path, lock_stages: dict) -> set[str]:
    """Stages whose run record (runs/, beside each metrics file) counts cache reads; a stage
    without one counts as a reader, so nothing is left out by a missing record."""
    readers = set()
    for name, spec in lock_stages.items():
        metrics = [o["path"] for o in spec.get("outs", []) if o["path"].startswith("metrics/")]
        records = [repo / record_path(m) for m in metrics]
        if not records or not all(r.exists() for r in records) or any(
                _mentions_cache(json.loads(r.read_text())["counters"]) for r in records):
            readers.add(name)
    return readers


def _pipeline_in_process(repo: Path, home: Path, timeout: float) -> None:
    """`prbench run --no-dvc`: the whole pipeline in one process, against a server on `home` (the
    clone's Prefect home: its result store)."""
    with server.local_server(home=home) as url:
        out = subprocess.run([sys.executable, "-m", "flows.cli", "run", "--no-dvc"], cwd=repo, text=True,
                             env={**_clone_env(), "PREFECT_API_URL": url}, capture_output=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]


def _in_process(repo: Path, home: Path, timeout: float) -> None:
    """The other way to the same lock: the in-process pipeline, then `dvc commit` records what
    `dvc repro` would."""
    _pipeline_in_process(repo, home, timeout)
    _dvc(repo, "commit", "-f")


@pytest.mark.slow
@pytest.mark.timeout(E2E_LIMIT_S)
def test_two_cold_clones_at_different_paths_agree_and_a_warm_rerun_gives_the_same_bytes(tmp_path, seed_prefect_home):
    """What `dvc repro` promises a new user: a fresh clone elsewhere, cold caches, the same dvc.lock.
    Clone a runs `prbench run` (a process per stage); clone b, at another path, the in-process
    pipeline recorded by `dvc commit`: the same bytes from both is the same promise, made by both
    ways a user runs the DAG, for about half the second clone's cost (no process start per stage).
    Clone a's Prefect home is new (its server migrates a new database); clone b's server starts on a
    migrated, empty one: no runs, no results, so its caches are as cold."""
    deadline = Deadline(E2E_LIMIT_S)   # the inner waits end before the test's limit, each with its own message
    a, b = tmp_path / "a" / "repo", tmp_path / "another" / "path" / "to-a-clone"
    from tests.test_llm_transformers import build_tiny_llama

    policy = build_tiny_llama(tmp_path / TINY_POLICY, max_positions=4096, own_pad=True)
    for repo in (a, b):
        _copy_repo(repo)
        (repo / "dvc.lock").unlink()   # the committed lock is the default params'; these clones make their own
        reduce_params(repo)
        shutil.copytree(policy, repo / TINY_POLICY)
    cold = _repro(a, tmp_path / "a.log")   # side by side: two cold caches, two paths, shared load
    try:
        _in_process(b, seed_prefect_home(b / ".prefect"), deadline.left())
        log = _finish(cold, tmp_path / "a.log", deadline.left())
    finally:
        if cold.poll() is None:
            os.killpg(cold.pid, signal.SIGKILL)
    lock = (a / "dvc.lock").read_text()
    assert lock == (b / "dvc.lock").read_text(), "every hash in dvc.lock agrees between the clones"
    files = _outputs(a)
    assert files == _outputs(b)
    stages = set(yaml.safe_load(lock)["stages"])
    assert set(re.findall(RUNNING, log)) == stages, "the cold run ran every stage"
    warm = re.search(r"prbench: (\d+) stage command\(s\) ran in warm forks, 0 as plain processes", log)
    assert warm and int(warm[1]) == len(stages), "every stage ran in a fork of the warm server (flows/warm.py)"
    for m in (a / "metrics").rglob("*.json"):   # results only; the counters went to runs/
        assert "run" not in json.loads(m.read_text()), m
    assert (a / "runs" / "pairs.json").exists()

    out = _dvc(a, "repro")   # a no-op: nothing ran, whatever the machine's load
    assert "Data and pipelines are up to date." in out and "Running stage" not in out

    # The warm rerun: the outputs of every stage a cache can reach are gone (LLM calls, embeddings,
    # Prefect's chunk results: all kept warm), and the whole pipeline runs again in one process
    # (`prbench run --no-dvc`: no DVC checkout can bring an output back, and no process start per
    # stage). What ran is told by the files, whatever the load: each removed output is back, and
    # the stages that read no cache (training, the RL records) were served by Prefect's cache,
    # their files untouched, so their inputs came back byte for byte.
    lock_stages = yaml.safe_load(lock)["stages"]
    warmed = _cache_readers(a, lock_stages)
    assert {"profiles", "pairs", "bon_sample", "score@smollm2-pointwise"} <= warmed and "train_rm" not in warmed
    kept = {f: (a / f).stat().st_mtime_ns for s in set(lock_stages) - warmed for f in _outputs_of(a, lock_stages[s])}
    for stage in warmed:
        for o in lock_stages[stage]["outs"]:
            p = a / o["path"]
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    _pipeline_in_process(a, a / ".prefect", deadline.left())
    assert _outputs(a) == files, "a warm rerun gives the same bytes, every removed output back"
    assert {f: (a / f).stat().st_mtime_ns for f in kept} == kept, "the stages no cache reaches did not rerun"
    assert "Data and pipelines are up to date." in _dvc(a, "status"), "dvc.lock holds for every stage"
    profiles = json.loads((a / "runs" / "profiles.json").read_text())["counters"]["embeddings"]
    chunks = json.loads((a / "runs" / "scores" / "smollm2-pointwise.json").read_text())["counters"]["chunks"]
    assert profiles["encoded"] == 0 < profiles["cache_hits"], "every embedding came from the warm cache"
    assert chunks["cached"] == chunks["total"], "every chunk's scores came from Prefect's result store"

    params = yaml.safe_load((a / "params.yaml").read_text())   # a new RM: only its stages (+ reports) rerun
    params["scoring"]["rms"]["length-longer-2"] = {"kind": "length-longer"}
    (a / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    changed = set(json.loads(_dvc(a, "status", "--json")))
    new = {s for s in changed if s.endswith("@length-longer-2")}
    assert {"score@length-longer-2", "bon_score@length-longer-2"} <= new
    benches = {f"bench_score@{b}" for b in params.get("benchmarks") or {}}   # they name scoring.rms whole
    fingerprints = {"score_inputs", "bon_score_inputs"}   # each writes the new RM's one file, the others' bytes kept
    assert changed - new <= {"leaderboard", "bon_report", "correlation", "rl_eval", "explain", "report", *fingerprints,
                             *benches}, changed


@pytest.mark.parametrize("other", ["params-paper.yaml", "params-regenerate.yaml"])
def test_paper_params_differ_only_in_values(other):
    def keys(d, prefix=""):
        return {f"{prefix}{k}" for k in d} | {x for k, v in d.items() if isinstance(v, dict) and k not in ("llms", "rms", "benchmarks")
                                               for x in keys(v, f"{prefix}{k}.")}
    default = yaml.safe_load((ROOT / "params.yaml").read_text())
    paper = yaml.safe_load((ROOT / other).read_text())
    missing = keys(default) - {"pairs.judge.encoder", "pairs.judge.partly", "pairs.judge.well", "bon.judge.encoder",
                               "bon.judge.partly", "bon.judge.well"} - keys(paper)
    assert not missing, f"{other} lacks {sorted(missing)}"
    for name, entry in default["llms"].items():   # a shared LLM entry has the same options (thinking_budget ...)
        assert name not in paper["llms"] or set(entry) <= set(paper["llms"][name]), f"{other}: llms.{name}"
