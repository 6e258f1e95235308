"""The mutation score per module after `mutmut run` (`make mutate` prints it): killed / checked, and the same
with the survivors docs/testing.md judges equivalent (a mutant whose key, `module.function@hash` from
mutation_generate.mutants_of, appears there in backticks) left out.
A timeout or a segfault counts as killed (the tests noticed); "no tests" counts as survived.

    python tests/tools/mutation_score.py            # the table
    python tests/tools/mutation_score.py --survivors   # the survivors not judged equivalent, one per line"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KILLED = {"killed", "timeout", "segfault", "caught by type check"}
NOT_RUN = {"skipped", "not checked", "check was interrupted by user"}


def results() -> dict[str, str]:
    """mutant name -> status, from `mutmut results --all true`."""
    mutmut = Path(sys.executable).with_name("mutmut")
    out = subprocess.run([str(mutmut), "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return dict(line.strip().rsplit(": ", 1) for line in out.splitlines() if ": " in line)


KEY = re.compile(r"`((?:tasks|flows)\.[\w.]+@[0-9a-f]{8})`")


def listed_keys() -> set[str]:
    """The keys of the mutants docs/testing.md lists as equivalent."""
    return set(KEY.findall((ROOT / "docs" / "testing.md").read_text(encoding="utf-8")))


def equivalent(names) -> set[str]:
    """mutmut's names, among `names`, of the mutants docs/testing.md lists as equivalent (by key: mutmut's numbers
    move when a function changes; a key names the mutation)."""
    sys.path.insert(0, str(ROOT))
    from tests.tools.mutation_generate import mutants_of

    keys, out = listed_keys(), set()
    cwd = os.getcwd()
    os.chdir(ROOT)   # mutants_of reads setup.cfg's patterns here
    try:
        for module in sorted({module_of(n) for n in names}):
            path = Path(*module.split(".")).with_suffix(".py")
            path = path if path.exists() else path.with_suffix("") / "__init__.py"
            out |= {m.name for m in mutants_of(path)[1] if m.key in keys}
    finally:
        os.chdir(cwd)
    return out


def module_of(mutant: str) -> str:
    return mutant.split(".x_")[0].split(".xǁ")[0]


def table(res: dict[str, str], eq: set[str]) -> list[tuple]:
    per = defaultdict(lambda: [0, 0, 0])   # checked, killed, equivalent survivors
    for name, status in res.items():
        if status in NOT_RUN:
            continue
        row = per[module_of(name)]
        row[0] += 1
        row[1] += status in KILLED
        row[2] += status not in KILLED and name in eq
    return [(m, n, k, e, k / n if n else None, k / (n - e) if n - e else None) for m, (n, k, e) in sorted(per.items())]


def main(argv: list[str]) -> int:
    res = results()
    eq = equivalent(res)
    if "--survivors" in argv:
        for name, status in sorted(res.items()):
            if status not in KILLED | NOT_RUN and name not in eq:
                print(f"{name}: {status}")
        return 0
    rows = table(res, eq)
    print(f"{'module':<48} {'mutants':>7} {'killed':>6} {'equiv.':>6} {'score':>6} {'w/o equiv.':>10}")
    for m, n, k, e, s, t in rows:
        print(f"{m:<48} {n:>7} {k:>6} {e:>6} {s:>6.1%} {t:>10.1%}")
    n, k, e = (sum(r[i] for r in rows) for i in (1, 2, 3))
    print(f"{'all':<48} {n:>7} {k:>6} {e:>6} {k / n:>6.1%} {k / (n - e):>10.1%}" if n else "no mutants checked")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
