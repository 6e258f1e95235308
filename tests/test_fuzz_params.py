"""The params check fuzzed (issue 60): each shipped params file mutated at one key by its schema
(tests/params_mutants.py: a wrong type, a value just out of range, a neighbour key's value, a misspelt name or
key, an empty value, the key left out, a list item or mapping key given twice). `prbench params` (the real CLI,
in-process) must either accept the mutant, and then everything the stages build from it builds
(tests/params_build.py: never accepted and then failing in a stage), or refuse it in at most 3 lines naming the
key, exit 1, no traceback. A key left out is also checked as `prbench run` checks it (every key a stage reads
must be in the file). Bounded in `make test` (EXAMPLES per file, derandomized: the same mutants each run); set
PRBENCH_FUZZ_EXAMPLES=2000 for a longer, random search (docs/testing.md)."""
import os
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.cli import main
from tests.conftest import ROOT
from tests.params_build import build
from tests.params_mutants import OPERATORS, dotted, keys, mutate

SHIPPED = ("params.yaml", "params-paper.yaml", "params-regenerate.yaml")
EXAMPLES = int(os.environ.get("PRBENCH_FUZZ_EXAMPLES", "150"))   # per shipped file
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize="PRBENCH_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project folder: the repo's prompts, data and shipped files; each mutant is written as its params.yaml."""
    root = tmp_path_factory.mktemp("fuzz")
    for name in ("prompts", "data", "params-paper.yaml", "params-regenerate.yaml"):
        (root / name).symlink_to(ROOT / name)
    return root


def names(err: str, path: tuple) -> bool:
    """The lines name the key: its dotted path, or its name beside its parent's (an RM named in rl.rms)."""
    key = dotted(path)
    parent, _, last = key.rpartition(".")
    return key in err or (bool(parent) and last in err and parent.split(".")[0] in err)


def check(project, capsys, monkeypatch, text: str) -> tuple[int, list[str], str]:
    from tasks.core import params as core_params

    (project / "params.yaml").write_text(text)
    core_params._CHECKED.clear()   # its cache keys on mtime: two mutants may be written within one tick
    monkeypatch.chdir(project)
    rc = main(["params"])
    out = capsys.readouterr()
    return rc, out.err.strip().splitlines(), out.out + out.err


def refused_well(rc: int, lines: list[str], everything: str, path: tuple, what: str) -> None:
    assert "Traceback" not in everything, f"{what}: {everything[-3000:]}"
    assert rc == 1 and 1 <= len(lines) <= 3, f"{what}: rc {rc}, {len(lines)} lines:\n" + "\n".join(lines)
    assert all(line.startswith("params.yaml") for line in lines), f"{what}: {lines}"
    assert names("\n".join(lines), path), f"{what}: the lines do not name {dotted(path)}:\n" + "\n".join(lines)


@pytest.mark.timeout(max(300, EXAMPLES))
@pytest.mark.parametrize("shipped", SHIPPED)
def test_every_one_key_mutant_is_usable_or_refused_in_a_few_lines_naming_the_key(project, capsys, monkeypatch, shipped):
    base = yaml.safe_load((ROOT / shipped).read_text())
    paths = keys(base)

    @FUZZ
    @given(st.sampled_from(paths), st.sampled_from(OPERATORS), st.data())
    def one(path, op, data):
        text, what, named = mutate(base, path, op, lambda seq: data.draw(st.sampled_from(list(seq))))
        rc, lines, everything = check(project, capsys, monkeypatch, text)
        if rc == 0:   # accepted: what the stages build from it must build
            from tasks.ops.params import load_params

            try:
                build(load_params(project / "params.yaml", paths=True))
            except Exception as exc:   # noqa: BLE001 - any failure is the finding
                pytest.fail(f"{what}: accepted, then {type(exc).__name__}: {exc}")
        else:
            refused_well(rc, lines, everything, named, what)
        if op == "missing":   # `prbench run`: every key a stage reads must be in the file
            complete(project, path, what)

    one()


def complete(project, path: tuple, what: str) -> None:
    from tasks.core.errors import ConfigError
    from tasks.core.stage_table import read_keys
    from tasks.ops.params import load_params

    try:
        load_params(project / "params.yaml", complete=read_keys(), paths=read_keys())
    except ConfigError as exc:
        lines = [re.sub(r"^\S*params.yaml", "params.yaml", line) for line in str(exc).splitlines()]
        refused_well(1, lines, str(exc), path, what + " (as prbench run checks it)")
