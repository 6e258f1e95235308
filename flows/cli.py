"""The `prbench` command."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import flows  # noqa: F401 - sets Prefect's environment before anything imports prefect


def cmd_run(args) -> int:
    """The main job: the whole DAG on params.yaml, reported to a local Prefect server."""
    from tasks.ops.params import load_params

    # every problem of the params file, before a server starts (dvc reads params.yaml only)
    from tasks.core.stage_table import read_keys

    load_params(args.params if args.no_dvc else None, complete=read_keys())
    if args.no_dvc:
        from flows.common import main
        from flows.pipeline import pipeline
        from tasks.core.stage_table import ORDER

        if args.until and args.until not in ORDER:
            print(f"--until {args.until}: not a stage (one of {', '.join(ORDER)})", file=sys.stderr)
            return 2
        return main(pipeline, params_path=args.params, until=args.until)
    from flows.server import local_server

    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    # a no-op run: `dvc status -q` (exit 0 = every stage up to date) costs a few seconds, a Prefect server ~10
    if not args.targets and subprocess.call(["dvc", "status", "-q"], env=env) == 0:
        print("prbench: every stage is up to date (dvc status): nothing to run. The report: open report/index.html")
        return 0
    from flows.server import free_port
    from flows.warm_run import Warm

    port = free_port()
    env["PREFECT_API_URL"] = f"http://127.0.0.1:{port}/api"
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    warm = Warm(env, os.path.join(os.environ["PREFECT_HOME"], "warm.log"))   # imports while the server starts
    try:
        with local_server(port=port) as url:
            print(f"prbench: Prefect server at {url.removesuffix('/api')} (stopped at the end)", flush=True)
            rc = subprocess.call(["dvc", "repro", *args.targets], env={**env, **warm.wait_ready()})
    finally:
        print(warm.stop(), flush=True)
    if rc == 0:
        print("prbench: done. The report: open report/index.html; metrics: `dvc metrics show`; browse the runs: "
              f"`PREFECT_HOME={os.environ['PREFECT_HOME']} prefect server start`")
    return rc


def cmd_validate(args) -> int:
    from tasks.stages.ingest import validate_path

    problems = validate_path(args.path, layout=args.layout)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"{args.path}: valid")
    return 1 if problems else 0


def _option(text: str):
    import yaml

    from tasks.core.errors import ConfigError

    key, eq, value = text.partition("=")
    if not eq or not key:
        raise ConfigError(f"--option {text}: expected KEY=VALUE, e.g. max_length=4096")
    try:
        return key, yaml.safe_load(value)
    except yaml.YAMLError:
        return key, value


PLAIN_OPTIONS = ("batch_size", "max_length", "revision")   # reward-bench's common flags, as RM entry options


def score_entry(args, params: dict) -> dict:
    """The RM entry the flags describe, checked as a params entry, its problems named as flags."""
    from tasks.core.errors import ConfigError
    from tasks.ops.params import check_params
    from tasks.models.strategies import STRATEGIES

    plain = {k: getattr(args, k) for k in PLAIN_OPTIONS if getattr(args, k, None) is not None}
    entry = {"kind": args.kind, **({"model": args.model} if args.model else {}), **plain,
             **dict(map(_option, args.option))}
    _, problems = check_params({**params, "scoring": {**params["scoring"], "rms": {"cli": entry}}})
    options = dict(map(_option, args.option))
    flags = {"kind": "--kind", "model": "--model", **{k: "--" + k.replace("_", "-") for k in plain if k not in options}}
    lines = []
    for p in problems:
        if p.startswith("scoring.rms.cli."):
            opt, _, rest = p.removeprefix("scoring.rms.cli.").partition(":")
            flag = flags.get(opt, f"--option {opt}")
            if opt == "llm" and "required" in rest:
                rest = f" required for kind '{args.kind}': --option llm=<a name under llms: {', '.join(params['llms'])}>"
            lines.append(f"{flag}:{rest}")
    lines += STRATEGIES.check_names(args.strategy.split(","), "--strategy")
    if lines:
        raise ConfigError("\n".join(lines))
    return entry


def cmd_score(args) -> int:
    from tasks.ops.params import load_params
    from tasks.ops.quick_score import data_source, quick_score

    params = load_params(args.params)
    if args.benchmark or args.subset or args.limit:   # list-wise benchmarks score with none / raw_profile
        args.strategy = "none"
    entry = score_entry(args, params)
    benchmark = args.benchmark
    if args.data and not benchmark:
        from tasks.stages.benchmarks.cli import OURS, detect

        found = detect(args.data)
        benchmark = found if found != OURS else None
    if args.data and not (benchmark and not Path(args.data).exists()):
        data_source(args.data)   # a missing local path is named here, never looked up on the hub
    name = args.name or (Path(args.model).name if args.model else args.kind)
    out = Path(args.out or f"results/score-{name}")
    if benchmark:
        from tasks.stages.benchmarks import get
        from tasks.stages.benchmarks.cli import score_benchmark

        get(benchmark, "--benchmark")   # an unknown name: "did you mean"
        if args.fidelity:
            params = {**params, "common": {**params["common"], "fidelity": args.fidelity}}
        print(score_benchmark(params, entry=entry, name=name, benchmark=benchmark, data=args.data, out=out,
                              subset=args.subset, limit=args.limit))
        print(f"prbench: per-item scores and metrics under {out}/")
        return 0
    table = quick_score(params, entry=entry, name=name, data=args.data, strategies=args.strategy.split(","), out=out,
                        limit=args.limit, fidelity=args.fidelity)
    print(table)
    print(f"prbench: per-item scores and leaderboard under {out}/")
    return 0


def cmd_serve(args) -> int:
    """Serve the deployments (reproduce, watch-releases, score-rm) against a persistent Prefect
    server: PREFECT_API_URL's when set, else one on 127.0.0.1 with the project's .prefect home."""
    from flows import server as srv
    from tasks.ops.params import load_params

    from tasks.core.stage_table import read_keys

    rel = load_params(complete=[*read_keys(), "releases"])["releases"]   # the whole file checked before a server starts
    url, local = os.environ.get("PREFECT_API_URL"), None
    if not url:
        url = f"http://127.0.0.1:{args.port or rel['port']}/api"
        if not srv.healthy(url):   # else: a server this project started earlier is still up; use it
            local = srv.start(port=args.port or rel["port"])
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

        print("\n".join(p.replace("${key}", "*") for s in TABLE for p in s.out().values()))
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

    bad = 0
    for path in args.files or ["params.yaml"]:
        try:
            fidelity = load_params(path)["common"]["fidelity"]
            print(f"{path}: valid (common.fidelity: {fidelity})")
        except ConfigError as exc:
            print(str(exc), file=sys.stderr)
            bad += 1
    return 1 if bad else 0


def add_score(sub) -> None:
    """`prbench score`'s flags."""
    from tasks.models.rms.registry import KINDS
    from tasks.stages.benchmarks import BENCHMARKS

    sc = sub.add_parser("score", help="score one RM on pairs, a released-benchmark layout or a hub id")
    sc.add_argument("--model", help="HF id or local path (kinds that load a model)")
    sc.add_argument("--kind", default="seq-cls", help=f"an RM kind: {', '.join(KINDS.names())}")
    sc.add_argument("--name", help="name in the outputs (default: the model's folder name)")
    sc.add_argument("--data", help="pairs Parquet (default data/pairs/selected.parquet), released-benchmark files, or a hub id")
    sc.add_argument("--strategy", default="none,raw_profile,oracle", help="comma list of none,raw_profile,planner,oracle")
    sc.add_argument("--batch-size", type=int, help="answers per forward pass (the entry's batch_size)")
    sc.add_argument("--max-length", type=int, help="tokens per input; over it the profile is cut first (max_length)")
    sc.add_argument("--revision", help="the model's hub revision: a commit, tag or branch (revision)")
    sc.add_argument("--limit", type=int, metavar="N", help="score only the first N pairs (after scoring.per_domain_limit), "
                                                          "with --benchmark the first N items: a quick try")
    sc.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="another RM entry option, e.g. max_length=4096 or trust_remote_code=true")
    sc.add_argument("--benchmark", help=f"another benchmark through the list-wise scorer: {', '.join(BENCHMARKS.names())}"
                                        " (--data: its local copy or hub id; default its published hub id); detected "
                                        "from --data's layout")
    sc.add_argument("--subset", help="--benchmark: only this subset")
    sc.add_argument("--out", help="output folder (default results/score-<name>)")
    sc.add_argument("--params", default=None, help="params file (default params.yaml)")
    sc.add_argument("--fidelity", choices=["corrected", "release"],
                    help="what the RM is shown and how (default: the params file's common.fidelity): corrected "
                         "(prbench) | release (the authors' release, bugs included: docs/paper-setting.md)")
    sc.set_defaults(func=cmd_score)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="prbench", description="Personalized reward-model benchmark.")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the whole DAG (dvc repro, with a local Prefect server)")
    run.add_argument("targets", nargs="*", help="dvc stages to reproduce (default: all)")
    run.add_argument("--no-dvc", action="store_true", help="run the Prefect pipeline in-process instead")
    run.add_argument("--params", default=None, help="params file for --no-dvc (default params.yaml)")
    run.add_argument("--until", default=None, metavar="STAGE", help="with --no-dvc: stop after this stage")
    run.set_defaults(func=cmd_run)
    val = sub.add_parser("validate", help="check a LaMP-QA file or folder; exit 1 on any problem")
    val.add_argument("path")
    val.add_argument("--layout", default="auto", choices=["auto", "lamp_qa", "rewardbench"])
    val.set_defaults(func=cmd_validate)
    add_score(sub)
    srv = sub.add_parser("serve", help="a Prefect server + deployments: scheduled dvc repro, new RMs scored on release")
    srv.add_argument("--cron", default=None, help="reproduce's schedule (default params releases.reproduce_cron)")
    srv.add_argument("--watch-cron", default=None, help="the release watcher's schedule (default releases.watch_cron)")
    srv.add_argument("--port", type=int, default=None, help="local server port (default releases.port)")
    srv.set_defaults(func=cmd_serve)
    dg = sub.add_parser("dag", help="dvc.yaml from the stage table: --write it, or check it is current (default)")
    dg.add_argument("--write", action="store_true", help="write dvc.yaml (atomic)")
    dg.add_argument("--outputs", action="store_true", help="list every stage's outputs (per-RM ones as globs)")
    dg.set_defaults(func=cmd_dag)
    pa = sub.add_parser("params", help="check params files against the schema, or --doc: every key documented")
    pa.add_argument("files", nargs="*", help="params files (default params.yaml)")
    pa.add_argument("--doc", action="store_true", help="print every key with its type, default and doc")
    pa.set_defaults(func=cmd_params)
    from tasks.downstream.correlation.diff import add_parser as add_diff
    from flows.release_cli import add_parser as add_release
    from tasks.ops import human_eval_cli
    from tasks.ops.report.cli import add_parser as add_report

    add_diff(sub)
    add_release(sub)
    add_report(sub)
    human_eval_cli.add_parser(sub)
    return ap


def main(argv=None) -> int:
    from tasks.core.errors import ConfigError, DataError, DataErrors

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, DataError, DataErrors) as exc:   # a user's input: one line per problem, no traceback
        print(str(exc), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
