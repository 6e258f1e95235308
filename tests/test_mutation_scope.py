"""The mutation scope (setup.cfg's [mutmut]) is every module of tasks/ and flows/ but the ones docs/testing.md leaves
out, each with its reason; and every module in it has a test file in mutmut's selection that imports it (so its
stats pass can find the tests that reach each function)."""
import ast
import configparser
import fnmatch
import re
from pathlib import Path

from tests.conftest import ROOT
from tests.tools.mutation_diff import module_name, reaching_tests


def _config() -> dict[str, list[str]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return {k: [x for x in v.split("\n") if x] for k, v in cfg["mutmut"].items()}


def _modules() -> dict[str, str]:
    """module -> path of every tasks/ and flows/ file with a function (a file without one has no mutant)."""
    out = {}
    for path in sorted([*(ROOT / "tasks").rglob("*.py"), *(ROOT / "flows").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(tree)):
            rel = path.relative_to(ROOT).as_posix()
            out[module_name(rel)] = rel
    return out


def _in_scope(path: str, cfg: dict) -> bool:
    return any(fnmatch.fnmatch(path, p) for p in cfg["only_mutate"]) and not any(
        fnmatch.fnmatch(path, p) for p in cfg.get("do_not_mutate", []))


def _left_out_in_docs() -> dict[str, str]:
    """docs/testing.md's "Left out of the mutation scope" list: path -> reason."""
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    section = text.split("### Left out of the mutation scope", 1)[1].split("\n#", 1)[0]
    return dict(re.findall(r"^- `([\w/.]+\.py)`: (\S.*)$", section, re.M))


def test_every_module_is_in_scope_or_left_out_with_its_reason():
    cfg, documented = _config(), _left_out_in_docs()
    left_out = [p for p in _modules().values() if not _in_scope(p, cfg)]
    assert sorted(left_out) == sorted(cfg["do_not_mutate"]), "only do_not_mutate leaves a module out"
    assert sorted(documented) == sorted(left_out), "docs/testing.md gives each left-out module its reason"
    assert all(len(reason) > 20 for reason in documented.values())


def test_every_module_in_scope_has_a_test_file_in_the_selection_that_imports_it():
    cfg = _config()
    selected = set(cfg["pytest_add_cli_args_test_selection"])
    assert all((ROOT / t).is_file() for t in selected), "every selected test file exists"
    modules = {m for m, p in _modules().items() if _in_scope(p, cfg)}
    reach = reaching_tests(modules)
    unreached = {m: reach[m] for m in sorted(modules) if not selected & set(reach[m])}
    assert not unreached, f"add a test file that imports each of these to setup.cfg's selection: {unreached}"
