"""`prbench score`: one RM on our benchmark (pairs, the released layout or a hub id) or on another
benchmark's layout, outside DVC, from any folder (tasks/ops/score_home.py: a project's params inside one,
the schema's defaults elsewhere). Every flag is checked before any work, its problems named as flags."""
from __future__ import annotations

from pathlib import Path

PLAIN_OPTIONS = ("batch_size", "max_length", "revision")   # reward-bench's common flags, as RM entry options
DEFAULT_STRATEGIES = ("none", "raw_profile", "oracle")     # ours; another benchmark scores its own by default
AT_LEAST_ONE = ("limit", "batch_size", "max_length")


def add_parser(sub) -> None:
    from tasks.core.flags import name_arg, path_arg
    from tasks.models.rms.registry import KINDS
    from tasks.stages.benchmarks import BENCHMARKS

    sc = sub.add_parser("score", help="score one RM on pairs, a released-benchmark layout or a hub id")
    sc.add_argument("--model", help="HF id or local path (kinds that load a model)")
    sc.add_argument("--kind", default="seq-cls", help=f"an RM kind: {', '.join(KINDS.names())}")
    sc.add_argument("--name", type=name_arg("--name", stage=False), help="name in the outputs (default: the model's "
                                                                          "folder name)")
    sc.add_argument("--data", help="pairs Parquet (default data/pairs/selected.parquet), released-benchmark files, or a hub id")
    sc.add_argument("--strategy", default=None, help="comma list of none,raw_profile,planner,oracle (default "
                                                     f"{','.join(DEFAULT_STRATEGIES)}; another benchmark: all it scores)")
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
    sc.add_argument("--fidelity", choices=["corrected", "release"],
                    help="what the RM is shown and how (default: the params' common.fidelity): corrected "
                         "(prbench) | release (the authors' release, bugs included: docs/paper-setting.md)")
    sc.add_argument("--data-revision", metavar="REV", help="--benchmark from the hub: the dataset's branch, tag or sha")
    sc.add_argument("--out", type=path_arg("new_folder", "--out"), help="output folder (default results/<benchmark>/<name>)")
    sc.add_argument("--params", default=None, type=path_arg("file", "--params"),
                    help="params file (default: the project's params.yaml, found from here up; outside a project the "
                         "shipped defaults)")
    sc.set_defaults(func=cmd_score)


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


def flag_ranges(args) -> list[str]:
    """Numbers a flag takes: as params keys, one line each naming the flag."""
    return [f"--{k.replace('_', '-')}: {v} is out of range: must be >= 1"
            for k in AT_LEAST_ONE if (v := getattr(args, k, None)) is not None and v < 1]


def score_entry(args, params: dict, strategies=None) -> dict:
    """The RM entry the flags describe, checked as a params entry, its problems named as flags (with the
    flags' ranges and the strategies asked for)."""
    from tasks.core.errors import ConfigError
    from tasks.ops.params import check_params
    from tasks.models.strategies import STRATEGIES

    plain = {k: getattr(args, k) for k in PLAIN_OPTIONS if getattr(args, k, None) is not None}
    entry = {"kind": args.kind, **({"model": args.model} if args.model else {}), **plain,
             **dict(map(_option, args.option))}
    _, problems = check_params({**params, "scoring": {**params["scoring"], "rms": {"cli": entry}}})
    options = dict(map(_option, args.option))
    flags = {"kind": "--kind", "model": "--model", **{k: "--" + k.replace("_", "-") for k in plain if k not in options}}
    lines = flag_ranges(args)
    for p in problems:
        if p.startswith("scoring.rms.cli."):
            opt, _, rest = p.removeprefix("scoring.rms.cli.").partition(":")
            flag = flags.get(opt, f"--option {opt}")
            if opt == "llm" and "required" in rest:
                rest = f" required for kind '{args.kind}': --option llm=<a name under llms: {', '.join(params['llms'])}>"
            lines.append(f"{flag}:{rest}")
    strategies = strategies if strategies is not None else (args.strategy or ",".join(DEFAULT_STRATEGIES)).split(",")
    lines += STRATEGIES.check_names(list(strategies), "--strategy")
    if lines:
        raise ConfigError("\n".join(dict.fromkeys(lines)))
    return entry


def which_benchmark(args) -> str | None:
    """Another benchmark's name (--benchmark, checked, or --data's detected layout), or None for ours."""
    from tasks.core.errors import ConfigError
    from tasks.stages.benchmarks import get
    from tasks.stages.benchmarks.cli import OURS, detect

    benchmark = args.benchmark
    if benchmark:
        get(benchmark, "--benchmark")   # an unknown name: "did you mean"
    elif args.data:
        found = detect(args.data)
        benchmark = found if found != OURS else None
    for flag, given in (("--subset", args.subset), ("--data-revision", getattr(args, "data_revision", None))):
        if given is not None and not benchmark:   # our pairs are a local file: no subsets, no hub revision
            raise ConfigError(f"{flag}: only with another benchmark (--benchmark NAME, or --data in its layout)")
    if args.subset is not None:   # the publisher's list, where the importer knows it: before any data is read
        from tasks.ops.params_data import unknown_subset
        from tasks.stages.benchmarks import BENCHMARKS

        line = unknown_subset(BENCHMARKS[benchmark], args.subset, "--subset")
        if line:
            raise ConfigError(line)
    return benchmark


def cmd_score(args) -> int:
    from tasks.core.errors import ConfigError
    from tasks.core import results
    from tasks.ops.quick_score import OURS, data_source, quick_score
    from tasks.ops.score_home import enter, score_params

    if flag_ranges(args):   # before any params are read
        raise ConfigError("\n".join(flag_ranges(args)))
    params, source, root = score_params(args.params)
    enter(root, args)
    benchmark = which_benchmark(args)
    strategies = args.strategy.split(",") if args.strategy else None
    entry = score_entry(args, params, strategies if strategies or benchmark else list(DEFAULT_STRATEGIES))
    if args.data and not (benchmark and not Path(args.data).exists()):
        data_source(args.data)   # a missing local path is named here, never looked up on the hub
    name = args.name or (Path(args.model).name if args.model else args.kind)
    out = Path(args.out) if args.out else results.folder(benchmark or OURS, name)
    try:
        if benchmark:
            from tasks.stages.benchmarks.cli import score_benchmark

            if args.fidelity:
                params = {**params, "common": {**params["common"], "fidelity": args.fidelity}}
            print(score_benchmark(params, entry=entry, name=name, benchmark=benchmark, data=args.data, out=out,
                                  subset=args.subset, limit=args.limit, strategies=strategies, source=source,
                                  revision=args.data_revision))
        else:
            print(quick_score(params, entry=entry, name=name, data=args.data, out=out, limit=args.limit, source=source,
                              strategies=strategies or list(DEFAULT_STRATEGIES), fidelity=args.fidelity))
    except ConfigError as exc:   # the RM's model (or another option, e.g. dpo's ref_model) as the flag that named it
        raise ConfigError(str(exc).replace(f"scoring.rms.{name}.model:", "--model:")
                          .replace(f"scoring.rms.{name}.", "--option ")) from None
    print(f"prbench: per-item scores and {results.FILE} under {out}/ (params: {source})")
    return 0
