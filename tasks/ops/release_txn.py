"""Scoring a release as a transaction: its change to the repo lands as one commit (params, dvc.lock,
metrics, plots and its `registered.json` entry together) or not at all.

A journal in the git dir (<git dir>/prbench/txn/<id>.json) is written before anything is touched
and removed after the commit. It holds the release, a snapshot of every file git sees (and a copy
of those that differed from HEAD), and the token the commit message carries, and the files git ignores. Its owner holds a flock on
<id>.lock for its whole life, so a journal whose lock is free is an unfinished release of a dead run:
`rollback` puts the repo back as the snapshot says (files restored or removed, the index reset, DVC's
outputs checked out to the restored dvc.lock, any other file the run created anywhere in the work tree
removed but what KEPT names), unless the commit already landed (its token is on the branch): then nothing
is undone.
`dead` lists them for the next score-rm or `prbench serve` start, which rescore each once."""
from __future__ import annotations

import fcntl
import json
import shutil
import uuid
from dataclasses import asdict
from pathlib import Path

from tasks.ops import gitops, releases
from tasks.core import layout
from tasks.core.artifacts import write_bytes, write_json
from tasks.ops.repo_lock import state_dir

STATE = layout.RELEASES["state"]
TOKEN = "prbench-release:"   # the commit message trailer naming the journal
# never rolled back: git's and DVC's own state, the virtualenv, caches of computed results (nothing computed is
# lost on a crash), run records, the watcher's downloads, local results; plus common.cache_dir (_kept)
KEPT = (".git", ".dvc", ".venv", ".prbench-cache", ".prefect", "runs", "results", "test-outputs", "data/releases")


def _dir(root) -> Path:
    d = state_dir(root) / "txn"
    d.mkdir(exist_ok=True)
    return d


class Journal:
    """One release in flight; `with Journal(...)` holds its liveness lock."""

    def __init__(self, root, release: releases.Release, name: str, entry: dict, branch: str | None = None,
                 id: str | None = None):
        self.root, self.release, self.name, self.entry, self.branch = Path(root), release, name, entry, branch
        self.id = id or uuid.uuid4().hex[:16]
        self.data = {"id": self.id, "release": asdict(release), "name": name, "entry": entry, "branch": branch,
                     "phase": "download"}
        self._lock = None

    @property
    def path(self) -> Path:
        return _dir(self.root) / f"{self.id}.json"

    @property
    def backup(self) -> Path:
        return _dir(self.root) / f"{self.id}.backup"

    def __enter__(self):
        self._lock = open(_dir(self.root) / f"{self.id}.lock", "w")
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self.save()
        return self

    def __exit__(self, *exc):
        self._lock.close()
        return False

    def save(self, **changes) -> None:
        self.data.update(changes)
        write_json(self.data, self.path)

    def prepare(self) -> None:
        """Before the first change: snapshot every visible file, copy those that differ from HEAD."""
        root = self.root
        head = gitops.git(root, "rev-parse", "--verify", "-q", "HEAD", check=False).strip() or None
        before = gitops.snapshot(root)
        dirty = [line[3:] for line in gitops.git(root, "status", "--porcelain", "-uall", "-z").split("\0")
                 if len(line) > 3]
        for p in dirty:
            if (root / p).is_file():
                (self.backup / p).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / p, self.backup / p)
        prior = releases.load_state(root / STATE)["models"].get(self.release.model)
        self.save(phase="edit", head=head, before=before, backed_up=sorted(p for p in dirty if (root / p).is_file()),
                  prior_record=prior, rm_was_known=_known(root, self.name), ignored=ignored_files(root))

    def message(self, subject: str) -> str:
        return f"{subject}\n\n{TOKEN} {self.id}"

    def done(self) -> None:
        self.path.unlink(missing_ok=True)
        shutil.rmtree(self.backup, ignore_errors=True)
        (_dir(self.root) / f"{self.id}.lock").unlink(missing_ok=True)


