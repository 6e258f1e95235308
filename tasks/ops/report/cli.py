"""`prbench report`: the run page from the outputs in the workspace (and its pair explorer, pairs.html beside
it), or `--compare REV [REV2]`: two versions side by side (REV2 defaults to the workspace). Pages go under
results/ unless --out."""
from __future__ import annotations

import re
from pathlib import Path

from tasks.core.errors import ConfigError
from tasks.core.flags import Only, only, path_arg

RESULTS = Path("results")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def default_out(compare: list[str] | None) -> Path:
    if not compare:
        return RESULTS / "report.html"
    return RESULTS / f"compare-{_safe(compare[0])}-{_safe(compare[1] if len(compare) > 1 else 'workspace')}.html"


def page(args) -> str:
    from tasks.ops.report import build, compare

    if args.compare:
        rev_a, rev_b = args.compare[0], (args.compare[1] if len(args.compare) > 1 else None)
        return compare.build(rev_a, rev_b, title=f"prbench: {rev_a} vs {rev_b or 'workspace'}")
    from tasks.core import layout
    from tasks.ops.params import load_params
    from tasks.ops.report import provenance, sources

    params = load_params(args.params)
    version = provenance.code_version(".", layout.REPORT_CODE_VERSION)
    machines = provenance.machine_records()   # this page is no DVC output: it may name the machines
    return build.render("run.html.j2", build.run_context(params, sources.run_inputs(params), version, machines))


def cmd_report(args) -> int:
    from tasks.core.artifacts import write_text

    if args.compare and len(args.compare) > 2:
        raise ConfigError(f"--compare: one or two revisions (REV [REV2]), got {len(args.compare)}")
    html = page(args)
    out = Path(args.out) if args.out else default_out(args.compare)
    write_text(html, out)
    print(f"prbench: wrote {out} ({len(html.encode()) / 1024:.0f} KB); open it in a browser")
    if not args.compare:   # the run page links its pair explorer as pairs.html, beside it
        explorer = write_explorer(args.params, out.with_name("pairs.html"))
        print(f"prbench: wrote {out.with_name('pairs.html')} ({explorer / 1024:.0f} KB), the pair explorer")
    return 0


def write_explorer(params_file, path: Path) -> int:
    from tasks.ops.params import load_params
    from tasks.ops.report import build, sources

    params = load_params(params_file)
    return build.write_explorer(params, sources.run_inputs(params), path)


def add_parser(subparsers):
    """Register `prbench report` on the CLI's subparsers."""
    ap = subparsers.add_parser("report", help="the report page of the workspace's outputs, or two versions "
                                              "side by side (--compare REV [REV2])")
    ap.add_argument("--compare", nargs="+", metavar="REV", default=None,
                    help="git revisions (tag, commit, branch): REV against REV2 (default: the workspace)")
    ap.add_argument("--out", default=None, type=path_arg("new_file", "--out"),
                    help="the HTML file to write (default under results/)")
    ap.add_argument("--params", default=None, type=path_arg("file", "--params"),
                    help="params file for the run page (default params.yaml)")
    ap.set_defaults(func=cmd_report)
    only(ap, Only("params", "--params", lambda a: not a.compare, "only for the run page: --compare builds each "
                  "version's page from its own params.yaml", "drop --params, or --compare"))
    return ap
