"""mutants/ without a `mutmut run`: the tree copy and the mutants of the modules setup.cfg [mutmut] names (or only
of the files given), as mutmut's first step makes them, without its stats and test passes (minutes on 2 cores).
Then mutation_recheck.py ... --every runs each mutant against the rules tests of its module.

    python tests/tools/mutation_generate.py                                   # every configured module
    python tests/tools/mutation_generate.py tasks/ops/report/compare.py ...   # these files only (re-made)

`mutants_of(path)` is mutmut's generation of one file with what mutmut does not keep: the source lines each mutant
changes and a key that names the mutation itself (`module.function@hash` of the changed code), so the key stays
put when other code of the function moves, where mutmut's `__mutmut_N` renumbers. docs/testing.md lists the
equivalent mutants by that key; `make mutate-diff` (mutation_diff.py) picks the mutants of the changed lines by
their lines."""
from __future__ import annotations

import difflib
import hashlib
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutant:
    name: str               # mutmut's: tasks.core.halves.x_split__mutmut_3 (renumbered when the function changes)
    key: str                # the mutation's: tasks.core.halves.x_split@1a2b3c4d (the function and its changed code)
    path: str
    lines: frozenset[int]   # the source lines the mutation changes
    before: str             # the changed code, as written and as mutated (one line each, for people)
    after: str


def _changed(before: str, after: str) -> tuple[list[int], str, str]:
    """Offsets (from the node's first line) of the lines a mutation changes, and those lines before and after."""
    a, b = before.splitlines() or [""], after.splitlines() or [""]
    offsets, old, new = [], [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            offsets += range(i1, max(i2, i1 + 1))
            old += a[i1:i2]
            new += b[j1:j2]
    show = lambda lines: " ".join(x.strip() for x in lines if x.strip())[:120] or "(removed)"  # noqa: E731
    return offsets or [0], show(old), show(new)


def mutants_of(path: str | Path) -> tuple[str, list[Mutant]]:
    """The mutated file mutmut writes (its trampolines and every mutant) and its mutants, in mutmut's order and
    with mutmut's names. Reads `path` relative to the working directory, whose setup.cfg gives the patterns."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider
    from mutmut.mutation.file_mutation import MutationVisitor, combine_mutations_to_source, group_by_top_level_node
    from mutmut.mutation.mutators import mutation_operators
    from mutmut.mutation.pragma_handling import get_ignored_lines
    from mutmut.mutation.trampoline_templates import mangle_function_name
    from mutmut.utils.format_utils import get_mutant_name

    path = Path(path)
    code = path.read_text(encoding="utf-8")
    wrapper = MetadataWrapper(cst.parse_module(code))   # mutmut's create_mutations, keeping the positions
    visitor = MutationVisitor(mutation_operators, get_ignored_lines(str(path), code, wrapper, None), None)
    module = wrapper.visit(visitor)
    positions = wrapper.resolve(PositionProvider)
    grouped = group_by_top_level_node(visitor.mutations)
    functions = []   # in the order combine_mutations_to_source numbers them
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            functions.append((stmt, None))
        elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
            functions += [(m, stmt.name.value) for m in stmt.body.body if isinstance(m, cst.FunctionDef)]
    mutants, seen = [], Counter()
    for func, cls in functions:
        mangled = mangle_function_name(name=func.name.value, class_name=cls)
        qualified = get_mutant_name(path, mangled)
        span = positions.get(func)
        for i, mutation in enumerate(grouped.get(func, ())):
            before = module.code_for_node(mutation.original_node)
            after = module.code_for_node(mutation.mutated_node)
            pos = positions.get(mutation.original_node, span)
            offsets, old, new = _changed(before, after)
            lines = frozenset(min(pos.start.line + o, pos.end.line) for o in offsets) if pos else frozenset()
            seen[qualified, before, after] += 1   # the same mutation twice in a function: told apart by its count
            digest = hashlib.sha1(f"{qualified}\0{before}\0{after}\0{seen[qualified, before, after]}".encode())
            mutants.append(Mutant(get_mutant_name(path, f"{mangled}__mutmut_{i + 1}"),
                                  f"{qualified}@{digest.hexdigest()[:8]}", str(path), lines, old, new))
    mutated = combine_mutations_to_source(module, visitor.mutations, visitor.ignored_classes,
                                          visitor.ignored_functions)
    names = [get_mutant_name(path, n) for n in mutated.mutant_names]
    if names != [m.name for m in mutants]:   # mutmut changed how it numbers: the keys would name other mutants
        raise RuntimeError(f"{path}: mutmut's mutant names differ from the ones computed here")
    return mutated.code, mutants


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