def _params(root) -> dict:
    import yaml

    try:
        return yaml.safe_load((Path(root) / "params.yaml").read_text()) or {}
    except Exception:   # an unreadable params file: no RM known (its outputs are removed), the default cache only
        return {}


def _known(root, name: str) -> bool:
    return name in (((_params(root).get("scoring") or {}).get("rms")) or {})


def _kept(root) -> tuple[str, ...]:
    cache = (_params(root).get("common") or {}).get("cache_dir")
    return KEPT + ((str(cache).strip("/"),) if cache and not Path(str(cache)).is_absolute() else ())


def ignored_files(root) -> list[str]:
    """Every file of the work tree that git does not see (ignored), outside KEPT: DVC's outputs, scratch."""
    import os

    root = Path(root)
    kept, visible, out = _kept(root), set(gitops.visible_files(root)), []
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root).as_posix()
        rel = "" if rel == "." else rel + "/"
        dirs[:] = sorted(d for d in dirs if (rel + d) not in kept)
        out += [rel + f for f in files if rel + f not in visible and (rel + f) not in kept]
    return sorted(out)


def load(root, path: Path) -> Journal:
    data = json.loads(path.read_text())
    j = Journal(root, releases.Release(**data["release"]), data["name"], data["entry"], data.get("branch"), data["id"])
    j.data = data
    return j


