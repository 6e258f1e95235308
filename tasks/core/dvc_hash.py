"""A path's hash as DVC 3 records it in dvc.lock (`hash: md5`), computed without DVC: a file's md5 of its bytes, a
folder's md5 of its sorted listing (relative path and md5 of each file, DVC's JSON) with ".dir" appended.

The per-RM fingerprints (tasks/stages/fingerprint.py) record their inputs this way, so what a fingerprint file
holds can be recomputed from dvc.lock and the params alone, and a lock refreshed by hand shows
(tasks/ops/committed_run.py). tests/test_committed_run.py holds these hashes equal to `dvc add`'s."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

# .dvcignore's patterns (a test holds the two equal): bytecode caches are never part of a dependency's hash
IGNORED_DIRS = ("__pycache__",)
IGNORED_SUFFIXES = (".pyc",)
DIR_SUFFIX = ".dir"


def file_md5(path: str | Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def listing_md5(files: dict[str, str]) -> str:
    """A folder's hash from {relative posix path: md5} of the files it holds (dvc_data's Tree.as_bytes)."""
    entries = sorted(({"md5": md5, "relpath": rel} for rel, md5 in files.items()), key=lambda e: e["relpath"])
    return hashlib.md5(json.dumps(entries, sort_keys=True).encode("utf-8")).hexdigest() + DIR_SUFFIX


def _ignored(rel: Path) -> bool:
    return bool(set(IGNORED_DIRS) & set(rel.parts[:-1])) or rel.name in IGNORED_DIRS or rel.suffix in IGNORED_SUFFIXES


def dvc_md5(path: str | Path) -> str:
    """The md5 dvc.lock records for `path` (a file or a folder); "absent" where there is nothing."""
    p = Path(path)
    if p.is_file():
        return file_md5(p)
    if not p.is_dir():
        return "absent"
    files = {}
    for f in p.rglob("*"):
        rel = f.relative_to(p)
        if f.is_file() and not _ignored(rel):
            files[rel.as_posix()] = file_md5(f)
    return listing_md5(files)
