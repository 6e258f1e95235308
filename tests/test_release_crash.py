"""score-rm is a transaction: SIGKILL it (its process group: the run, dvc and the stage process) at
each step -- during the download, after the params edit, at every stage boundary of `dvc repro` and
mid-stage, after it, between the writes of the commit (registered.json written, files staged) and
after the commit -- and the next release, or `prbench serve` starting, leaves the repo as before or
as after (never between), `git status` clean once the release is scored again, registered.json
consistent with params, and the release committed exactly once: never lost.

The project is a toy DVC project with the real per-RM layout (data/scores/<rm>.parquet ignored and
cached, metrics/scores/<rm>.json in git) and a report-like stage over every RM, so a crash run costs
seconds; the driver runs tasks/ops/release_score.py, the code score-rm runs, with the test's stops patched in."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.serve_project import env, git, kill_group, wait_for

pytestmark = pytest.mark.slow
DVC = str(Path(sys.executable).with_name("dvc"))
A = {"model": "acme/rm-a", "revision": "a" * 40, "name": "rm-a"}
B = {"model": "acme/rm-b", "revision": "b" * 40, "name": "rm-b"}

DVC_YAML = """\
stages:
  score:
    foreach: ${scoring.rms}
    do:
      cmd: python score.py ${key}
      params:
        - scoring.rms.${key}
      outs:
        - data/scores/${key}.parquet
      metrics:
        - metrics/scores/${key}.json:
            cache: false
  leaderboard:
    cmd: python board.py
    deps:
      - metrics/scores
    params:
      - scoring.rms
    outs:
      - data/leaderboard/leaderboard.parquet
    metrics:
      - metrics/leaderboard.json:
          cache: false
"""
SCORE = """\
import json, os, sys, time, pathlib
rm = sys.argv[1]
pathlib.Path("data/scores").mkdir(parents=True, exist_ok=True)
pathlib.Path("metrics/scores").mkdir(parents=True, exist_ok=True)
pathlib.Path(f"data/scores/{rm}.parquet").write_text("partial")
if os.environ.get("TOY_HANG") == rm:   # the crash test kills us here, mid-stage
    pathlib.Path("hanging").write_text(str(os.getpid()))
    time.sleep(600)
pathlib.Path(f"data/scores/{rm}.parquet").write_text(f"scores of {rm}")
pathlib.Path(f"metrics/scores/{rm}.json").write_text(json.dumps({"accuracy": len(rm) / 10}))
"""
BOARD = """\
import json, os, pathlib, time
rows = {p.stem: json.loads(p.read_text()) for p in sorted(pathlib.Path("metrics/scores").glob("*.json"))}
pathlib.Path("data/leaderboard").mkdir(parents=True, exist_ok=True)
pathlib.Path("data/leaderboard/leaderboard.parquet").write_text(json.dumps(sorted(rows)))
for rm in rows:   # files outside any RM's own outputs: one git sees (committed with the release), one it ignores
    pathlib.Path("plots/board").mkdir(parents=True, exist_ok=True)
    pathlib.Path(f"plots/board/{rm}.csv").write_text(f"rm,accuracy\\n{rm},{rows[rm]['accuracy']}\\n")
    pathlib.Path("scratch").mkdir(exist_ok=True)
    pathlib.Path(f"scratch/{rm}.tmp").write_text("scratch")
if os.environ.get("TOY_HANG") == "leaderboard":   # killed mid-stage, its outputs half written
    pathlib.Path("hanging").write_text(str(os.getpid()))
    time.sleep(600)
pathlib.Path("metrics/leaderboard.json").write_text(json.dumps(rows, sort_keys=True))
"""
# score-rm as the flow runs it (tasks/ops/release_score.py); argv[2] names where it stops: a step of
# release_score, "repro:<boundary>" of its dvc (tests/dvc_hook.py), or nowhere ("").
DRIVER = """\
import json, os, pathlib, signal, subprocess, sys, time, types

def stop(*_):   # as Prefect's engine does in a flow run process: SIGTERM becomes an exception
    raise SystemExit(143)

signal.signal(signal.SIGTERM, stop)
from tasks.ops import release_score, releases, repro
from tasks.core.errors import ConfigError
r = json.loads(sys.argv[1])
point = sys.argv[2]
release = releases.Release(model=r["model"], revision=r["revision"], source="hub")

def hold(root, step):   # release_score's step boundaries: mark, then wait for SIGKILL
    if step == point:
        pathlib.Path(root, "hanging").write_text(str(os.getpid()))
        time.sleep(600)

