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
    if args.no_dvc:
        from flows.common import main
        from flows.pipeline import STAGES, pipeline

        if args.until and args.until not in {s for s, _ in STAGES}:
            print(f"--until {args.until}: not a stage (one of {', '.join(s for s, _ in STAGES)})", file=sys.stderr)
            return 2
        return main(pipeline, params_path=args.params, until=args.until)
    from flows.server import local_server

    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    with local_server() as url:
        print(f"prbench: Prefect server at {url.removesuffix('/api')} (stopped at the end)", flush=True)
        rc = subprocess.call(["dvc", "repro", *args.targets], env={**env, "PREFECT_API_URL": url})
    if rc == 0:
        print("prbench: done. The report: open report/index.html; metrics: `dvc metrics show`; browse the runs: "
              f"`PREFECT_HOME={os.environ['PREFECT_HOME']} prefect server start`")
    return rc


def cmd_validate(args) -> int:
    from tasks.ingest import validate_path

    problems = validate_path(args.path, layout=args.layout)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"{args.path}: valid")
    return 1 if problems else 0


def _option(text: str):
    key, _, value = text.partition("=")
    import yaml

    return key, yaml.safe_load(value)


def cmd_score(args) -> int:
    from tasks.errors import ConfigError, DataErrors
    from tasks.params import load_params
    from tasks.quick_score import quick_score

    entry = {"kind": args.kind, **({"model": args.model} if args.model else {}), **dict(map(_option, args.option))}
    name = args.name or (Path(args.model).name if args.model else args.kind)
    out = Path(args.out or f"results/score-{name}")
    try:
        table = quick_score(load_params(args.params), entry=entry, name=name, data=args.data,
                            strategies=args.strategy.split(","), out=out)
    except (ConfigError, DataErrors) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(table)
    print(f"prbench: per-item scores and leaderboard under {out}/")
    return 0


def cmd_serve(args) -> int:
    """Serve the deployments (reproduce, watch-releases, score-rm) against a persistent Prefect
    server: PREFECT_API_URL's when set, else one on 127.0.0.1 with the project's .prefect home."""
    from flows import server as srv
    from tasks.params import load_params

    rel = load_params()["releases"]
    url, local = os.environ.get("PREFECT_API_URL"), None
    if not url:
        url = f"http://127.0.0.1:{args.port or rel['port']}/api"
        if not srv.healthy(url):   # else: a server this project started earlier is still up; use it
            local = srv.start(port=args.port or rel["port"])
        os.environ.update(PREFECT_API_URL=url, PREFECT_UI_URL=url.removesuffix("/api"))   # before Prefect loads
    print(f"prbench: Prefect UI at {url.removesuffix('/api')} (deployments reproduce, watch-releases, score-rm; "
          "Ctrl-C stops serving, schedules stay active)", flush=True)
    from flows.deploy import serve

    try:
        serve(cron=args.cron, watch_cron=args.watch_cron)
    finally:
        if local:
            local.stop()
    return 0


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
    sc = sub.add_parser("score", help="score one RM on pairs, a released-benchmark layout or a hub id")
    sc.add_argument("--model", help="HF id or local path (kinds that load a model)")
    sc.add_argument("--kind", default="seq-cls", help="an RM kind (seq-cls, judge-pairwise, similarity, ...)")
    sc.add_argument("--name", help="name in the outputs (default: the model's folder name)")
    sc.add_argument("--data", help="pairs Parquet (default data/pairs/selected.parquet), released-benchmark files, or a hub id")
    sc.add_argument("--strategy", default="none,raw_profile,oracle", help="comma list of none,raw_profile,planner,oracle")
    sc.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="another RM entry option, e.g. max_length=4096 or trust_remote_code=true")
    sc.add_argument("--out", help="output folder (default results/score-<name>)")
    sc.add_argument("--params", default=None, help="params file (default params.yaml)")
    sc.set_defaults(func=cmd_score)
    srv = sub.add_parser("serve", help="a Prefect server + deployments: scheduled dvc repro, new RMs scored on release")
    srv.add_argument("--cron", default=None, help="reproduce's schedule (default params releases.reproduce_cron)")
    srv.add_argument("--watch-cron", default=None, help="the release watcher's schedule (default releases.watch_cron)")
    srv.add_argument("--port", type=int, default=None, help="local server port (default releases.port)")
    srv.set_defaults(func=cmd_serve)
    from tasks.correlation.diff import add_parser as add_diff
    from tasks.human_eval import cli as human_eval_cli
    from tasks.report.cli import add_parser as add_report

    add_diff(sub)
    add_report(sub)
    human_eval_cli.add_parser(sub)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
