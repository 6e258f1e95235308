"""`make committed-run` (`prbench committed-run`): the committed run made by a run, never patched. A fresh clone of
HEAD at a temporary path runs `make run` (its own set-up, cold caches); its dvc.lock, metrics/, plots/ and
the report's pages are checked (lock_check: nothing stale, and the run changed nothing else git holds) and copied
back over this checkout's, as one change: a journal in the git dir names every file's new content (blobs written
to git's object store first), so a run killed while copying is finished by the next `prbench committed-run` (or
`prbench committed-run --recover`), never left half-copied. Commit the result with the code it was made from."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tasks.core import numerics
from tasks.core.artifacts import write_bytes, write_json
from tasks.core.errors import ConfigError
from tasks.core.layout import REPORT
from tasks.ops import gitops, lock_check
from tasks.ops.repo_lock import state_dir

# what a run writes that git holds: the lock, the metrics, the plots and the report's pages (index.html, pairs.html)
RUN_PATHS = ("dvc.lock", "metrics", "plots", *sorted(v for v in REPORT.values() if v.startswith("report/")))


def _journal(root: Path) -> Path:
    return state_dir(root) / "committed-run.json"


def _under(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in RUN_PATHS)


def _run_files(root: Path) -> dict[str, Path]:
    """{path: file} of every file under RUN_PATHS in `root`."""
    out = {}
    for rel in RUN_PATHS:
        p = root / rel
        for f in ([p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else []):
            out[f.relative_to(root).as_posix()] = f
    return out


def plan(root: Path, clone: Path) -> dict[str, str | None]:
    """{path: blob sha of the clone's content, or None to delete} for every run file that differs; each blob is
    written to root's object store first, so the journal names contents that survive the clone's removal."""
    mine, theirs = _run_files(root), _run_files(clone)
    changes: dict[str, str | None] = {}
    for path in sorted(set(mine) | set(theirs)):
        if path not in theirs:
            changes[path] = None
        elif path not in mine or mine[path].read_bytes() != theirs[path].read_bytes():
            changes[path] = gitops.git(root, "hash-object", "-w", "--", str(theirs[path])).strip()
    return changes


def apply(root: Path, changes: dict[str, str | None]) -> None:
    """Every change of the plan, each file replaced atomically; repeatable (the recovery runs it again)."""
    for path, blob in changes.items():
        target = root / path
        if blob is None:
            target.unlink(missing_ok=True)
        else:
            write_bytes(gitops.git_bytes(root, "cat-file", "blob", blob), target)


def copy_back(root: Path, changes: dict[str, str | None]) -> None:
    """The journal first (atomic), then the files, then the journal removed: all of it or, after a kill, all of it
    once `recover` runs."""
    journal = _journal(root)
    write_json({"changes": changes}, journal)
    apply(root, changes)
    journal.unlink()


def recover(root: Path, out=sys.stdout) -> bool:
    """Finish a copy a killed run left (its journal); True when there was one."""
    journal = _journal(root)
    if not journal.exists():
        return False
    changes = json.loads(journal.read_text(encoding="utf-8"))["changes"]
    print(f"prbench committed-run: finishing the copy a stopped run left ({len(changes)} file(s))", file=out)
    apply(root, changes)
    journal.unlink()
    return True


def _refuse_dirty(root: Path) -> None:
    status = gitops.git(root, "status", "--porcelain", "--untracked-files=no").splitlines()
    dirty = [line[3:] for line in status if not _under(line[3:].split(" -> ")[-1])]
    if dirty:
        raise ConfigError(f"prbench committed-run: uncommitted changes in {', '.join(dirty[:5])}"
                          f"{' ...' if len(dirty) > 5 else ''}: commit them first (the run is made from HEAD)")


def make(root: str | Path, keep: bool = False, out=sys.stdout, err=sys.stderr) -> int:
    """Clone HEAD, `make run` there, check it, copy its run files back. 0 when done (the changed files listed)."""
    root = Path(root).resolve()
    recover(root, out)
    _refuse_dirty(root)
    head = gitops.git(root, "rev-parse", "--short", "HEAD").strip()
    tmp = Path(tempfile.mkdtemp(prefix="prbench-committed-run-"))
    clone = tmp / "prbench"
    gitops.git(tmp, "clone", "-q", "--no-hardlinks", str(root), str(clone))
    cpu = numerics.cpuinfo()
    print(f"prbench committed-run: `make run` in a fresh clone of {head} at {clone} ({cpu['model']}, "
          f"{cpu['vendor']})", file=out, flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "PRBENCH_", "VIRTUAL_ENV"))}
    if subprocess.run(["make", "run"], cwd=clone, env=env).returncode:
        print(f"prbench committed-run: `make run` failed in {clone} (kept); nothing copied", file=err)
        return 1
    other = [line[3:] for line in gitops.git(clone, "status", "--porcelain", "--untracked-files=all").splitlines()
             if not _under(line[3:])]
    stale = lock_check.problems(clone)
    if other or stale:
        for line in [f"the run changed {p}, which the committed run does not hold" for p in other] + stale:
            print(f"prbench committed-run: {line}", file=err)
        print(f"prbench committed-run: nothing copied; the clone is kept at {clone}", file=err)
        return 1
    changes = plan(root, clone)
    copy_back(root, changes)
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"prbench committed-run: {len(changes)} file(s) changed: {', '.join(changes) or 'none'}", file=out)
    if changes:
        print(f"  commit them with the code they were made from: git add {' '.join(RUN_PATHS)} && git commit -m "
              f"'Committed run of {head} (make committed-run, {cpu['model']})'", file=out)
    return 0


def add_parser(subparsers):
    """Register `prbench committed-run` on the CLI's subparsers."""
    p = subparsers.add_parser("committed-run", help="make the committed run: a fresh clone's `make run`, its dvc.lock, "
                              "metrics/, plots/ and the report's pages checked and copied back (docs/determinism.md)")
    p.add_argument("--keep", action="store_true", help="keep the clone")
    p.add_argument("--recover", action="store_true", help="only finish a copy a stopped run left")
    p.set_defaults(func=_main)


def _main(args) -> int:
    root = Path.cwd()
    if gitops.git(root, "rev-parse", "--is-inside-work-tree", check=False).strip() != "true":
        raise ConfigError(f"prbench committed-run: {root} is not a git checkout: run it in the project's clone")
    if args.recover:
        recover(root)
        return 0
    return make(root, keep=args.keep)
