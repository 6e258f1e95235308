"""The `prbench` command."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import flows  # noqa: F401 - sets Prefect's environment before anything imports prefect
from flows.score_cli import PLAIN_OPTIONS, cmd_score, score_entry  # noqa: F401 - `prbench score`, importable here
from flows.release_cli import API_URL_SET
from tasks.core.flags import Only, at_least, cron_arg, only, path_arg


def cmd_run(args) -> int:
    """The main job: the whole DAG on params.yaml, reported to a local Prefect server."""
    from tasks.ops.params import notices
    from tasks.core.stage_table import read_keys
    from tasks.ops.params import load_params

    # every problem of the params file and of the targets, before a server starts (dvc reads params.yaml only)
    params = load_params(args.params if args.no_dvc else None, complete=read_keys(), paths=read_keys())
    refuse_run_mistakes(args, params)
    for line in notices(params):
        print(f"prbench: notice: {line}", flush=True)
    def power_warning() -> None:   # a design below 80% power says so first (cached simulation: a file read)
        from tasks.ops.power_cli import warning

        line = warning(params)
        if line:
            print(line, flush=True)
    if args.no_dvc:
        power_warning()
        from flows.common import main
        from flows.pipeline import pipeline

        return main(pipeline, params_path=args.params, until=args.until)
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    from flows.run_dvc import run_dvc
    from tasks.ops.lock_prune import prune

    stale = []

    def work() -> bool:   # while the warm stage server imports
        power_warning()
        # a no-op run: `dvc status -q` (exit 0 = every stage up to date) costs a few seconds, a Prefect server ~5
        if not args.targets and subprocess.call(["dvc", "status", "-q"], env=env) == 0:
            print("prbench: every stage is up to date (dvc status): nothing to run. The report: open report/index.html")
            return False
        stale.append(True)
        gone = prune(Path.cwd(), params)   # DVC rewrites a stage's lock entry after it runs: stale ones cost each
        if gone:
            print(f"prbench: dvc.lock: dropped {len(gone)} entr{'y' if len(gone) == 1 else 'ies'} of stages params no "
                  f"longer has ({', '.join(gone[:3])}{', ...' if len(gone) > 3 else ''})", flush=True)
        return True
    jobs, engine = stage_engine(params["scale"], args.jobs)
    rc = run_dvc(args.targets, env, work, jobs=jobs, engine=engine)
    if rc == 0 and stale:
        print("prbench: done. The report: open report/index.html; metrics: `dvc metrics show`; browse the runs: "
              f"`PREFECT_HOME={os.environ['PREFECT_HOME']} prefect server start`")
    return rc


def refuse_run_mistakes(args, params: dict) -> None:
    """The targets, --until, the project's dvc.yaml and DVC's lock (another run in this project), before a server
    starts: one line each (DVC would say them after)."""
    from tasks.core.dag import target_problems
    from tasks.core.errors import ConfigError, did_you_mean
    from tasks.core.stage_table import ORDER
    from tasks.ops.repo_lock import dvc_lock_problem

    problems = target_problems(args.targets, params)
    if args.until and args.until not in ORDER:
        problems.append(f"--until: {did_you_mean(args.until, ORDER)}")
    if not args.no_dvc and not Path("dvc.yaml").is_file():
        problems.append(f"dvc.yaml: not in {Path.cwd()}: run `prbench run` from the project's root folder")
    held = None if args.no_dvc or problems else dvc_lock_problem(Path.cwd())
    if problems or held:
        raise ConfigError("\n".join([*problems, *([held] if held else [])]))


def stage_engine(scale: dict, jobs: int | None) -> tuple[int, list[str]]:
    """(stages at a time, tasks.ops.dvc_jobs's engine arguments): --jobs, else scale.jobs; the stage commands run
    on scale.task_runner's engine when it is dask (at scale.address, else a temporary local cluster of that many
    worker processes), else in local threads (Ray runs chunks only: said once)."""
    jobs = scale["jobs"] if jobs is None else jobs
    if jobs <= 1:
        return 1, []
    if scale["task_runner"] == "dask":
        return jobs, ["--runner", "dask", *(["--address", scale["address"]] if scale["address"] else [])]
    if scale["task_runner"] != "local":
        print(f"prbench: notice: scale.task_runner: {scale['task_runner']} runs chunks; the {jobs} stage commands at "
              "a time run in local threads (stages on a cluster: dask)", flush=True)
    return jobs, []


def cmd_validate(args) -> int:
    from tasks.stages.ingest import validate_path

    problems = validate_path(args.path, layout=args.layout)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"{args.path}: valid")
    return 1 if problems else 0


def cmd_serve(args) -> int:
    """Serve the deployments (reproduce, watch-releases, score-rm) against a persistent Prefect
    server: PREFECT_API_URL's when set, else one on 127.0.0.1 with the project's .prefect home."""
    from flows import server as srv
    from tasks.ops.params import load_params

    from tasks.core.stage_table import read_keys

    keys = [*read_keys(), "releases"]
    rel = load_params(complete=keys, paths=keys)["releases"]   # the whole file checked before a server starts
    url, local = os.environ.get("PREFECT_API_URL"), None
    if not url:
        port = args.port or rel["port"]
        url = f"http://127.0.0.1:{port}/api"
        if not srv.healthy(url):   # else: a server this project started earlier is still up; use it
            if srv.port_in_use(port):
                from tasks.core.errors import ConfigError

                raise ConfigError(f"{'--port' if args.port else 'releases.port'}: {port} on 127.0.0.1 is in use by "
                                  "something that is not a Prefect server; pick another (--port P) or stop what runs there")
            local = srv.start(port=port)
        os.environ.update(PREFECT_API_URL=url, PREFECT_UI_URL=url.removesuffix("/api"))   # before Prefect loads
    print(f"prbench: Prefect UI at {url.removesuffix('/api')} (deployments reproduce, watch-releases, score-rm; "
          "Ctrl-C stops serving, schedules stay active). From this folder: `prbench release check` runs the "
          "watcher now, `prbench release score MODEL[@REV]` scores one model, `prbench release status` shows "
          "what is registered, running, queued or failed", flush=True)
    from flows.deploy import serve

    try:
        serve(cron=args.cron, watch_cron=args.watch_cron)
    finally:
        if local:
            local.stop()
    return 0


def cmd_dag(args) -> int:
    from tasks.core import dag

    if args.outputs:   # every stage's outputs (per-RM ones as globs), e.g. for `make clean-outputs`
        from tasks.core.stage_table import TABLE

        print("\n".join(p.replace(s.token, "*") for s in TABLE for p in s.out().values()))
        return 0
    if args.write:
        print("dvc.yaml: written" if dag.write() else "dvc.yaml: already current")
        return 0
    problem = dag.check()
    print(problem or "dvc.yaml: current", file=sys.stderr if problem else sys.stdout)
    return 1 if problem else 0


def cmd_params(args) -> int:
    """Check params files (all problems, one line each), or print every key with its type, default and doc."""
    from tasks.ops.params import load_params, plugin_doc
    from tasks.core.params.doc import schema_doc

    if args.doc:   # the schema and the registries only: whatever params.yaml holds
        print(schema_doc(plugin_doc()))
        return 0
    from tasks.core.errors import ConfigError

    from tasks.ops.params import notices

    bad = 0
    for path in args.files or ["params.yaml"]:
        try:
            params = load_params(path, paths=True)
            print(f"{path}: valid (common.fidelity: {params['common']['fidelity']})",
                  *(f"\n{path}: notice: {n}" for n in notices(params)), sep="")
        except ConfigError as exc:
            print(str(exc), file=sys.stderr)
            bad += 1
    return 1 if bad else 0


def _add_module_commands(sub) -> None:
    """The subcommands their own modules declare (each module's add_parser)."""
    from tasks.downstream.correlation.diff import add_parser as add_diff
    from flows.release_cli import add_parser as add_release
    from tasks.ops import committed_run, explain_cli, human_eval_cli, power_cli
    from tasks.ops.doctor import add_parser as add_doctor
    from tasks.ops.report.cli import add_parser as add_report

    for add in (add_diff, add_release, add_report, add_doctor, human_eval_cli.add_parser, power_cli.add_parser,
                committed_run.add_parser, explain_cli.add_parser):
        add(sub)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="prbench", description="Personalized reward-model benchmark.")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the whole DAG (dvc repro, with a local Prefect server)")
    run.add_argument("targets", nargs="*", help="dvc stages to reproduce (default: all)")
    run.add_argument("--no-dvc", action="store_true", help="run the Prefect pipeline in-process instead")
    run.add_argument("--params", default=None, type=path_arg("file", "--params"),
                     help="params file for --no-dvc (default params.yaml; dvc repro reads params.yaml only)")
    run.add_argument("--jobs", type=at_least(1, "a whole number of stages at a time"), default=None, metavar="N",
                     help="run up to N ready stages at a time (default scale.jobs, 1: dvc repro); same dvc.lock and "
                          "outputs")
    run.add_argument("--until", default=None, metavar="STAGE", help="with --no-dvc: stop after this stage")
    run.set_defaults(func=cmd_run)
    only(run, Only("params", "--params", lambda a: a.no_dvc or _same_file(a.params, "params.yaml"),
                   "`prbench run` runs dvc repro, which reads params.yaml only (DVC tracks that file's values)",
                   "copy {value} over params.yaml, set single values with `dvc exp run -S key=value`, or add --no-dvc "
                   "to run it in one process without DVC"),
         Only("until", "--until", lambda a: a.no_dvc, "only with --no-dvc",
              "with DVC name the stage instead: `prbench run {value}` runs it and the stages it needs"),
         Only("targets", "{value}", lambda a: not a.no_dvc, "--no-dvc runs the whole pipeline and takes no stage names",
              "drop --no-dvc to run them with dvc repro, or stop after one with --no-dvc --until STAGE"),
         Only("jobs", "--jobs", lambda a: not a.no_dvc, "sets how many dvc stages run at a time, and --no-dvc runs no "
              "dvc", "drop --no-dvc, or --jobs"))
    val = sub.add_parser("validate", help="check a LaMP-QA file or folder; exit 1 on any problem")
    val.add_argument("path")
    val.add_argument("--layout", default="auto", choices=["auto", "lamp_qa", "rewardbench"])
    val.set_defaults(func=cmd_validate)
    from flows.score_cli import add_parser as add_score

    add_score(sub)
    srv = sub.add_parser("serve", help="a Prefect server + deployments: scheduled dvc repro, new RMs scored on release")
    srv.add_argument("--cron", default=None, type=cron_arg("--cron"),
                     help="reproduce's schedule (default params releases.reproduce_cron)")
    srv.add_argument("--watch-cron", default=None, type=cron_arg("--watch-cron"),
                     help="the release watcher's schedule (default releases.watch_cron)")
    srv.add_argument("--port", type=at_least(1, "a port", 65535), default=None,
                     help="local server port (default releases.port)")
    srv.set_defaults(func=cmd_serve)
    only(srv, API_URL_SET)
    dg = sub.add_parser("dag", help="dvc.yaml from the stage table: --write it, or check it is current (default)")
    dg.add_argument("--write", action="store_true", help="write dvc.yaml (atomic)")
    dg.add_argument("--outputs", action="store_true", help="list every stage's outputs (per-RM ones as globs)")
    dg.set_defaults(func=cmd_dag)
    only(dg, Only("write", "--write", lambda a: not a.outputs, "--outputs lists the outputs and writes nothing",
                  "run `prbench dag --write` on its own"))
    pa = sub.add_parser("params", help="check params files against the schema, or --doc: every key documented")
    pa.add_argument("files", nargs="*", help="params files (default params.yaml)")   # each one's problems said
    pa.add_argument("--doc", action="store_true", help="print every key with its type, default and doc")
    pa.set_defaults(func=cmd_params)
    only(pa, Only("files", "{value}", lambda a: not a.doc, "--doc prints the schema, whatever a file holds",
                  "check the files without --doc"))
    _add_module_commands(sub)
    return ap


def _same_file(a: str | None, b: str) -> bool:
    return a is not None and Path(a).resolve() == Path(b).resolve()


def main(argv=None) -> int:
    """`prbench ...`: every command inside the one error boundary (flows/boundary.py)."""
    from flows.boundary import run_command

    return run_command(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
