"""What a command's flags must be, declared where its parser declares them (flows/boundary.py checks them before
the command runs): a path's kind (`path_arg`: a file, a folder, an output to make: tasks/core/paths.py), a name
stages and files can carry (`name_arg`), a count (`at_least`), and the options one mode of a command reads
(`only`): given in the other mode they are refused in one line saying what to do instead, never ignored. A
flag's problem is a UserError naming the flag; argparse's own (an unknown flag, a word where a number goes)
stay argparse's."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Callable


def checked_arg(problem, flag: str):
    """argparse `type=` for a flag whose value `problem(text)` judges (None: fine): anything else is one line."""
    from tasks.core.errors import ConfigError

    def check(text: str) -> str:
        why = problem(text)
        if why:
            raise ConfigError(f"{flag}: {why}")
        return text
    return check


def path_arg(kind: str, flag: str):
    """argparse `type=` for a flag naming a path of `kind` (tasks/core/paths.py)."""
    from tasks.core.paths import problem

    return checked_arg(lambda text: problem(text, kind), flag)


def cron_arg(flag: str):
    from tasks.core.cron import problem

    return checked_arg(problem, flag)


def name_arg(flag: str, stage: bool = True):
    """argparse `type=` for a name that becomes a DVC stage and file names (`stage`: the params' rule, check.NAME),
    or a file name only (a results folder)."""
    import re

    from tasks.core.errors import ConfigError
    from tasks.core.params.check import NAME, NAME_USE

    def check(text: str) -> str:
        if stage and not re.fullmatch(NAME, text):
            raise ConfigError(f"{flag}: {text!r} is not usable as a name: it {NAME_USE}")
        if not stage and (not text or text.startswith(".") or re.search(r"[/\\\x00]", text)):
            raise ConfigError(f"{flag}: {text!r} is not usable as a folder name: no '/', and not starting with '.'")
        return text
    return check


def at_least(n: int, what: str, most: int | None = None):
    """argparse `type=` for a whole number >= n (and <= most) (argparse's own error otherwise: its usage line and
    one line)."""
    def check(text: str) -> int:
        if not text.lstrip("-").isdigit() or int(text) < n or (most is not None and int(text) > most):
            raise argparse.ArgumentTypeError(f"{text!r}: {what}, {n} or more" + (f" and {most} or less" if most else ""))
        return int(text)
    return check


@dataclass(frozen=True)
class Only:
    """An option one mode of a command reads: `applies(args)` says whether this run is that mode. `flag`, `mode`
    and `instead` are formatted with the option's value ({value}) and the environment ({env[NAME]})."""
    dest: str
    flag: str
    applies: Callable
    mode: str       # "only with --no-dvc"
    instead: str    # what to do instead


def only(parser, *rules: Only) -> None:
    """Declare the options of `parser` that one mode reads (checked by refuse_ignored)."""
    parser.set_defaults(only_when=(*(parser.get_default("only_when") or ()), *rules))


def refuse_ignored(args) -> None:
    """Each option given in a mode that would ignore it: one line naming it, and what to do instead."""
    from tasks.core.errors import ConfigError

    lines = []
    for r in getattr(args, "only_when", None) or ():
        value = getattr(args, r.dest, None)
        if value not in (None, False, [], ()) and not r.applies(args):
            shown = " ".join(map(str, value)) if isinstance(value, list) else value
            lines.append(f"{r.flag}: {r.mode}; {r.instead}".format(value=shown, env=os.environ))
    if lines:
        raise ConfigError("\n".join(lines))
