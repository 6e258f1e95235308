"""`prbench run --jobs N`: the DAG's ready stages N at a time, with DVC's own bookkeeping.

DVC has no parallel repro, and its Repo object is not thread-safe (a stage's run resets the repo's caches
while the lock is released). So one process plans in DVC's order (`plan_repro`), decides per stage with
DVC's `changed()` once every upstream stage has finished, and runs only the stage's *command* elsewhere:
as a Prefect task on a task runner (a thread pool of N here, or a Dask cluster), the same argv, cwd and
environment `dvc repro` gives it (dvc.stage.run). Everything DVC does around a command (outputs removed
before, the run cache tried, deps and outs hashed and committed to the cache after, the lock entry) stays
in this one thread, one stage at a time, by DVC's own methods.

A stage's lock entry is written all-or-nothing after its outputs are in the cache (temp file + rename), and
entries are placed in the order plain `dvc repro` would leave them: the lock's entries in place, new ones
in plan order. So a completed run's dvc.lock has the serial bytes whatever N. A failing stage stops new
starts; the running ones finish and are recorded; the run fails naming it. Ctrl-C records nothing more.
Outside `flows` on purpose: a `python -m flows.*` process hands itself to a warm fork (flows/__init__.py)."""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tasks.ops.lock_splice import HEAD, _blocks, _name, entry_text

QUIET = "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW"   # the stage-command tasks run outside a flow run


def say(line: str) -> None:
    print(line, flush=True)


def _die_with_parent():
    """In the forked child: SIGKILL it when the thread that started it ends (prctl PR_SET_PDEATHSIG, kept across
    exec). That thread waits for the command, so it ends first only when its process dies."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)   # PR_SET_PDEATHSIG


def _prctl():
    try:   # resolved before any fork: the child only calls it
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):   # not Linux: a killed worker's command finishes on its own
        return None


_PRCTL = _prctl()

# A death signal reaches the shell alone, and dash (/bin/sh, DVC's shell when $SHELL is unset) forks even a
# single command: the stage's own process would outlive a killed worker. So on a worker the command runs under
# this guard, leader of its own process group: when the worker dies, the guard's stdin (a pipe only the worker
# holds) ends, and the guard kills the whole group, the command and whatever it started.
GUARD = """
import os, signal, subprocess, sys, threading
command = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)
def watch():
    while os.read(0, 512):   # b"" at EOF: the worker closed the pipe, or died
        pass
    if command.poll() is None:
        os.killpg(0, signal.SIGKILL)
