"""Where per-RM and per-chunk work runs: a Prefect task runner chosen by params `scale` (the kinds are
registered in tasks/ops/task_runners.py):

- local: Prefect's thread pool inside the stage process, one chunk at a time (the default)
- dask:  prefect-dask's DaskTaskRunner on an existing scheduler (`scale.address`), or a temporary
         local cluster when no address is given
- ray:   prefect-ray's RayTaskRunner (`pip install 'prbench[ray]'`)

Work leaves as chunk tasks whose inputs are the project root, paths and content hashes; results
come back and are merged in plan order, so the bytes never depend on the runner. The runner is
ambient (the flow sets it from params), never a task input: where work ran is no part of any
cache key, of dvc.lock, or of the results. `map_chunks` is the one entry point; any stage with
per-item work (score, bon_score, RL training per RM) can reuse it."""
from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import socket
import threading
from pathlib import Path

from prefect import task
from prefect.cache_policies import INPUTS, TASK_SOURCE
from prefect.states import Failed

from flows.common import INVALID_INPUT, USER_ERRORS, content_hash, retry_unless_invalid_input, stage_key
from tasks.core import numerics
from tasks.core.errors import ConfigError, did_you_mean
from tasks.core.progress import bar as progress_bar
from tasks.ops.task_runners import TASK_RUNNERS

DEFAULTS = {"task_runner": "local", "address": None, "root": None, "chunk_size": 256, "jobs": 1}   # jobs: prbench run's
_SCALE: contextvars.ContextVar[dict] = contextvars.ContextVar("prbench_scale", default=DEFAULTS)
_CWD = threading.Lock()


class ChunkFailed(ConfigError):
    """A chunk ended as invalid input (bad entry, unreadable file): retrying cannot fix it."""


# --- configuration -----------------------------------------------------------------------------

def scale_params(params: dict) -> dict:
    s = {**DEFAULTS, **(params.get("scale") or {})}
    for key in s:
        if key not in DEFAULTS:
            raise ConfigError(f"scale.{key}: {did_you_mean(key, DEFAULTS)}")
    TASK_RUNNERS.lookup(s["task_runner"], "scale.task_runner")
    if s["root"] is not None and not os.path.isabs(str(s["root"])):
        raise ConfigError(f"scale.root: the absolute path at which workers see the project, got {s['root']!r}")
    if not isinstance(s["chunk_size"], int) or s["chunk_size"] < 1:
        raise ConfigError(f"scale.chunk_size: a positive number of items per task, got {s['chunk_size']!r}")
    return s


def unscheduled(entry):
    """An RM entry without `resources`: where it runs is not part of any cache key."""
    from tasks.models.rms.registry import SCHEDULING

    return {k: v for k, v in entry.items() if k != SCHEDULING} if isinstance(entry, dict) else entry


def unscheduled_params(params: dict, stage: str, rm: str) -> dict:
    """A per-RM stage's params, its RM entry without `resources` (where it runs is no part of a key)."""
    from tasks.core.stage_table import used_params

    used = used_params(params, stage, rm)
    used["scoring"]["rms"][rm] = unscheduled(used["scoring"]["rms"][rm])
    return used


@contextlib.contextmanager
def configured(params: dict, rm: str | None = None):
    """Run the stage tasks inside on the task runner of `params['scale']`, with the resources of
    RM `rm`'s entry (e.g. {gpu: 1}) asked for each of its chunk tasks."""
    from tasks.models.rms.registry import resource_requests

    entry = (params.get("scoring") or {}).get("rms", {}).get(rm) if rm else None
    req = resource_requests(rm, entry) if isinstance(entry, dict) else {}
    token = _SCALE.set({**scale_params(params), "resources": req, "rm": rm})
    try:
        yield _SCALE.get()
    finally:
        _SCALE.reset(token)


def current() -> dict:
    return _SCALE.get()


def task_runner(scale: dict):
    """The kind registered as `scale.task_runner` (tasks/ops/task_runners.py)."""
    return TASK_RUNNERS.lookup(scale["task_runner"], "scale.task_runner")()


# --- what a worker does around a chunk ------------------------------------------------------------

def worker_label() -> str:
    """Where a chunk runs. A Dask or Ray worker has imported its engine already; a local process that has not
    is neither, and importing one only to ask cost ~0.25 s of every stage (distributed's import, py-spy)."""
    import sys

    if "distributed" in sys.modules:
        try:
            w = sys.modules["distributed"].get_worker()
            return f"dask worker {w.name} ({w.address})"
        except ValueError:
            pass
    ray = sys.modules.get("ray")
    if ray is not None:
        try:
            if ray.is_initialized() and ray.get_runtime_context().get_worker_id():
                return f"ray worker {ray.get_runtime_context().get_node_id()[:12]} on {socket.gethostname()}"
        except AttributeError:
            pass
    return f"process {os.getpid()} on {socket.gethostname()}"