release_score.hold = hold
if point.startswith("repro:"):   # tasks.ops.repro's dvc child: tests/dvc_hook.py in front of the real dvc
    repro.subprocess = types.SimpleNamespace(PIPE=subprocess.PIPE, STDOUT=subprocess.STDOUT, Popen=lambda cmd, **kw:
        subprocess.Popen([sys.executable, "dvc_hook.py", point.removeprefix("repro:"), *cmd[1:]], **kw))

def prefetch(rel, entry):
    release_score.hold(".", "download")   # the crash test kills us here, "during the download"
    if rel.model.endswith("-404"):
        raise ConfigError(f"{rel.model}@{rel.revision}: download failed: model.safetensors: 404 EntryNotFound")

entry = {"kind": "seq-cls", "model": r["model"], "revision": r["revision"]}
try:
    out = release_score.score(".", release, r["name"], entry, repro=lambda: repro.dvc(".", "repro", log=lambda l: None),
                              prefetch=prefetch)
except release_score.ReleaseFailed as exc:
    print(exc)
    sys.exit(3)
print(json.dumps({"status": out.status, "commit": out.commit}))
"""


def _env(**extra):
    return {**env(DVC_NO_ANALYTICS="1", **extra), "PYTHONPATH": str(ROOT)}   # this checkout's code, run in the toy


def _announce(repo, rel):
    """What the watcher does: an uncommitted 'announced' record in registered.json."""
    path = repo / "data/releases/registered.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    state = json.loads(path.read_text()) if path.exists() else {"models": {}}
    state["models"][rel["model"]] = {"revision": rel["revision"], "rm": rel["name"], "source": "hub",
                                     "status": "announced", "message": None}
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    repo = tmp_path_factory.mktemp("toy") / "repo"
    repo.mkdir()
    (repo / "dvc.yaml").write_text(DVC_YAML)
    (repo / "score.py").write_text(SCORE)
    (repo / "board.py").write_text(BOARD)
    shutil.copy(Path(__file__).with_name("dvc_hook.py"), repo / "dvc_hook.py")
    (repo / "params.yaml").write_text(textwrap.dedent("""\
        # the toy project's params: comments stay
        scoring:
          rms:
            random: {kind: random}
        """))
    (repo / ".gitignore").write_text("/hanging\n/data/releases/.*.lock\n/scratch/\n")   # the 2nd as the project's
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "config", "user.email", "t@localhost"],
                ["git", "config", "user.name", "t"], [DVC, "init", "-q"], [DVC, "repro", "-q"]):
        subprocess.run(cmd, cwd=repo, check=True, env=_env(), capture_output=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "toy baseline")
    return repo


@pytest.fixture
def repo(toy, tmp_path):
    dst = tmp_path / "repo"
    shutil.copytree(toy, dst, symlinks=True)
    return dst


def _driver(rel, point=""):   # its command line and environment to stop at `point` (see POINTS)
    stage = point.removeprefix("during ")
    hang = {"TOY_HANG": stage.partition("@")[2] or stage} if stage != point else {}   # score@<rm>: rm
    return [sys.executable, "-c", DRIVER, json.dumps(rel), "" if hang else point], _env(**hang)


def _run(repo, rel, point=""):
    cmd, env = _driver(rel, point)
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=240)


def _kill_at(repo, rel, point):
    """Start score-rm for `rel`, SIGKILL its whole process group at `point`."""
    cmd, env = _driver(rel, point)
    proc = subprocess.Popen(cmd, cwd=repo, env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    marker = repo / "hanging"
    try:
        wait_for(lambda: marker.exists() or proc.poll() is not None, 120, step=0.2, what=f"score-rm to reach {point}")
        assert proc.poll() is None, proc.stdout.read()
    finally:
        kill_group(proc)
    marker.unlink(missing_ok=True)


def _tree(repo) -> dict:
    """Every file of the work tree but git's and DVC's own (and the state file's lock), with its bytes."""
    out = {}
    for p in sorted(repo.rglob("*")):
        rel = p.relative_to(repo).as_posix()
        if p.is_file() and not rel.startswith((".git/", ".dvc/tmp", ".dvc/cache", "data/releases/.")):
            out[rel] = p.read_bytes()
    return out


def _commits_of(repo, rel) -> int:
    return sum(1 for s in git(repo, "log", "--format=%s").splitlines() if f"{rel['model']}@{rel['revision']}" in s)


def _consistent(repo, *rels):
    """Scored once, committed, clean, and registered.json agrees with params."""
    assert git(repo, "status", "--porcelain").strip() == "", git(repo, "status", "--porcelain")
    rms = yaml.safe_load((repo / "params.yaml").read_text())["scoring"]["rms"]
    state = json.loads((repo / "data/releases/registered.json").read_text())["models"]
    for rel in rels:
        assert _commits_of(repo, rel) == 1, git(repo, "log", "--format=%s")
        assert rms[rel["name"]]["revision"] == rel["revision"]
        assert state[rel["model"]]["status"] == "scored" and state[rel["model"]]["revision"] == rel["revision"]
        assert (repo / f"data/scores/{rel['name']}.parquet").read_text() == f"scores of {rel['name']}"
    scored = {m for m, s in state.items() if s["status"] == "scored"}
    assert scored == {str(e.get("model")) for e in rms.values() if e.get("model")}, "scored = in params"
    status = subprocess.run([DVC, "status", "-q"], cwd=repo, env=_env())
    assert status.returncode == 0, "dvc status clean"
    assert "# the toy project's params: comments stay" in (repo / "params.yaml").read_text()
    assert not list((repo / ".git/prbench/txn").glob("*.json")), "no journal left"


# every stage boundary of score-rm's `dvc repro` (score@random is unchanged: skipped), and mid-stage
REPRO = ["repro:before score@random", "repro:after score@random",
         *(f"{p} {stage}" for stage in ("score@rm-a", "leaderboard")
           for p in ("repro:before", "during", "repro:ran", "repro:committed", "repro:after")), "repro:end"]
POINTS = ["download", "downloaded", "edited", *REPRO, "reproduced", "state-written", "staged", "committed"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("point", POINTS)
def test_a_crash_then_the_next_release_scores_both_once(repo, point):
    _announce(repo, A)
    _kill_at(repo, A, point)
    _announce(repo, B)
    out = _run(repo, B)
    assert out.returncode == 0, out.stdout + out.stderr
    _consistent(repo, A, B)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("point", POINTS)
def test_a_crash_then_serve_start_leaves_main_as_before_or_after(repo, point):
    """The whole work tree (tracked, untracked and ignored files, not only the RM's outputs) as before the run,
    at every point it can die."""
    _announce(repo, A)
    before, head, status = _tree(repo), git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")
    _kill_at(repo, A, point)
    code = ("from flows.deploy import recover_at_start; import json; "
            "print(json.dumps([j.release.model for j in recover_at_start()]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=_env(), capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    todo = json.loads(out.stdout.strip().splitlines()[-1])
    if point == "committed":   # the commit landed before the kill: main as after, nothing to redo
        assert todo == [] and _commits_of(repo, A) == 1
        _consistent(repo, A)
        return
    assert todo == [A["model"]], "the interrupted release is handed to a score-rm run"
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == status, "the index too: nothing left staged"
    after = _tree(repo)
    assert after == before, sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    again = _run(repo, A)   # the run serve starts for it
    assert again.returncode == 0, again.stdout + again.stderr
    _consistent(repo, A)


@pytest.mark.timeout(240)
def test_a_release_that_cannot_download_touches_nothing(repo):
    rel = {**A, "model": "acme/rm-a-404"}
    before, head = _tree(repo), git(repo, "rev-parse", "HEAD")
    out = _run(repo, rel)
    assert out.returncode == 3 and out.stdout.strip() == (
        f"score-rm acme/rm-a-404@{A['revision']}: download failed: model.safetensors: 404 EntryNotFound"), out.stdout
    assert _tree(repo) == before and git(repo, "rev-parse", "HEAD") == head
    assert not list((repo / ".git/prbench/txn").glob("*.json"))


@pytest.mark.timeout(240)
def test_a_stop_signal_mid_repro_rolls_back_before_exit(repo):
    """What a stopping `prbench serve` does to a run in progress (Prefect SIGTERMs its flow runs): the
    run ends its dvc and stage processes and rolls back before it exits; the next run scores it once."""
    _announce(repo, A)
    before, status = _tree(repo), git(repo, "status", "--porcelain")
    cmd, env = _driver(A, "during score@rm-a")
    proc = subprocess.Popen(cmd, cwd=repo, env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: (repo / "hanging").exists() or proc.poll() is not None, 120, step=0.2, what="the stage")
        stage = int((repo / "hanging").read_text())
        (repo / "hanging").unlink()
        proc.send_signal(signal.SIGTERM)   # the run only, as the runner does; not its process group
        assert proc.wait(60) == 143, proc.stdout.read()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not Path(f"/proc/{stage}").exists(), 30, what="the stage process to be ended")
    assert git(repo, "status", "--porcelain") == status and _tree(repo) == before, "rolled back before exit"
    again = _run(repo, A)
    assert again.returncode == 0, again.stdout + again.stderr
    _consistent(repo, A)
