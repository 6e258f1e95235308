"""Every `prbench` command's options fuzzed through the real entry point (`flows.cli.main`, in-process), and the
environment variables the docs name (issue 60). Each argv is drawn from the parser's own declaration (every
subcommand, its options and positionals, values from a pool of the mistakes people make: a missing file, a folder
for a file and the reverse, a negative or huge number, an empty or spaced name, a misspelt stage, a bad URL).
Every answer is argparse's own (usage + one error line, exit 2), or at most 3 lines on stderr naming the flag
it is about and exit 1, or the command accepted it; never a traceback. Where a command would start its work (a
DVC run, a Prefect server, a scoring, a page), a tripwire stands in: reached only once every flag was checked.
Bounded in `make test`; PRBENCH_FUZZ_EXAMPLES=2000 draws more (docs/testing.md)."""
import argparse
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.cli import build_parser, main
from tests.conftest import ROOT

EXAMPLES = int(os.environ.get("PRBENCH_FUZZ_EXAMPLES", "250"))   # command lines; half as many environments
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize="PRBENCH_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
VALUES = ("params.yaml", "prompts", "prompts/planner.txt", "nope.yaml", "nope/deeper", "params.yaml/x", "data/sample/rewardbench",
          "-1", "0", "1", "3", "99999", "abc", "", "my rm", "a/b", ".hidden", "random", "seq-cls", "length-longer",
          "rewardbench2", "leaderboard", "leaderbaord", "score@random", "score@nosuch", "HEAD", "http://127.0.0.1:9/api",
          "none,raw_profile", "none,rawprofile", "max_length=12", "trust_remote_code=maybe", "=x", "metrics/leaderboard.json",
          "metrics/leaderbord.json", "0 3 * * *", "not a cron", "org/model@abc")


class WorkStarted(Exception):
    """A command reached its work: every flag was checked before."""


def commands(parser=None, prefix=()) -> list[tuple[tuple, argparse.ArgumentParser]]:
    """(the words naming a command, its parser) for every leaf command, nested ones (release check) included."""
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(prefix, parser)]
    return [c for name, p in subs[0].choices.items() for c in commands(p, (*prefix, name))]


