"""`prbench human-eval ...`: write the blinded annotation tasks, and check returned files."""
from __future__ import annotations

import sys


def _user_errors() -> tuple:
    from tasks.core.errors import UserError

    return (UserError,)


def _setup(args):
    from tasks.ops.params import load_params

    params = load_params(args.params)
    return params["human_eval"], int(params["common"]["seed"])


def cmd_export(args) -> int:
    from tasks.stages.human_eval.export import load_items, seeded_order, write_export, write_key
    from tasks.core.stage_table import STAGES

    INPUTS = STAGES["human_eval"].inputs

    try:
        p, seed = _setup(args)
        items = seeded_order(load_items(INPUTS, p["splits"], p["profile_max_words"]), seed)[: args.limit or None]
        if not items:
            print(f"no selected pairs in splits {p['splits']} ({INPUTS['pairs']})", file=sys.stderr)
            return 1
        key = write_key(items, seed, args.key or p["key"], args.out, force=args.force)
        files = write_export(items, seed, args.out)
    except _user_errors() as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(f"{len(items)} items for annotators in {args.out}: " + ", ".join(sorted(files.values())))
    print(f"unblinding key (keep it from annotators): {key}")
    return 0


def cmd_check(args) -> int:
    """Like `prbench validate`: every problem in the returned files, one line each; exit 1 on any."""
    from tasks.core.errors import DataErrors
    from tasks.stages.human_eval.annotations import import_annotations

    try:
        p, _ = _setup(args)
        raw = args.raw_dir or p["raw_dir"]
        got = import_annotations(raw, args.key or p["key"], "fail")
    except DataErrors as exc:
        for e in exc.errors:
            print(e.line(), file=sys.stderr)
        return 1
    except _user_errors() as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(f"{raw}: valid ({len(got.ratings)} ratings in {len(got.files)} files)")
    return 0


def add_parser(subparsers) -> None:
    from tasks.core.flags import at_least, path_arg

    he = subparsers.add_parser("human-eval", help="human evaluation: blinded export, check returned annotations")
    sub = he.add_subparsers(dest="human_eval_command", required=True)
    ex = sub.add_parser("export", help="write blinded annotation tasks (CSV, Label Studio) and the unblinding key")
    ex.add_argument("--out", required=True, type=path_arg("new_folder", "--out"),
                    help="folder for the annotators (the key is never written there)")
    ex.add_argument("--limit", type=at_least(1, "a number of pairs"), default=None,
                    help="export the first N pairs of a seeded shuffle")
    ex.add_argument("--key", default=None, type=path_arg("new_file", "--key"),
                    help="unblinding key path (default: params human_eval.key)")
    ex.add_argument("--force", action="store_true", help="replace an existing key that differs")
    ex.add_argument("--params", default=None, type=path_arg("file", "--params"), help="params file (default params.yaml)")
    ex.set_defaults(func=cmd_export)
    ch = sub.add_parser("check", help="validate returned annotation files; one line per problem, exit 1 on any")
    ch.add_argument("raw_dir", nargs="?", default=None, type=path_arg("folder", "raw_dir"),
                    help="the folder of returned files (default: params human_eval.raw_dir)")
    ch.add_argument("--key", default=None, type=path_arg("file", "--key"),
                    help="unblinding key path (default: params human_eval.key)")
    ch.add_argument("--params", default=None, type=path_arg("file", "--params"), help="params file (default params.yaml)")
    ch.set_defaults(func=cmd_check)
