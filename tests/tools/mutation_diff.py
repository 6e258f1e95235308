"""`make mutate-diff BASE=<rev>`: mutation testing of a change, before every stop (docs/testing.md).

The lines a change touches (`git diff` from where HEAD left BASE to the work tree, so commits, staged and unstaged
edits and new files) in the modules of the mutation scope (setup.cfg's [mutmut]) get mutmut's mutants
(mutation_generate.mutants_of); only the mutants that change a touched line are run. The tests: the test files
that import a changed module (or, where none does, those at the fewest imports from it) are run once with the
mutated functions recording their callers (mutmut's stats pass), then each mutant runs in a fork of one
preloaded process (mutation_recheck.recheck) against only the tests that called its function, those of its own
module's test files when any is among them (where none recorded a call, as for code run in a forked worker or a
subprocess: the tests that called the module), quickest first, stopping at the first failure. A survivor fails
the check unless docs/testing.md lists its key as equivalent.

    python tests/tools/mutation_diff.py BASE [--tests tests/test_x.py ...] [--depth N]
    python tests/tools/mutation_diff.py --whole tasks/stages/fingerprint.py ... [--tests ...]   # every line
    python tests/tools/mutation_diff.py --whole tasks/ops/releases.py:126-162    # these lines of it
    python tests/tools/mutation_diff.py --whole tasks/ops/releases.py --keys survivors.txt   # these mutants again

--depth N also runs the test files up to N imports further away; --tests adds test files; --whole mutates whole
files (a module's score). Exit status 1 when a survivor is not listed as equivalent."""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.tools.mutation_generate import Mutant, mutants_of  # noqa: E402
from tests.tools.mutation_score import listed_keys  # noqa: E402

TREE = ROOT / "mutants-diff"   # the work tree's copy the mutants run in (git-ignored; remade every run)
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
STATS_ARGS = ["-q", "-p", "no:cacheprovider", "-m", "not slow"]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def changed_lines(base: str) -> dict[str, set[int]]:
    """path -> the lines (numbered in the work tree's file) the change touched, for .py files under tasks/ and flows/.
    A deletion touches the lines on both sides of it."""
    since = git("merge-base", base, "HEAD").strip()
    changed: dict[str, set[int]] = defaultdict(set)
    path = None
    for line in git("diff", "-U0", "--no-color", "--no-ext-diff", "--no-renames", since, "--", "tasks", "flows")\
            .splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif path and (hunk := HUNK.match(line)):
            start, count = int(hunk[1]), int(hunk[2] if hunk[2] is not None else 1)
            changed[path].update(range(start, start + count) if count else (start, start + 1))
    for path in git("ls-files", "-o", "--exclude-standard", "--", "tasks", "flows").splitlines():
        changed[path].update(range(1, len((ROOT / path).read_text(encoding="utf-8").splitlines()) + 1))
    return {p: lines for p, lines in changed.items() if p.endswith(".py") and (ROOT / p).exists()}


def module_name(path: str) -> str:
    parts = list(Path(path).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, names: set[str]) -> set[str]:
    """The project modules `path` imports (anywhere in it, as grimp counts them)."""
    me = module_name(str(path.relative_to(ROOT)))
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    out = set()
    for name in found:   # the module itself, not a function or class imported from it
        parts = name.split(".")
        hit = next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in names), None)
        if hit:
            out.add(hit)
    return out


def reaching_tests(modules: set[str], depth: int = 0) -> dict[str, list[str]]:
    """module -> the test files that import it, else those at the fewest imports from it (through tasks/, flows/
    and the tests' helpers), and `depth` import steps further."""
    files = {module_name(str(p.relative_to(ROOT))): p for d in ("tasks", "flows", "tests") for p in (ROOT / d).rglob("*.py")
             if "mutants" not in p.parts and p.name != "conftest.py"}
    importers: dict[str, set[str]] = defaultdict(set)
    for name, path in files.items():
        for imported in _imports(path, set(files)):
            importers[imported].add(name)
    is_test = lambda name: name.startswith("tests.test_")  # noqa: E731
    out = {}
    for module in sorted(modules):
        seen, frontier, found, extra = {module}, {module}, [], None
        while frontier and (extra is None or extra >= 0):
            step = set().union(*(importers[m] for m in frontier)) - seen
            seen |= step
            found += sorted(t for t in step if is_test(t))
            frontier = {m for m in step if not is_test(m)}
            if found and extra is None:
                extra = depth
            if extra is not None:
                extra -= 1
        out[module] = [str(files[t].relative_to(ROOT)) for t in found]
    return out


