"""mutants/ without a `mutmut run`: the tree copy and the mutants of the modules setup.cfg [mutmut] names (or only
of the files given), as mutmut's first step makes them, without its stats and test passes (minutes on 2 cores).
Then mutation_recheck.py ... --every runs each mutant against the rules tests of its module.

    python tests/tools/mutation_generate.py                                   # every configured module
    python tests/tools/mutation_generate.py tasks/ops/report/compare.py ...   # these files only (re-made)"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(files: list[str]) -> None:
    os.chdir(ROOT)
    from mutmut.__main__ import create_file_mutants, set_mutant_under_test
    from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths, walk_source_files

    set_mutant_under_test("mutant_generation")   # as mutmut's run does, so no trampoline takes a mutant while copying
    (ROOT / "mutants").mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    wanted = {Path(f) for f in files}
    for path in walk_source_files():
        if wanted and Path(path) not in wanted:
            continue
        if wanted:   # re-made: an older copy (e.g. from before the file was configured) would be kept as it is
            (ROOT / "mutants" / path).unlink(missing_ok=True)
        result = create_file_mutants(Path(path))
        if result.error:
            raise result.error


if __name__ == "__main__":
    main(sys.argv[1:])