COMMANDS = commands()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder (the repo's params, prompts, data, metrics, dvc.yaml) with every command's work replaced by a
    tripwire: nothing runs, is served or is written."""
    import flows.deploy
    import flows.run_dvc
    import flows.server
    from tasks.core import dag
    from tasks.downstream.correlation import diff
    from tasks.ops import committed_run, doctor, power_cli, quick_score
    from tasks.ops.report import cli as report_cli
    from tasks.stages.benchmarks import cli as bench_cli
    import importlib

    annotations = importlib.import_module("tasks.stages.human_eval.annotations")
    export = importlib.import_module("tasks.stages.human_eval.export")

    for name in ("params.yaml", "prompts", "data", "metrics", "dvc.yaml", "params-paper.yaml", "params-regenerate.yaml"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)

    def trip(*args, **kwargs):
        raise WorkStarted()
    for module, name in ((flows.run_dvc, "run_dvc"), (flows.server, "start"), (flows.deploy, "serve"),
                         (quick_score, "quick_score"), (bench_cli, "score_benchmark"), (diff, "metrics_diff"),
                         (report_cli, "page"), (doctor, "main"), (power_cli, "report"), (power_cli, "warning"),
                         (export, "load_items"), (annotations, "import_annotations"), (dag, "write"), (dag, "check"),
                         (committed_run, "make")):
        monkeypatch.setattr(module, name, trip)
    import flows.common

    monkeypatch.setattr(flows.common, "main", trip)   # `run --no-dvc`: the pipeline in-process
    return tmp_path


def argv_for(words: tuple, parser, draw) -> list[str]:
    argv = list(words)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or not draw(st.booleans()):
            continue
        if action.nargs == 0:
            argv.append(action.option_strings[0])
            continue
        pool = [*map(str, action.choices), "wrong"] if action.choices else list(VALUES)
        n = draw(st.integers(1, 3)) if action.nargs in ("*", "+") else 1
        values = [draw(st.sampled_from(pool)) for _ in range(n)]
        argv += [action.option_strings[0], *values] if action.option_strings else values
    return argv


def answer_is_clear(argv, rc, out: str, err: str) -> None:
    assert "Traceback" not in out + err, f"{argv}: {err[-3000:]}"
    lines = err.strip().splitlines()
    if rc == 2:   # argparse's own: its usage, then one error line
        assert lines and "error:" in lines[-1] and any(line.startswith("usage:") for line in lines), f"{argv}: {err}"
    elif rc not in (0, None):
        assert rc == 1 and 1 <= len(lines) <= 3, f"{argv}: rc {rc}:\n{err}"
        for flag, why in re.findall(r"^(--[\w-]+):(.*)$", err, flags=re.M):   # about a flag given, or one it needs
            assert flag in argv or "required" in why, f"{argv}: names {flag}, which was not given:\n{err}"


@pytest.mark.timeout(max(300, EXAMPLES))
@FUZZ
@given(st.sampled_from(COMMANDS), st.data())
def test_every_command_answers_any_options_clearly(project, capsys, command, data):
    words, parser = command
    argv = argv_for(words, parser, data.draw)
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    except WorkStarted:
        rc = None   # accepted: the work would begin here
    out = capsys.readouterr()
    answer_is_clear(argv, rc, out.out, out.err)


def test_the_fuzz_reaches_every_command():
    assert {w for w, _ in COMMANDS} >= {("run",), ("score",), ("serve",), ("params",), ("release", "score"),
                                         ("human-eval", "export"), ("report",), ("diff",), ("power",), ("validate",)}


# --- the environment variables the docs name --------------------------------------------------------------------

ENV_VALUES = ("banana", "", " ", "0", "1", "-2", "4", "true", "maybe", "{}", "{bad json", "[1]", "params.yaml",
              "prompts", "nope/dir", "params.yaml/sub", "http://127.0.0.1:9/api", "localhost:4200", "ftp://x",
              "key with space", "PASSIVE", "passive", "SLEEPY")


TESTS_ONLY = {"PRBENCH_FUZZ_EXAMPLES"}   # read by these tests, never by prbench


def documented_variables() -> set[str]:
    """The variables docs/ and README.md name that prbench (not only its tests) reads or pins."""
    text = " ".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    found = re.findall(r"\b((?:PRBENCH|HF|PREFECT|GEMINI|GOOGLE|OPENAI|OMP|MKL|OPENBLAS|XDG|DVC)_[A-Z0-9_]+)", text)
    return set(found) - TESTS_ONLY


def test_every_variable_the_docs_name_is_checked_or_pinned():
    from tasks.core.env import VARIABLES
    from tasks.core.numerics import MKL_PINS, library_pins

    pinned = set(library_pins("avx2")) | set(MKL_PINS)
    assert documented_variables() - set(VARIABLES) - pinned == set()


@pytest.mark.timeout(max(300, EXAMPLES))
@settings(FUZZ, max_examples=EXAMPLES if "PRBENCH_FUZZ_EXAMPLES" in os.environ else EXAMPLES // 2)
@given(st.sampled_from(sorted(documented_variables())), st.sampled_from(ENV_VALUES))
def test_a_documented_variable_set_to_anything_is_read_or_refused_in_one_line(project, capsys, monkeypatch, name, value):
    """Through `prbench params` in-process (the check prbench runs after argparse); the start-up read of a stage
    command and of the script is tests/test_user_mistakes.py's (PRBENCH_TORCH_THREADS, PRBENCH_NUMERICS_REPLACED)."""
    from tasks.core.env import SECRETS, VARIABLES

    with monkeypatch.context() as env:
        env.setenv(name, value)
        rc = main(["params"])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    if rc == 0:
        assert name not in VARIABLES or VARIABLES[name][0](value) is None or not value
    else:
        lines = out.err.strip().splitlines()
        assert rc == 1 and len(lines) == 1 and lines[0].startswith(f"{name}: "), out.err
        assert name not in SECRETS or value not in lines[0].split(": ", 1)[1] or not value.strip(), "a secret printed"