def make_tree(mutated: dict[str, str]) -> None:
    """TREE: the work tree as git sees it (tracked and new files, not the ignored ones) committed in a repo of its
    own, as tests that ask git about the project find it, then the mutated files written over their copies."""
    shutil.rmtree(TREE, ignore_errors=True)
    for rel in git("ls-files", "-z", "-co", "--exclude-standard").split("\0"):
        if rel and (ROOT / rel).is_file() and not rel.startswith("mutants"):
            (TREE / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, TREE / rel)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=mutate-diff", "-c", "user.email=mutate-diff@localhost",
                                                "commit", "-q", "--no-verify", "-m", "the work tree"]):
        subprocess.run(["git", *args], cwd=TREE, check=True, capture_output=True)
    for rel, code in mutated.items():
        (TREE / rel).write_text(code, encoding="utf-8")


def stats(tests: list[str]) -> tuple[dict[str, list[str]], dict[str, float], set[str]]:
    """mutmut's stats pass over `tests`, in a fork: which tests call each mutated function (by mutmut's record of
    its trampolines), each test's time, and the tests that fail with no mutant on (left out: they tell nothing)."""
    import pytest
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.state import state

    class Record:
        def __init__(self):
            self.callers, self.seconds, self.failed = defaultdict(set), defaultdict(float), set()

        def pytest_runtest_teardown(self, item, nextitem):
            for function in state()._stats:
                self.callers[function].add(item.nodeid)
            state()._stats.clear()

        def pytest_runtest_logreport(self, report):
            self.seconds[report.nodeid] += report.duration
            if report.failed:
                self.failed.add(report.nodeid)

    out = TREE / ".mutate-diff-stats.json"
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            set_mutant_under_test("stats")
            record = Record()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1), os.dup2(devnull, 2)
            pytest.main([*STATS_ARGS, *tests], plugins=[record])
            out.write_text(json.dumps({"callers": {f: sorted(t) for f, t in record.callers.items()},
                                       "seconds": record.seconds, "failed": sorted(record.failed)}))
        finally:
            os._exit(0)
    try:
        os.waitpid(pid, 0)
    except BaseException:   # Ctrl-C, SIGTERM: the stats pass and what its tests started go too
        os.killpg(pid, signal.SIGKILL)
        raise
    data = json.loads(out.read_text())
    return data["callers"], data["seconds"], set(data["failed"])


def _lines(spec: str) -> tuple[str, set[int] | None]:
    """FILE (every line: None) or FILE:START-END."""
    path, _, span = spec.partition(":")
    if not span:
        return path, None
    start, _, end = span.partition("-")
    return path, set(range(int(start), int(end or start) + 1))


