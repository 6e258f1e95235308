"""What the stage flow (flows/stage.py) and the pipeline share: the stage task, code hashes for cache
keys, cached-output checks, and a main() that turns data errors into one line each, not a traceback."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import INPUTS, TASK_SOURCE
from prefect.states import Failed

from tasks.core import stage_table as stages
from tasks.core.artifacts import file_hash, tree_hash
from tasks.core.codedeps import code_files
from tasks.core.errors import ConfigError, UserError

ROOT = Path(__file__).resolve().parent.parent
CACHE = TASK_SOURCE + INPUTS
USER_ERRORS = (UserError,)   # data, params, schemas, flags: never retried, one line each (flows/boundary.py)
INVALID_INPUT = "InvalidInput"   # state name of a failure that retrying cannot fix


def retry_unless_invalid_input(task, task_run, state) -> bool:
    return state.name != INVALID_INPUT


STAGE_TASK = dict(cache_policy=CACHE, persist_result=True, retries=2, retry_delay_seconds=[2, 10],
                  retry_condition_fn=retry_unless_invalid_input)


def code_hash(stage: str) -> str:
    """The stage's code is part of its cache key: edit the logic and the cache misses. The same
    files as its dvc.yaml code deps: the project files its run imports (tasks/core/codedeps.py)."""
    return tree_hash([ROOT / f for f in code_files(stages.get(stage).code, ROOT)])


def stage_key(stage: str, params: dict, rm: str | None = None, inputs: dict | None = None) -> dict:
    """A stage's Prefect cache key besides its args: the content of the data deps it declares
    (dvc.yaml's, those that exist; `inputs` when the flow narrows them) and its code."""
    s = stages.get(stage)
    paths = [*_paths(s.inputs if inputs is None else inputs), *(stages.resolve(d, params, rm, s) for d in s.deps)]
    return {"deps": {p: content_hash(p) for p in sorted({p for p in paths if p}) if Path(p).exists()},
            "code": code_hash(stage)}


def _paths(inputs: dict) -> list[str]:
    """Every path in an inputs dict (values may be dicts of paths, e.g. one per RM, or None)."""
    return [p for v in inputs.values() for p in (_paths(v) if isinstance(v, dict) else [v]) if p]


def run_stage(task, stage: str, params: dict, *, rm: str | None = None, used: dict | None = None,
              inputs: dict | None = None, key_extra: dict | None = None):
    """Run a stage's task as the table declares it: its params (`used`, default exactly the declared
    keys), its inputs, its outputs; the cache key is the declared deps' content and the code."""
    s = stages.get(stage)
    args = {"params": stages.used_params(params, stage, rm) if used is None else used,
            "inputs": dict(s.inputs) if inputs is None else inputs, **({"rm": rm} if rm is not None else {})}
    key = {**stage_key(stage, params, rm, inputs), **(key_extra or {})}
    named = task.with_options(task_run_name=f"{stage}-{rm}") if rm is not None else task
    return run_stage_task(named, args=args, key=key, out=s.out(rm))


def content_hash(path) -> str:
    return tree_hash([path]) if Path(path).is_dir() else file_hash(path)


def hashes(paths: dict) -> dict:
    """{path: content hash} for a stage's named files or folders."""
    return {v: content_hash(v) for _, v in sorted(paths.items())}


def outputs_intact(result: dict) -> bool:
    """A cached result counts only while the files it describes are still on disk unchanged."""
    return all(Path(p).exists() and content_hash(p) == h for p, h in result["outputs"].items())


def as_failure(exc: Exception):
    """A user-facing failure: the task ends Failed with the message, and is never cached."""
    return Failed(message=str(exc), name=INVALID_INPUT)


def stage_task(name: str, run):
    """The one Prefect task every stage wraps its logic in: `run(**args, out=out)` -> metrics.
    `args` are paths and params, `key` content and code hashes: together the cache key. User
    errors end the task as InvalidInput (never retried or cached); the run's counters are
    reported here (log line + artifact) and never enter the cached result or DVC metrics."""
    @task(name=name, **STAGE_TASK)
    def stage(args: dict, key: dict, out: dict):
        try:
            metrics = run(**args, out=out)
        except USER_ERRORS as exc:
            return as_failure(exc)
        report_counters(f"{name}-{args['rm']}" if "rm" in args else name, metrics.pop("run", None))
        return {"outputs": hashes(out), "metrics": metrics}
    return stage


def report_counters(label: str, counters: dict | None) -> None:
    """This run's counters (calls, cache hits, latency ...) as a log line and a Prefect table artifact."""
    if not counters:
        return
    from prefect.artifacts import create_table_artifact

    rows = [{"counter": f"{group}.{k}" if k else group, "value": v}
            for group, values in sorted(counters.items())
            for k, v in (sorted(values.items()) if isinstance(values, dict) else [("", values)])]
    get_run_logger().info("run counters (not results; see runs/): %s", counters)
    create_table_artifact(key=f"run-{re.sub(r'[^a-z0-9-]+', '-', label.lower()).strip('-')}", table=rows,
                          description=f"Counters of the last {label} run (calls, cache hits, latency); "
                                      "not results, so not in DVC metrics")


def run_stage_task(task, **kwargs):
    """Run a stage task through Prefect's cache; rerun it if its cached outputs were removed."""
    state = task(return_state=True, **kwargs)
    if state.is_completed() and not outputs_intact(state.result()):
        state = task.with_options(refresh_cache=True)(return_state=True, **kwargs)
    if state.is_failed():   # surface the task's own message as the flow's
        return Failed(message=state.message, name=state.name)
    return state


def preflight(params_path=None, rm: str | None = None, stage: str | None = None) -> dict:
    """The params checked before anything starts (a server, a model): a ConfigError names each problem;
    every key the stage (default: the whole pipeline) reads must be in the file."""
    from tasks.core.errors import did_you_mean
    from tasks.ops.params import load_params

    params = load_params(params_path, complete=stages.read_keys([stage] if stage else None))
    group = stages.STAGES[stage].foreach if stage in stages.STAGES else "scoring.rms"
    keys = stages.fan_keys(stages.STAGES[stage], params) if stage in stages.STAGES else params["scoring"]["rms"]
    if rm is not None and rm not in keys:
        raise ConfigError(f"{group}: {did_you_mean(rm, keys)}")
    return params


RUN_TAGS = "PRBENCH_RUN_TAGS"


def send_queued_events() -> None:
    """Send the run's last events (its final states) now. Left queued, Prefect sends them at exit and, under load,
    logs "WARNING | EventsWorker - Still processing items" on a clean run's stderr. Flushed as Prefect's own task
    runner does (prefect/task_runners.py): only where a worker exists, so a run without events starts none."""
    from prefect.events.worker import EventsWorker

    with EventsWorker._instance_lock:
        running = bool(EventsWorker._instances)
    if running:
        EventsWorker.instance().wait_until_empty()


def main(flow, **kwargs) -> int:
    """Run a stage flow as a command: exit 0, or print each problem as one line and exit 1."""
    try:
        preflight(kwargs.get("params_path"), kwargs.get("rm", kwargs.get("benchmark")),
                  flow.name if flow.name in stages.STAGES else None)
        from prefect import tags

        # a stage run that a served run (score-rm, reproduce) started is tagged with it (PRBENCH_RUN_TAGS)
        with tags(*[t for t in os.environ.get(RUN_TAGS, "").split(",") if t]):
            state = flow(return_state=True, **kwargs)
    except USER_ERRORS as exc:
        print(str(exc), file=sys.stderr)
        return 1
    finally:
        send_queued_events()
    if state.is_failed():
        print(state.message or "stage failed", file=sys.stderr)
        return 1
    return 0