def dead(root) -> list[Journal]:
    """Journals of runs that died before finishing (their lock is free), oldest first."""
    out = []
    for path in sorted(_dir(root).glob("*.json"), key=lambda p: p.stat().st_mtime):
        lock = path.with_suffix(".lock")
        with open(lock, "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue   # its run is alive
            fcntl.flock(fh, fcntl.LOCK_UN)
        try:
            out.append(load(root, path))
        except (ValueError, KeyError, TypeError):   # torn before its first write completed: nothing was touched
            path.unlink(missing_ok=True)
    return out


def running(root) -> list[dict]:
    """Journals whose run is alive: releases being scored now."""
    gone = {j.id for j in dead(root)}
    out = []
    for path in sorted(_dir(root).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        if data.get("id") not in gone:
            out.append(data)
    return out


def landed(root, j: Journal) -> bool:
    ref = j.branch or "HEAD"
    log = gitops.git(root, "log", "-n", "50", "--format=%B", ref, "--", check=False)
    return f"{TOKEN} {j.id}" in log


def rollback(root, j: Journal, log=print) -> str:
    """Undo what a dead run did to the repo; 'landed' when its commit is in, 'rolled back' otherwise.
    The caller holds the dvc lock (no other run touches the repo meanwhile)."""
    root = Path(root)
    index_lock = Path(gitops.git(root, "rev-parse", "--absolute-git-dir").strip()) / "index.lock"
    index_lock.unlink(missing_ok=True)   # left by a git killed mid-commit; nobody else holds the dvc lock
    if landed(root, j):
        j.done()
        return "landed"
    if j.data.get("phase") == "download":
        return "rolled back"   # nothing in the repo was touched yet
    before, head = j.data["before"], j.data.get("head")
    after = gitops.snapshot(root)
    paths = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    staged = [p for p in gitops.git(root, "diff", "--cached", "--name-only", "-z").split("\0") if p]
    if staged and head:   # what `git add` staged of the run's files
        gitops.git(root, "reset", "-q", head, "--", *staged)
    elif staged:          # no commit to reset to yet: unstage
        gitops.git(root, "rm", "-q", "--cached", "--ignore-unmatch", "--", *staged)
    backed = set(j.data.get("backed_up") or [])
    for p in paths:
        dst = root / p
        if p == STATE:
            continue
        if before.get(p) is None:
            dst.unlink(missing_ok=True)
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)   # the run may have removed its folder
        if p in backed:
            shutil.copy2(j.backup / p, dst)
        else:
            write_bytes(gitops.git_bytes(root, "show", f"{head}:{p}"), dst)
    _restore_record(root, j, existed=before.get(STATE) is not None)
    from tasks.ops.repro import dvc

    _free_dvc_rwlock(root, log)
    dvc(root, "checkout", "--force", "--quiet", log=lambda line: None)   # ignored outputs back to the restored lock
    if not j.data.get("rm_was_known"):
        _remove_rm_outputs(root, j.name)
    if j.data.get("ignored") is not None:   # anything else the run created where git does not look
        before_ignored = set(j.data["ignored"])
        for p in ignored_files(root):
            if p not in before_ignored:
                (root / p).unlink(missing_ok=True)
    j.save(phase="download")   # rolled back: only the rescore is left to do
    log(f"rolled back the unfinished release {j.release.model}@{j.release.revision} ({len(paths)} files restored)")
    return "rolled back"


def _free_dvc_rwlock(root: Path, log=print) -> None:
    """Drop what a killed `dvc repro` left in DVC's rwlock (its running stage's deps and outs, by pid).
    DVC drops such an entry itself only once the pid is gone, so an orphan its PID 1 has not reaped
    yet (a zombie) or a reused pid would fail the rescore and every run after ("... is busy"):
    such entries go; a live holder's stay."""
    import psutil
    from dvc.config import Config
    from dvc.exceptions import DvcException
    from dvc.fs import localfs
    from dvc.rwlock import RWLOCK_FILE, _edit_rwlock

    tmp = root / ".dvc" / "tmp"
    if not (tmp / RWLOCK_FILE).exists():
        return
    written = (tmp / RWLOCK_FILE).stat().st_mtime

    def gone(pid: int) -> bool:
        try:
            p = psutil.Process(pid)
            return p.status() == psutil.STATUS_ZOMBIE or p.create_time() > written   # dead, or the pid reused
        except psutil.NoSuchProcess:
            return True

    try:
        hardlink = Config(dvc_dir=str(root / ".dvc"))["core"].get("hardlink_lock", False)
        with _edit_rwlock(str(tmp), localfs, hardlink) as lock:   # under DVC's own guard
            pids = {i["pid"] for i in lock["write"].values()} | {i["pid"] for v in lock["read"].values() for i in v}
            dead = {pid for pid in pids if gone(pid)}
            for path in [p for p, i in lock["write"].items() if i["pid"] in dead]:
                del lock["write"][path]
            for path, infos in list(lock["read"].items()):
                lock["read"][path] = [i for i in infos if i["pid"] not in dead]
                if not lock["read"][path]:
                    del lock["read"][path]
    except DvcException as exc:   # a torn rwlock, a bad config: DVC says so again at checkout and repro
        log(f"could not release DVC's locks of the dead run: {exc}")
        return
    if dead:
        log(f"released DVC's locks of the dead run's dvc (pid {', '.join(map(str, sorted(dead)))})")


def _restore_record(root, j: Journal, existed: bool) -> None:
    """registered.json: this release's record as it was; other runs' records (a watcher's) kept."""
    import fcntl as f

    path = Path(root) / STATE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        f.flock(lock, f.LOCK_EX)
        try:
            state = releases.load_state(path)
        except Exception:   # torn by the crash (it is written atomically, so only by hand): start from the snapshot's
            state = {"models": {}}
        prior = j.data.get("prior_record")
        if prior is None:
            state["models"].pop(j.release.model, None)
        else:
            state["models"][j.release.model] = prior
        if state["models"] or existed:
            releases.save_state(state, path)
        else:
            path.unlink(missing_ok=True)


def _remove_rm_outputs(root, name: str) -> None:
    from tasks.core.stage_table import TABLE

    for stage in TABLE:   # the stages fanned out over scoring.rms (not those over another group)
        if stage.per_rm and stage.foreach == "scoring.rms":
            for p in stage.out(name).values():
                target = Path(root) / p
                if target.is_dir():
                    shutil.rmtree(target)   # a folder that will not go fails the recovery: retried at the next start
                elif target.exists():
                    target.unlink()
