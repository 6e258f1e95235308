"""dvc.lock at N extra RMs without running a stage: a copy of the project (git's files), params.yaml with
`extra` RMs of `kind: random` added to `scoring.rms`, every stage output a small placeholder file, then
`dvc commit --force` records every stage's entry as `dvc repro` would after a run (the same deps, params and
outs; only the hashes differ). What the lock's size and `dvc status`'s time grow with is its structure, so this
measures both in seconds where a run of 100 RMs takes minutes (benchmarks/scale.py, tests/test_lock_growth.py).

`python -m tests.lock_synth DIR --extra N` builds DIR and prints the lock's lines."""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def extra_name(i: int) -> str:
    return f"random-{i:03d}"


def copy_project(dst: Path) -> None:
    """git's files of this checkout (tracked and new), under a fresh `git init` (DVC wants a repo)."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    subprocess.run(["git", "init", "-q"], cwd=dst, check=True)


def add_rms(root: Path, extra: int, start: int = 0) -> None:
    """`extra` seeded random RMs (no model) appended to scoring.rms of root's params.yaml."""
    path = root / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params["scoring"]["rms"].update({extra_name(i): {"kind": "random"} for i in range(start, start + extra)})
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def dvc(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "dvc"
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run([str(exe), *args], cwd=root, capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise RuntimeError(f"dvc {' '.join(args)}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc


def placeholders(root: Path) -> int:
    """A small file for every output of every stage (a folder output: a folder holding one); how many."""
    from dvc.repo import Repo

    n = 0
    with Repo(str(root)) as repo:
        for stage in repo.index.stages:
            for dep in stage.deps:   # a file inside another stage's folder output (an RM's fingerprint)
                path = Path(dep.fs_path)
                if path.suffix and not path.exists() and Path(root, "data") in path.parents:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(f"{dep.def_path}\n", encoding="utf-8")
                    n += 1
            for out in stage.outs:
                path = Path(out.fs_path)
                folder = not path.suffix or out.def_path.rstrip("/") in ("data/models/bradley-terry",)
                target = path / "placeholder" if folder else path
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.exists():
                    target.write_text(f"{out.def_path}\n", encoding="utf-8")
                    n += 1
    return n


def build(root: Path, extra: int) -> Path:
    """root: the project with `extra` random RMs and a dvc.lock of every stage committed; its lock path."""
    root.mkdir(parents=True, exist_ok=True)
    copy_project(root)
    (root / "dvc.lock").unlink(missing_ok=True)
    add_rms(root, extra)
    placeholders(root)
    dvc(root, "commit", "--force", "--quiet")
    return root / "dvc.lock"


def lock_lines(root: Path) -> int:
    return len((root / "dvc.lock").read_text(encoding="utf-8").splitlines())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--extra", type=int, default=0)
    args = ap.parse_args()
    build(args.dir, args.extra)
    print(f"{args.extra} extra RMs: dvc.lock {lock_lines(args.dir)} lines")


if __name__ == "__main__":
    main()
