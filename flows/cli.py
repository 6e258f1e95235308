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
        from flows.pipeline import pipeline

        return main(pipeline, params_path=args.params)
    from flows.server import local_server

    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    with local_server() as url:
        print(f"prbench: Prefect server at {url.removesuffix('/api')} (stopped at the end)", flush=True)
        rc = subprocess.call(["dvc", "repro", *args.targets], env={**env, "PREFECT_API_URL": url})
    if rc == 0:
        print("prbench: done. Metrics: `dvc metrics show`; browse the runs: "
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


def cmd_serve(args) -> int:
    from flows.deploy import serve

    serve(args.cron)
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="prbench", description="Personalized reward-model benchmark.")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the whole DAG (dvc repro, with a local Prefect server)")
    run.add_argument("targets", nargs="*", help="dvc stages to reproduce (default: all)")
    run.add_argument("--no-dvc", action="store_true", help="run the Prefect pipeline in-process instead")
    run.add_argument("--params", default=None, help="params file for --no-dvc (default params.yaml)")
    run.set_defaults(func=cmd_run)
    val = sub.add_parser("validate", help="check a LaMP-QA file or folder; exit 1 on any problem")
    val.add_argument("path")
    val.add_argument("--layout", default="auto", choices=["auto", "lamp_qa", "rewardbench"])
    val.set_defaults(func=cmd_validate)
    srv = sub.add_parser("serve", help="serve the pipeline as a scheduled Prefect deployment")
    srv.add_argument("--cron", default="0 3 * * *")
    srv.set_defaults(func=cmd_serve)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
