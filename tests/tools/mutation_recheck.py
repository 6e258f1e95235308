"""Re-run the survivors of a `mutmut run` against test files written since, without a new mutmut pass (whose
stats pass alone takes minutes): each mutant is switched on the way mutmut does it (MUTANT_UNDER_TEST in the
mutants/ copy) and the files run with -x; a failing run kills it. Prints "<mutant> killed|survived" per line.

    python tests/tools/mutation_recheck.py 'tasks.ops.report.fmt' tests/test_rules_fmt.py [more test files]

The tests must be in mutants/tests too (copied here first). A later `make mutate` gives the score of record."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.tools.mutation_score import NOT_RUN, KILLED, results  # noqa: E402


def recheck(mutant: str, tests: list[str]) -> bool:
    env = {**os.environ, "MUTANT_UNDER_TEST": mutant, "HF_HUB_OFFLINE": "1"}
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                               *tests], cwd=ROOT / "mutants", env=env, capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        return True   # as mutmut counts it: a mutant that hangs the tests is noticed
    return proc.returncode != 0


def main(prefix: str, tests: list[str]) -> None:
    for t in tests:
        shutil.copy2(ROOT / t, ROOT / "mutants" / t)
    alive = sorted(m for m, s in results().items() if m.startswith(prefix + ".") and s not in KILLED | NOT_RUN)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for mutant, killed in zip(alive, pool.map(lambda m: recheck(m, tests), alive)):
            print(f"{mutant} {'killed' if killed else 'survived'}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
