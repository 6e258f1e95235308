"""`make mutate-diff` (tests/tools/mutation_diff.py) on a tiny project in a temp git repo: only the mutants of the
lines the change touched run (committed since BASE and edited in the work tree), each against the tests that call
its function; a survivor fails the check with its key, and the same survivor listed as equivalent in
docs/testing.md passes it. The tool is copied into the project, so it runs there as it runs here."""
import re
import shutil
import subprocess
import sys
import textwrap

from tests.conftest import ROOT

SETUP_CFG = """\
[mutmut]
source_paths =
    tasks
only_mutate =
    tasks/*
do_not_mutate =
    tasks/drawing.py
"""
BEFORE = '''\
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def label(n):
    return "many" if n > 1 else "one"
'''
TESTS = '''\
from tasks.tiny import clamp, half, label


def test_clamp():
    assert (clamp(-1, 0, 10), clamp(11, 0, 10), clamp(5, 0, 10)) == (0, 10, 5)


def test_label():
    assert (label(1), label(2), label(3)) == ("one", "many", "many")


def test_half():
    assert half(4) == 2   # an even number only: n / 2 gives 2.0 == 2 too
'''
COMMITTED = BEFORE.replace('"many" if n > 1 else "one"', '"one" if n < 2 else "many"')
EDITED = COMMITTED + '''

def half(n):
    return n // 2
'''
LINE = re.compile(r"^\s*(killed|survived|timeout|no tests|equivalent)\s+`([^`]+)`\s+(\S+):([\d,]+)\s", re.M)


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=repo, check=True,
                   capture_output=True)


def _project(tmp_path):
    repo = tmp_path / "project"
    (repo / "tasks").mkdir(parents=True)
    (repo / "tests" / "tools").mkdir(parents=True)
    (repo / "docs").mkdir()
    for tool in ("mutation_diff.py", "mutation_generate.py", "mutation_recheck.py", "mutation_score.py"):
        shutil.copy2(ROOT / "tests" / "tools" / tool, repo / "tests" / "tools" / tool)
    (repo / "setup.cfg").write_text(SETUP_CFG)
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\nmarkers = ["slow: not here"]\n')
    (repo / "tasks" / "__init__.py").write_text("")
    (repo / "tasks" / "tiny.py").write_text(BEFORE)
    (repo / "tasks" / "drawing.py").write_text("def colour():\n    return 'red'\n")
    (repo / "tests" / "test_tiny.py").write_text(TESTS.replace("clamp, half, label", "clamp, label")
                                                 .split("\n\ndef test_half")[0] + "\n")
    (repo / "docs" / "testing.md").write_text("# Testing\n")
    (repo / ".gitignore").write_text("mutants-diff/\n__pycache__/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "checkout", "-q", "-b", "change")
    (repo / "tasks" / "tiny.py").write_text(COMMITTED)   # committed on the branch: label's line
    (repo / "tasks" / "drawing.py").write_text("def colour():\n    return 'blue'\n")
    _git(repo, "commit", "-qam", "label")
    (repo / "tasks" / "tiny.py").write_text(EDITED)   # not committed: half
    (repo / "tests" / "test_tiny.py").write_text(TESTS)
    return repo


def _run(repo):
    out = subprocess.run([sys.executable, "tests/tools/mutation_diff.py", "main"], cwd=repo, capture_output=True,
                         text=True, timeout=300)
    return out.returncode, out.stdout + out.stderr


def test_only_the_changed_lines_are_mutated_a_survivor_fails_and_a_listed_equivalent_passes(tmp_path):
    repo = _project(tmp_path)
    code, out = _run(repo)
    rows = LINE.findall(out)
    assert rows, out
    touched = set(range(10, 15))   # label's line (committed) and half (in the work tree only)
    assert {int(n) for *_, lines in rows for n in lines.split(",")} <= touched, out
    assert {int(n) for *_, lines in rows for n in lines.split(",")} >= {10, 14}, out
    assert not any("x_clamp" in key for _, key, *_ in rows), "clamp did not change: none of its mutants runs"
    assert "out of the mutation scope (setup.cfg [mutmut]): tasks/drawing.py" in out
    verdicts = {key: verdict for verdict, key, *_ in rows}
    survivors = [k for k, v in verdicts.items() if v == "survived"]
    assert [k.split("@")[0] for k in survivors] == ["tasks.tiny.x_half"], out   # n / 2: the test's 4 cannot tell
    assert "n // 2  ->  n / 2" in out
    assert all(v == "killed" for k, v in verdicts.items() if k not in survivors), out
    assert code == 1 and "FAIL: 1 survivor(s)" in out

    (repo / "docs" / "testing.md").write_text(textwrap.dedent(f"""\
        # Testing
        In `half`: true division of an even number (only even numbers reach it): `{survivors[0]}`.
        """))
    code, out = _run(repo)
    verdicts = {key: verdict for verdict, key, *_ in LINE.findall(out)}
    assert verdicts[survivors[0]] == "equivalent" and "survived" not in verdicts.values(), out
    assert code == 0 and "PASS" in out