@contextlib.contextmanager
def at_root(root: str):
    """Run with the project root as working directory: params, prompts and model folders are
    project-relative. A worker process serves one chunk at a time while it has to move there."""
    if os.getcwd() == root:
        yield
        return
    with _CWD:
        os.chdir(root)
        yield


_HASHES: dict = {}


def check_inputs(root: str, hashes: dict) -> None:
    """Every input the flow hashed must be here with the same content: one line naming the file and the worker."""
    if not os.path.isdir(root):
        raise ConfigError(f"{root}: no project folder there on {worker_label()}; every worker must see the project "
                          "at the same path (a shared filesystem, or a checkout there with `dvc pull`; scale.root "
                          "names the path workers see). See README, Scale out")
    for rel, expected in sorted(hashes.items()):
        path = Path(root) / rel
        if not os.access(path, os.R_OK):
            raise ConfigError(f"{path}: cannot be read on {worker_label()}; every worker must see the project at "
                              f"{root} (a shared filesystem, or a checkout there with `dvc pull`; scale.root "
                              "names the path workers see). See README, Scale out")
        st = path.stat()
        stamp = (str(path), st.st_size, st.st_mtime_ns)
        got = _HASHES.get(stamp) or _HASHES.setdefault(stamp, content_hash(path))
        if got != expected:
            raise ConfigError(f"{path}: on {worker_label()} its content differs from the flow's "
                              f"(sha256 {got[:12]} vs {expected[:12]}): sync the workers' copy (dvc pull)")


def chunk_task(name: str, fn):
    """A Prefect task for one chunk: `fn(**args, chunk=chunk, key=key)` -> dict, run at `root` on
    whichever worker the runner picks. Cached on args + hashes + chunk, not on the root, so a
    checkout mounted elsewhere keeps its cache; retried unless the input is invalid."""
    @task(name=name, cache_policy=TASK_SOURCE + INPUTS - "root", persist_result=True, retries=2,
          retry_delay_seconds=[1, 5], retry_condition_fn=retry_unless_invalid_input)
    def run_chunk(root: str, args: dict, key: dict, chunk: dict | None):
        try:
            check_inputs(root, key.get("inputs", {}))
            if numerics.mismatch():   # a long-lived worker whose torch predates the pins
                raise ConfigError(f"{numerics.mismatch()} (on {worker_label()})")
            with at_root(root):
                out = fn(**args, chunk=chunk, key=key)
        except USER_ERRORS as exc:
            where = worker_label()
            return Failed(message=str(exc) if where in str(exc) else f"{exc} (on {where})", name=INVALID_INPUT)
        return {**out, "worker": worker_label()}
    return run_chunk


# --- the driver side ------------------------------------------------------------------------------

def chunked(stage: str, run, chunk):
    """A chunked stage's run (params, rm, inputs, out): its logic gets `map_chunks`, which sends each
    chunk (e.g. benchmark x strategy x slice of pairs) as one `chunk` task to the configured runner."""
    def run_chunked(params: dict, rm: str, inputs: dict, out: dict) -> dict:
        chunks = functools.partial(map_chunks, chunk, {"params": params, "rm_name": rm, "inputs": inputs},
                                   stage_key(stage, params, rm), label=f"{stage} {rm}")
        return run(params, rm, inputs, out, map_chunks=chunks)
    return run_chunked


def map_chunks(chunk, args: dict, key: dict, chunks: list, *, label: str = "chunks") -> list[dict]:
    """Submit one `chunk` task (from chunk_task) per item of `chunks` to the configured runner, with
    the configured resources; results in the order of `chunks`, each with `cached` set. A chunk
    that stays failed fails the call (an invalid input at once, as ChunkFailed)."""
    from prefect.futures import as_completed

    scale = current()
    resources = scale.get("resources") or {}
    root = scale["root"] or os.getcwd()   # the project as the workers see it
    kind = task_runner(scale)
    runner = kind.make(scale["address"]).duplicate()
    with runner:
        kind.check_offered(runner, resources, f"scoring.rms.{scale.get('rm')}")
        with kind.submit_options(resources):
            futures = [runner.submit(chunk, parameters={"root": root, "args": args, "key": key, "chunk": c})
                       for c in chunks]
        index = {f.task_run_id: i for i, f in enumerate(futures)}
        states = [None] * len(futures)
        with progress_bar(total=len(futures), desc=label, unit="chunk") as bar:
            for f in as_completed(futures):
                f.wait()
                states[index[f.task_run_id]] = f.state
                bar.update(1)
    results = []
    for c, state in zip(chunks, states):
        if state.is_failed() or state.is_crashed() or not state.is_completed():
            message = f"{label} chunk {c}: {state.message or state.name}"
            if state.name == INVALID_INPUT:
                raise ChunkFailed(state.message)
            raise RuntimeError(message)
        results.append({**state.result(), "cached": state.name == "Cached"})
    return results