threading.Thread(target=watch, daemon=True).start()
code = command.wait()
os._exit(128 - code if code < 0 else code)   # not sys.exit: the watcher holds stdin
"""


def run_command(argv: list[str], cwd: str, env: dict, guarded: bool = False) -> int:
    """A stage's command, as DVC's cmd_run runs it; its exit status. `guarded` (a Dask worker): it dies with
    this process, whatever it forks. Locally it stays in the foreground process group, so Ctrl-C reaches it."""
    if not guarded:
        return subprocess.call(argv, cwd=cwd, env=env, close_fds=True, preexec_fn=_die_with_parent)
    guard = subprocess.Popen([sys.executable, "-c", GUARD, *argv], cwd=cwd, env=env, close_fds=True,
                             stdin=subprocess.PIPE, start_new_session=True)   # no death signal: it must live to kill
    try:
        return guard.wait()
    finally:
        guard.stdin.close()


def ordered(text: str, entries: dict[str, dict], rank: dict[str, int]) -> str | None:
    """The lock text with `entries` replaced or added, every entry placed by `rank` (stage name -> place);
    None for a lock of another shape."""
    if not text:
        text = HEAD
    blocks = _blocks(text[len(HEAD):]) if text.startswith(HEAD) else None
    if blocks is None:
        return None
    by_name = {_name(k): (k, v) for k, v in blocks.items()}
    for name, entry in entries.items():
        by_name[name] = entry_text(name, entry)
    names = sorted(by_name, key=lambda n: rank.get(n, len(rank)))
    return HEAD + "".join(by_name[n][0] + by_name[n][1] for n in names)


def run_rank(before: list[str], plan: list[str], saved: list[str] | None) -> dict[str, int]:
    """Where each stage's entry goes: the lock's entries in place, new ones in plan order (what serial `dvc
    repro` writes). After a run that stopped early, its finished stages are not a prefix of the plan as a
    serial run's are; that run's order (`saved`) is kept when it covers the lock, so the resumed run ends
    with the bytes of one that never stopped."""
    order = saved if saved is not None and set(before) <= set(saved) else before
    rank = {n: i for i, n in enumerate(order)}
    for n in plan:
        rank.setdefault(n, len(rank))
    return rank


class Jobs:
    """One `prbench run --jobs N`: `runner` is a Prefect task runner (entered), `submit(task, args)` a future."""

    def __init__(self, repo, steps: list, graph, runner, jobs: int, guarded: bool = False):
        from prefect import task
        from prefect.cache_policies import NO_CACHE

        self.repo, self.steps, self.graph, self.runner, self.jobs = repo, steps, graph, runner, jobs
        self.guarded = guarded   # commands on Dask workers: each dies with its worker (run_command)
        self.task = task(name="stage-command", cache_policy=NO_CACHE)(run_command)
        self.lock_path = Path(repo.root_dir) / "dvc.lock"
        text = self.lock_path.read_text(encoding="utf-8") if self.lock_path.exists() else ""
        from tasks.ops.lock_splice import names

        self.order_path = Path(repo.tmp_dir) / "prbench-jobs-order.json"
        saved = json.loads(self.order_path.read_text()) if self.order_path.exists() else None
        self.rank = run_rank((names(text) if text else None) or [], [s.addressing for s in steps], saved)

    def upstream(self, stage) -> set:
        return {s for s in self.graph.successors(stage) if s in self.steps}

    def start(self, stage):
        """Ready to run: None when DVC would skip it or restores it from its run cache, else a future."""
        from dvc.stage.cache import RunCacheNotFoundError
        from dvc.stage.run import _enforce_cmd_list, _make_cmd, get_executable, prepare_kwargs

        if not stage.changed():
            say(f"Stage '{stage.addressing}' didn't change, skipping")
            return None
        stage.remove_outs(ignore_remove=False, force=False)
        try:
            self.repo.stage_cache.restore(stage)
            self.finish(stage)
            return None
        except RunCacheNotFoundError:
            stage.save_deps()
        cmds = _enforce_cmd_list(stage.cmd)
        if len(cmds) != 1:
            raise SystemExit(f"{stage.addressing}: --jobs runs one command per stage, it has {len(cmds)}")
        kwargs = prepare_kwargs(stage)
        env = {k: v for k, v in kwargs["env"].items() if k != QUIET}   # the stage's env is dvc repro's
        say(f"Running stage '{stage.addressing}':\n> {cmds[0]}")
        return self.runner.submit(self.task, parameters={"argv": _make_cmd(get_executable(), cmds[0]),
                                                         "cwd": kwargs["cwd"], "env": env,
                                                         "guarded": self.guarded})

    def finish(self, stage) -> None:
        """What DVC does after a stage's command: hash and commit its outs, then its lock entry."""
        from dvc.stage import serialize
        from tasks.core.artifacts import write_text

        no_cache_outs = any(not o.use_cache for o in stage.outs if not (o.is_metric or o.is_plot))
        stage.save(run_cache=not no_cache_outs)
        stage.commit()
        text = self.lock_path.read_text(encoding="utf-8") if self.lock_path.exists() else ""
        new = ordered(text, serialize.to_lockfile(stage), self.rank)
        if new is None:   # a lock of another shape: DVC's own write
            stage.dump(update_pipeline=False)
        elif new != text:
            write_text(new, self.lock_path)

    def _loop(self, pending: list, done: set, running: dict, failed: list) -> None:
        """Start ready stages (at most `jobs` running), record each as it finishes; stop starting at a failure."""
        from prefect.futures import as_completed

        while pending or running:
            for stage in list(pending):
                if failed or len(running) >= self.jobs:
                    break
                if self.upstream(stage) <= done:
                    pending.remove(stage)
                    future = self.start(stage)
                    if future is None:
                        done.add(stage)
                    else:
                        running[future] = stage
            if failed and not running:
                break
            if not running:
                if pending and not any(self.upstream(s) <= done for s in pending):
                    break   # what is left waits on a failed stage
                continue
            for future in [next(as_completed(list(running)))]:   # the first to finish
                stage = running.pop(future)
                future.wait()   # done in the pool is not yet a final Prefect state
                state = future.state
                rc = future.result(raise_on_failure=False) if state.is_completed() else None
                if rc == 0:
                    self.finish(stage)
                    done.add(stage)
                else:
                    why = f"exit status {rc}" if isinstance(rc, int) else (state.message or state.name)
                    say(f"ERROR: failed to reproduce '{stage.addressing}': {why}")
                    failed.append(stage)

    def run(self) -> int:
        # DVC adds each output to its folder's .gitignore when it saves it, and that file counts in the hash of
        # a folder a later stage depends on (data/scores): the lines go in now, in plan order, as serially
        for stage in self.steps:
            for out in stage.outs:
                if not out.metric:
                    Path(out.fs_path).parent.mkdir(parents=True, exist_ok=True)   # a first run: no folder yet
                    out.ignore()
        getattr(self.repo.scm, "_reset", lambda: None)()   # its cached view of .gitignore: or a save adds them again
        pending, done, running, failed = list(self.steps), set(), {}, []
        try:
            self._loop(pending, done, running, failed)
        except BaseException:   # Ctrl-C: the next run keeps this one's order
            self.order_path.write_text(json.dumps(sorted(self.rank, key=self.rank.get)))
            raise
        if failed or pending:   # the next run keeps this one's order (run_rank)
            self.order_path.write_text(json.dumps(sorted(self.rank, key=self.rank.get)))
        else:
            self.order_path.unlink(missing_ok=True)
        if failed:
            say("ERROR: failed to reproduce " + ", ".join(repr(s.addressing) for s in failed))
            return 1
        return 0


def make_runner(kind: str, jobs: int, address: str | None):
    if kind == "dask":
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(address=address) if address else DaskTaskRunner(
            cluster_kwargs={"n_workers": jobs, "threads_per_worker": 1, "processes": True})
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=jobs)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tasks.ops.dvc_jobs")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--runner", default="local", choices=["local", "dask"])
    ap.add_argument("--address", default=None)
    ap.add_argument("targets", nargs="*")
    args = ap.parse_args(argv)
    os.environ.setdefault(QUIET, "ignore")
    from dvc.repo import Repo
    from dvc.repo.reproduce import collect_stages, get_active_graph, plan_repro

    repo = Repo()
    with repo.lock:
        repo._reset()   # noqa: SLF001 - as DVC's @locked does
        stages = collect_stages(repo, args.targets or ["dvc.yaml"])
        graph = get_active_graph(repo.index.graph)
        steps = plan_repro(graph, stages)
        with make_runner(args.runner, args.jobs, args.address) as runner:
            return Jobs(repo, steps, graph, runner, args.jobs, guarded=args.runner == "dask").run()


if __name__ == "__main__":   # by its module's name: a Dask worker imports run_command, as pickled by reference
    from tasks.ops.dvc_jobs import main as _main

    sys.exit(_main(sys.argv[1:]))