def select(changed: dict[str, set[int] | None], whole: bool) -> tuple[dict[str, str], list[Mutant], list[str]]:
    """The mutated files' code, the mutants that change a touched line, and the changed files out of scope."""
    from mutmut.configuration import config

    codes, chosen, outside = {}, [], []
    for path, lines in sorted(changed.items()):
        if not config().should_mutate(path):
            outside.append(path)
            continue
        code, mutants = mutants_of(path)
        picked = [m for m in mutants if (m.lines & lines if lines is not None else whole)]
        if picked:
            codes[path] = code
            chosen += picked
    return codes, chosen, outside


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mutation_diff.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", help="the revision the change is measured from (git diff BASE...)")
    parser.add_argument("--whole", nargs="+", default=[], metavar="FILE", help="mutate every line of these files (FILE:START-END: those lines)")
    parser.add_argument("--tests", nargs="+", default=[], metavar="FILE", help="test files to run beside the reaching ones")
    parser.add_argument("--depth", type=int, default=0, help="also the test files this many imports further away")
    parser.add_argument("--keys", metavar="FILE", help="only the mutants whose key is in FILE (e.g. an earlier run's "
                                                         "survivors: their lines as this prints them)")
    args = parser.parse_args(argv)
    if not args.base and not args.whole:
        parser.error("give BASE (a revision) or --whole FILE ...")
    os.chdir(ROOT)   # mutmut's config: setup.cfg here
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # as Ctrl-C: the running mutant's fork is ended too
    started = time.monotonic()
    if args.whole:
        changed = dict(map(_lines, args.whole))
    else:
        changed = changed_lines(args.base)
    codes, chosen, outside = select(changed, bool(args.whole))
    if args.keys:
        wanted = set(re.findall(r"(?:tasks|flows)\.[\w.]+@[0-9a-f]{8}", Path(args.keys).read_text(encoding="utf-8")))
        chosen = [m for m in chosen if m.key in wanted]
    for path in outside:
        print(f"out of the mutation scope (setup.cfg [mutmut]): {path}")
    if not chosen:
        print(f"no mutant on the changed lines of {len(changed)} file(s): nothing to check")
        return 0
    modules = {module_name(p) for p in codes}
    reach = reaching_tests(modules, args.depth)
    tests = sorted({t for files in reach.values() for t in files} | set(args.tests))
    for module, files in sorted(reach.items()):
        print(f"{module}: {len(files)} test file(s) reach it: {' '.join(Path(f).name for f in files) or '-'}")
    print(f"{len(chosen)} mutant(s) on the changed lines of {len(codes)} module(s); tree, then the stats pass", flush=True)
    make_tree(codes)

    from tests.tools.mutation_recheck import _preload, recheck
    _preload(tests, TREE)
    generated = time.monotonic()
    callers, seconds, failed = stats(tests)
    for nodeid in sorted(failed):
        print(f"fails with no mutant on (left out): {nodeid}")
    print(f"stats pass: {time.monotonic() - generated:.0f} s over {len(seconds)} test(s)", flush=True)

    listed, verdicts = listed_keys(), defaultdict(list)
    files_of = {module: set(files) | set(args.tests) for module, files in reach.items()}

    def usable(module: str, tests) -> list[str]:
        """The tests that ran clean, those of the test files reaching `module` if any is among them."""
        clean = sorted(set(tests) - failed)
        return [t for t in clean if t.split("::")[0] in files_of.get(module, ())] or clean

    for m in chosen:
        function = m.name.partition("__mutmut_")[0]
        module = function.rpartition(".")[0]
        own = usable(module, callers.get(function, ()))
        if not own:   # no test recorded a call (it runs in a forked worker or a subprocess): the module's callers
            own = usable(module, {t for f, ts in callers.items() if f.rpartition(".")[0] == module for t in ts})
            own = own or usable(module, seconds)
        own.sort(key=lambda t: seconds.get(t, 0))
        if not own:
            verdict = "no tests"
        else:
            verdict = recheck(m.name, own, timeout_s=30 + 10 * sum(seconds.get(t, 0) for t in own))
        if verdict in ("survived", "no tests") and m.key in listed:
            verdict = "equivalent"
        verdicts[verdict].append(m)
        lines = ",".join(map(str, sorted(m.lines)))
        print(f"{verdict:>10}  `{m.key}`  {m.path}:{lines}  {m.before}  ->  {m.after}", flush=True)
    per = defaultdict(lambda: defaultdict(int))
    for verdict, ms in verdicts.items():
        for m in ms:
            per[m.path][verdict] += 1
    for path, n in sorted(per.items()):
        total, killed, equivalent = sum(n.values()), n["killed"] + n["timeout"], n["equivalent"]
        print(f"{path}: {total} mutants, {killed} killed, {equivalent} equivalent, "
              f"{total - killed - equivalent} not ({killed / (total - equivalent or 1):.1%} of the non-equivalent killed)")
    bad = verdicts["survived"] + verdicts["no tests"]
    counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(verdicts.items()) if v)
    print(f"\n{len(chosen)} mutants: {counts}; {time.monotonic() - started:.0f} s in all")
    if bad:
        print(f"FAIL: {len(bad)} survivor(s). Write a test of the rule each breaks, or, where a mutant cannot change "
              "behaviour, list its key (in backticks) with the reason under docs/testing.md's equivalents.")
        return 1
    print("PASS: every mutant on the changed lines killed or listed as equivalent")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
