"""The one error boundary of every command (`prbench ...`, `python -m flows.stage ...`): a mistake the user can
fix (tasks.core.errors.UserError: a params value, a flag, a file, an environment variable, a port in use) is
its lines on stderr, one per problem, and exit 1, before any work; a real bug keeps its traceback; argparse's
own errors stay argparse's (its usage line and one line, exit 2). What each flag must be is declared with the
parser (tasks/core/flags.py) and checked here, before the command runs."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable


def guarded(run: Callable[[], int]) -> int:
    """run()'s exit status; a UserError is its lines on stderr and 1; Ctrl-C one line and 130."""
    from tasks.core.errors import UserError

    try:
        return run()
    except UserError as exc:
        print("\n".join(exc.lines()), file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("prbench: stopped (Ctrl-C)", file=sys.stderr, flush=True)
        return 130


def check_environment() -> None:
    """The environment variables the docs name (tasks/core/env.py): as the user set them (flows/__init__ read
    them before the numerics pin replaced the thread counts) and as they are now."""
    import flows
    from tasks.core.env import problems
    from tasks.core.errors import ConfigError

    lines = list(dict.fromkeys([*flows.ENV_PROBLEMS, *problems()]))
    if lines:
        raise ConfigError("\n".join(lines))


def run_command(parser, argv) -> int:
    """Parse `argv` (a flag's own check, tasks/core/flags.py, may refuse it), check the environment and the options
    one mode would ignore, then run the command: all inside the boundary."""
    from tasks.core.flags import refuse_ignored

    def run() -> int:
        args = parser.parse_args(argv)
        check_environment()
        refuse_ignored(args)
        return args.func(args)
    return guarded(run)
