"""Commits made by the served deployments: only files a run changed, on the branch params name.

`snapshot` hashes every file git sees (tracked or not ignored) before a run; `changed` lists the
ones the run created, modified or deleted, so a user's own uncommitted edits are never swept in.
A branch other than the checked-out one is committed to through a temporary index: the working
tree, the real index and HEAD stay as they are."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from tasks.core.artifacts import file_hash


class GitError(RuntimeError):
    pass


def git(root, *args, env=None, check=True) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


def git_bytes(root, *args) -> bytes:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True)
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def visible_files(root) -> list[str]:
    out = git(root, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    return sorted(p for p in out.split("\0") if p)


def snapshot(root) -> dict[str, str | None]:
    root = Path(root)
    return {p: file_hash(root / p) if (root / p).is_file() else None for p in visible_files(root)}


def changed(root, before: dict) -> list[str]:
    after = snapshot(root)
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def dirty(root, path) -> bool:
    """Does `path` differ from HEAD (modified, new or deleted)?"""
    return bool(git(root, "status", "--porcelain", "--", path).strip())


def current_branch(root) -> str | None:
    name = git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
    return name or None


def _identity(root) -> dict:
    """A commit identity when the repo has none configured (CI, a fresh clone)."""
    if git(root, "config", "user.email", check=False).strip():
        return {}
    return {"GIT_AUTHOR_NAME": "prbench", "GIT_AUTHOR_EMAIL": "prbench@localhost",
            "GIT_COMMITTER_NAME": "prbench", "GIT_COMMITTER_EMAIL": "prbench@localhost"}


def commit(root, paths: list[str], message: str, branch: str | None = None) -> str:
    """Commit exactly `paths` (their working-tree content; deletions included); return the sha."""
    tracked = set(git(root, "ls-files", "-z").split("\0"))
    paths = [p for p in paths if (Path(root) / p).exists() or p in tracked]   # a vanished untracked file: nothing
    if not paths:
        raise GitError("nothing to commit")
    env = _identity(root)
    here = current_branch(root)
    if branch is None or branch == here:
        git(root, "add", "-A", "--", *paths)
        git(root, "commit", "-q", "-m", message, "--", *paths, env=env)
        return git(root, "rev-parse", "HEAD").strip()
    parent = (git(root, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False).strip()
              or git(root, "rev-parse", "--verify", "-q", "HEAD", check=False).strip())
    with tempfile.TemporaryDirectory() as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if parent:
            git(root, "read-tree", parent, env=index)
        git(root, "add", "-A", "--", *paths, env=index)
        tree = git(root, "write-tree", env=index).strip()
    sha = git(root, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", message, env=env).strip()
    git(root, "update-ref", f"refs/heads/{branch}", sha)
    return sha
