"""The one stage flow: `python -m flows.stage <name> [<key>]` (dvc.yaml's command) runs the stage the
table declares (tasks/core/stage_table.py): its logic is the function the entry names (`run`), called
(params, [key,] inputs, out) inside the Prefect task of flows/common.py. What else differs per stage is
declared, never written again here: by the entry (`chunk`: its chunks go to the task runner,
flows/runner.py; `ui`: the flows/ui.py table of its results) and by optional functions of its run's
module, called when present (HOOKS; the prefix keeps them apart from the module's own names):

- stage_inputs(params, key, declared) -> dict: the inputs it reads, from the declared ones (e.g. narrowed
  to the RMs in params); also its cache key's data
- stage_params(params, key, used) -> dict: the params it is given and keyed on, from its declared keys
- stage_cache_extra(params, key) -> dict: more of its cache key (data no declared dep can hash)
- stage_summary(out, metrics) -> str: printed after a completed run
- stage_rows(out) -> list[dict]: the rows the entry's `ui` shows
- STAGE_LOG_PRINTS = False: its prints are not log lines

This module imports no stage's logic: it loads the one stage's modules by the names the entry gives, so
a stage's code (its dvc.yaml deps and cache key) is this module's imports plus its own (`Stage.code`)."""
from __future__ import annotations

import contextlib
import functools
import importlib
import sys
from pathlib import Path

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.core import hash_store, stage_table as stages
from tasks.ops.params import load_params


HOOKS = ("stage_inputs", "stage_params", "stage_cache_extra", "stage_summary", "stage_rows", "STAGE_LOG_PRINTS")


def resolve(dotted: str):
    """What a table entry names: 'package.module:attribute'."""
    module, _, attr = dotted.partition(":")
    return getattr(importlib.import_module(module), attr)


def logic(name: str):
    """The module of the stage's run function: where its optional functions are."""
    return importlib.import_module(stages.get(name).run.partition(":")[0])


def _runner(s: stages.Stage):
    """flows/runner.py for a chunked stage, by the name its `code` lists (an import statement here would
    make every stage's code include the runner and the RM registry it reads)."""
    return importlib.import_module(stages.RUNNER) if s.chunk else None


@functools.cache
def chunk_task_of(name: str):
    """A chunked stage's Prefect task for one chunk (`<name>-chunk`)."""
    s = stages.get(name)
    return _runner(s).chunk_task(f"{name}-chunk", resolve(s.chunk))


@functools.cache
def task_of(name: str):
    """The stage's Prefect task around its run function."""
    s = stages.get(name)
    run = resolve(s.run)
    if s.chunk:
        run = _runner(s).chunked(name, run, chunk_task_of(name))

    def call(params: dict, inputs: dict, out: dict, rm: str | None = None) -> dict:
        return run(params, inputs, out) if rm is None else run(params, rm, inputs, out)
    return stage_task(name, call)


def run_named(name: str, key: str | None, params_path: str | None):
    """One run of stage `name` (for `key`, one RM or entry, when per key): its params, inputs and
    cache key as declared; then what it prints and shows in the UI."""
    s, mod = stages.get(name), logic(name)
    params, runner = load_params(params_path), _runner(s)
    # its inputs' hashes kept across stage processes (an unchanged model folder is not hashed again per stage)
    hash_store.use(Path(params["common"]["cache_dir"]) / "file-hashes.sqlite")
    # a chunked stage's RM entry is keyed without `resources`: where it runs is no part of a key
    used = runner.unscheduled_params(params, name, key) if runner else stages.used_params(params, name, key)
    if hasattr(mod, "stage_params"):
        used = mod.stage_params(params, key, used)
    inputs = mod.stage_inputs(params, key, dict(s.inputs)) if hasattr(mod, "stage_inputs") else None
    extra = mod.stage_cache_extra(params, key) if hasattr(mod, "stage_cache_extra") else None
    with runner.configured(params, key) if runner else contextlib.nullcontext():
        state = run_stage(task_of(name), name, params, rm=key, used=used, inputs=inputs, key_extra=extra)
    if state.is_completed():
        from tasks.core.numerics import record

        record("runs/numerics", f"{name}@{key}" if key else name)   # the machine and kernels, outside DVC's hashes
        out, metrics = s.out(key), state.result()["metrics"]
        if hasattr(mod, "stage_summary"):
            print(mod.stage_summary(out, metrics))
        if s.ui:   # the Prefect UI's table artifact of its results
            resolve(s.ui)(mod.stage_rows(out))
    return state


def _entry(name: str, key_arg: str | None):
    """The flow function: its parameters are what a run is called with (Prefect names runs by them)."""
    if key_arg is None:
        def stage(params_path: str | None = None):
            return run_named(name, None, params_path)
    elif key_arg == "rm":
        def stage(rm: str, params_path: str | None = None):
            return run_named(name, rm, params_path)
    else:
        def stage(benchmark: str, params_path: str | None = None):
            return run_named(name, benchmark, params_path)
    return stage


@functools.cache
def flow_of(name: str):
    """The Prefect flow of stage `name`, named after it (a per-key run: `<name>-<key>`)."""
    s = stages.get(name)
    key_arg = s.key_arg if s.per_rm else None
    return flow(name=name, flow_run_name=f"{name}-{{{key_arg}}}" if key_arg else name,
                log_prints=getattr(logic(name), "STAGE_LOG_PRINTS", True))(_entry(name, key_arg))


def cli(argv: list[str]) -> int:
    """`python -m flows.stage <name> [<key>]`: exit 0, or print each problem as one line and exit 1 (2: usage)."""
    from tasks.core.errors import did_you_mean

    if not argv or argv[0] not in stages.STAGES:
        print(f"usage: python -m flows.stage <stage> [<key>]; stage: "
              f"{did_you_mean(argv[0], stages.STAGES) if argv else 'one of ' + ', '.join(stages.ORDER)}", file=sys.stderr)
        return 2
    s = stages.STAGES[argv[0]]
    if len(argv) != 1 + s.per_rm:
        print(f"usage: python -m flows.stage {s.name}" + (f" <a name from params {s.foreach}>" if s.per_rm else ""),
              file=sys.stderr)
        return 2
    return main(flow_of(s.name), **({s.key_arg: argv[1]} if s.per_rm else {}))


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
