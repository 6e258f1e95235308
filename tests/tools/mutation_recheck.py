"""Re-run the survivors of a `mutmut run` against test files written since, without a new mutmut pass (whose
stats pass alone takes minutes): each mutant is switched on the way mutmut does it (MUTANT_UNDER_TEST in the
mutants/ copy) and the files run with -x; a failing run kills it. Prints "<mutant> killed|survived" per line.
The tests are imported once and each mutant runs in a fork of that process (as mutmut does), so a mutant costs
the tests' own time, not an interpreter start; a fork past TIMEOUT_S counts as killed.

    python tests/tools/mutation_recheck.py 'tasks.ops.report.fmt' tests/test_rules_fmt.py [more test files] [--every]
    python tests/tools/mutation_recheck.py 'tasks.ops.report.fmt' tests/test_rules_fmt.py --names survivors.txt

The tests must be in mutants/tests too (copied here first). A later `make mutate` gives the score of record."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.tools.mutation_score import NOT_RUN, KILLED, results  # noqa: E402


TIMEOUT_S = int(os.environ.get("MUTATION_TIMEOUT_S", "600"))   # a test file slower than this under no mutant: raise it
ARGS = ["-x", "-q", "-p", "no:cacheprovider", "-m", "not slow"]


def recheck(mutant: str, tests: list[str], timeout_s: float | None = None) -> str:
    """"killed", "survived" or "timeout" (a kill: the tests noticed): `tests` run in a fork of this process with
    `mutant` switched on. The fork leads its own process group, so a timeout ends what its tests started too."""
    pid = os.fork()
    if pid == 0:   # the child: this mutant on, the tests run, the verdict as the exit code
        os.setpgid(0, 0)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)   # the tests see the default handler, not the caller's
        os.environ["MUTANT_UNDER_TEST"] = mutant
        signal.alarm(int(timeout_s or TIMEOUT_S))   # as mutmut counts it: a mutant that hangs the tests is noticed
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1), os.dup2(devnull, 2)
        os._exit(1 if pytest.main([*ARGS, *tests]) else 0)
    end = time.monotonic() + (timeout_s or TIMEOUT_S) + 5   # pytest-timeout may take the alarm: the parent's own limit
    try:
        while time.monotonic() < end:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return "killed" if status else "survived"
            time.sleep(0.02)
    except BaseException:   # Ctrl-C, SIGTERM: the fork and what its tests started go too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        raise
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "timeout"


def _preload(tests: list[str], tree: Path = ROOT / "mutants") -> None:
    """Import the tests and everything they import (the mutants/ copy of tasks) in this process, to fork from."""
    os.chdir(tree)
    sys.path.insert(0, str(tree))
    os.environ["HF_HUB_OFFLINE"] = "1"
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        pytest.main([*ARGS, "--collect-only", *tests])


def main(prefix: str, tests: list[str], every: bool = False, names: list[str] | None = None) -> None:
    """every: each mutant of the module not yet killed, run or not (a module mutmut has generated but not run);
    names: only these (e.g. the survivors of an earlier recheck, one per line)."""
    for t in tests:
        shutil.copy2(ROOT / t, ROOT / "mutants" / t)
    skip = KILLED if every else KILLED | NOT_RUN
    alive = sorted(m for m, s in results().items() if m.startswith(prefix + ".") and s not in skip
                   and (names is None or m in names))
    _preload(tests)
    for mutant in alive:
        verdict = recheck(mutant, tests)
        print(f"{mutant} {'survived' if verdict == 'survived' else 'killed'}", flush=True)


if __name__ == "__main__":
    argv = sys.argv[1:]
    every = "--every" in argv
    names = None
    if "--names" in argv:
        at = argv.index("--names")
        names = {line.split()[0] for line in Path(argv[at + 1]).read_text().splitlines() if line.strip()}
        del argv[at:at + 2]
    args = [a for a in argv if a != "--every"]
    main(args[0], args[1:], every, names)
