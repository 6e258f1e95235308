"""The committed run is what a run of the committed code writes (tasks/ops/lock_check.py), and `make committed-run`
makes it (tasks/ops/committed_run.py): a fresh clone's `make run`, checked, its run files copied back as one change.

The lock check runs on a `git archive` of HEAD with HEAD's own code (a subprocess), so edits in progress do not
count; each planted staleness (a fingerprint file a hand refresh left, a code file refreshed by hand in the lock, a
metrics file edited, a param changed, the page's code version) must be named."""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import io
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT


def _archive(dest: Path, rev: str = "HEAD") -> Path:
    data = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _problems(root: Path) -> list[str]:
    """The lock check of `root`, run with root's own code (what HEAD's code says of HEAD's lock)."""
    code = "import json; from tasks.ops.lock_check import problems; print(json.dumps(problems('.')))"
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def head(tmp_path_factory) -> Path:
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout (HEAD's tree)")
    return _archive(tmp_path_factory.mktemp("head"))


@pytest.fixture(scope="module")
def head_problems(head) -> list[str]:
    return _problems(head)


def _copy(head: Path, tmp_path: Path, head_problems: list[str]) -> Path:
    """A copy of HEAD's tree to plant a staleness in. Each plant must be found against a clean committed run: when
    HEAD's is stale, test_the_committed_run_at_head_is_what_heads_code_writes fails and says why."""
    import shutil

    if head_problems:
        pytest.skip("HEAD's committed run is stale (see test_the_committed_run_at_head_is_what_heads_code_writes)")
    shutil.copytree(head, tmp_path / "p", symlinks=True)
    return tmp_path / "p"


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_the_committed_run_at_head_is_what_heads_code_writes(head_problems):
    problems = head_problems
    assert not problems, ("dvc.lock at HEAD is stale (make it with `make committed-run` and commit what it changed):\n"
                          + "\n".join(problems))


def test_a_fingerprint_a_hand_refresh_left_is_found(head, head_problems, tmp_path):
    root = _copy(head, tmp_path, head_problems)
    lock = (root / "dvc.lock").read_text()
    rm = sorted(yaml.safe_load((root / "params.yaml").read_text())["scoring"]["rms"])[0]
    path = f"data/rm_inputs/score/{rm}.json"
    old = re.search(rf"- path: {re.escape(path)}\n\s+hash: md5\n\s+md5: ([0-9a-f]{{32}})", lock).group(1)
    (root / "dvc.lock").write_text(lock.replace(f"md5: {old}", "md5: " + "0" * 32))
    got = _problems(root)
    assert len(got) == 1 and got[0].startswith(f"score@{rm}: {path} is not what score_inputs writes"), got


def test_code_refreshed_by_hand_in_the_lock_leaves_every_rms_fingerprint_stale(head, head_problems, tmp_path):
    """What happened before: a code change, then dvc.lock's md5 of that file (and the page's code version) patched
    by hand. Every git-held hash then agrees; the fingerprint files, which record the code, do not."""
    root = _copy(head, tmp_path, head_problems)
    code = root / "tasks" / "stages" / "score.py"
    before = _md5(code)
    code.write_text(code.read_text() + "# a comment\n")
    (root / "dvc.lock").write_text((root / "dvc.lock").read_text().replace(before, _md5(code)))
    got = _problems(root)
    rms = sorted(yaml.safe_load((root / "params.yaml").read_text())["scoring"]["rms"])
    assert {p.split(":")[0] for p in got if "is not what score_inputs writes" in p} == {f"score@{r}" for r in rms}
    assert any(p.startswith("score_inputs: data/rm_inputs/score is not what it writes") for p in got)
    assert not [p for p in got if "tasks/stages/score.py" in p], "the hand refresh made every code hash agree"
    assert any(p.startswith("report/index.html: its code version is") for p in got), "the page was not refreshed"
    page = root / "report" / "index.html"
    sys.path.insert(0, str(root))
    try:
        from tasks.ops.report.provenance import code_version
    finally:
        sys.path.remove(str(root))
    text = re.sub(r'(<code id="code-version">)[0-9a-f]{64}', lambda m: m.group(1) + code_version(
        root, ["flows", "tasks", "prompts", "pyproject.toml"]), page.read_text())
    page.write_text(text)
    lock = (root / "dvc.lock").read_text()
    md5 = re.search(r"- path: report/index.html\n\s+hash: md5\n\s+md5: ([0-9a-f]{32})", lock).group(1)
    (root / "dvc.lock").write_text(lock.replace(md5, _md5(page)))
    again = _problems(root)
    assert not [p for p in again if p.startswith("report/index.html")], again
    assert {p.split(":")[0] for p in again if "is not what score_inputs writes" in p} == {f"score@{r}" for r in rms}


def test_an_edited_metrics_file_and_a_changed_param_are_found(head, head_problems, tmp_path):
    root = _copy(head, tmp_path, head_problems)
    metrics = root / "metrics" / "leaderboard.json"
    metrics.write_text(metrics.read_text().replace("}", ' }', 1))
    params = root / "params.yaml"
    text = params.read_text()
    assert "\n  seed: " in text
    params.write_text(re.sub(r"\n  seed: (\d+)", lambda m: f"\n  seed: {int(m.group(1)) + 1}", text, count=1))
    got = _problems(root)
    assert any(p.startswith("leaderboard: metrics/leaderboard.json is not what dvc.lock records") for p in got), got
    assert any(re.match(r"\w+: param common(\.seed)? in params.yaml is not what dvc.lock records", p) for p in got), got


def test_dvc_md5_is_what_dvc_add_records(tmp_path):
    """tasks/core/dvc_hash.py against DVC itself: a file, and a folder with a subfolder, a non-ASCII name, and the
    bytecode .dvcignore leaves out."""
    from tasks.core import dvc_hash

    patterns = [l.strip() for l in (ROOT / ".dvcignore").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert patterns == [f"{d}/" for d in dvc_hash.IGNORED_DIRS] + [f"*{s}" for s in dvc_hash.IGNORED_SUFFIXES]
    (tmp_path / ".dvcignore").write_text((ROOT / ".dvcignore").read_text())
    folder = tmp_path / "folder"
    (folder / "sub" / "__pycache__").mkdir(parents=True)
    (folder / "a.txt").write_text("a\r\nb\n")   # no dos2unix: DVC 3 hashes the bytes
    (folder / "sub" / "é.py").write_text("x = 1\n")
    (folder / "sub" / "__pycache__" / "é.cpython-311.pyc").write_bytes(b"\0")
    (folder / "stray.pyc").write_bytes(b"\1")
    (tmp_path / "one.bin").write_bytes(bytes(range(256)) * 50)
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    dvc = [str(Path(sys.executable).with_name("dvc"))]
    subprocess.run([*dvc, "init", "--no-scm", "-q"], cwd=tmp_path, env=env, check=True, timeout=120)
    subprocess.run([*dvc, "add", "-q", "folder", "one.bin"], cwd=tmp_path, env=env, check=True, timeout=120)
    for name in ("folder", "one.bin"):
        recorded = yaml.safe_load((tmp_path / f"{name}.dvc").read_text())["outs"][0]["md5"]
        assert dvc_hash.dvc_md5(tmp_path / name) == recorded, name
    assert dvc_hash.dvc_md5(tmp_path / "nothing") == "absent"


# --- make committed-run: a fake project whose `make run` writes run files -------------------------------------

MAKEFILE = """run:
\tmkdir -p metrics plots report && echo '{"acc": 1}' > metrics/new.json && rm -f metrics/old.json
\techo 'stages: {}' > dvc.lock && echo page > report/index.html
"""


def _project(tmp_path: Path, makefile: str = MAKEFILE) -> Path:
    root = tmp_path / "project"
    (root / "metrics").mkdir(parents=True)
    (root / "metrics" / "old.json").write_text("{}\n")
    (root / "metrics" / "same.json").write_text('{"same": true}\n')
    (root / "dvc.lock").write_text("stages: {old: {}}\n")
    (root / "code.py").write_text("x = 1\n")
    (root / "Makefile").write_text(makefile)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    return root


def _state(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def test_make_copies_back_what_the_clones_run_wrote_and_nothing_else(tmp_path, monkeypatch):
    from tasks.ops import committed_run, lock_check

    root = _project(tmp_path)
    checked = []
    monkeypatch.setattr(lock_check, "problems", lambda clone: checked.append(Path(clone)) or [])
    out, err = io.StringIO(), io.StringIO()
    assert committed_run.make(root, out=out, err=err) == 0, err.getvalue()
    state = _state(root)
    assert state["metrics/new.json"] == b'{"acc": 1}\n' and "metrics/old.json" not in state
    assert state["dvc.lock"] == b"stages: {}\n" and state["report/index.html"] == b"page\n"
    assert state["code.py"] == b"x = 1\n" and state["metrics/same.json"] == b'{"same": true}\n'
    assert checked and checked[0] != root, "the check ran on the clone"
    assert "4 file(s) changed: dvc.lock, metrics/new.json, metrics/old.json, report/index.html" in out.getvalue()
    assert not (root / ".git" / "prbench" / "committed-run.json").exists()


@pytest.mark.parametrize("case", ["dirty", "run fails", "other file", "stale"])
def test_make_refuses_and_copies_nothing(tmp_path, monkeypatch, case):
    from tasks.core.errors import ConfigError
    from tasks.ops import committed_run, lock_check

    makefile = {"run fails": "run:\n\texit 3\n", "other file": MAKEFILE + "\techo y > code.py\n"}.get(case, MAKEFILE)
    root = _project(tmp_path, makefile)
    monkeypatch.setattr(lock_check, "problems", lambda clone: ["x: stale"] if case == "stale" else [])
    if case == "dirty":
        (root / "code.py").write_text("x = 2\n")
    before = _state(root)
    err = io.StringIO()
    if case == "dirty":
        with pytest.raises(ConfigError, match=r"uncommitted changes in code.py: commit them first") as exc:
            committed_run.make(root, out=io.StringIO(), err=err)
        assert "\n" not in str(exc.value)
    else:
        assert committed_run.make(root, out=io.StringIO(), err=err) == 1
        said = {"run fails": "`make run` failed", "other file": "the run changed code.py, which the committed run "
                "does not hold", "stale": "prbench committed-run: x: stale"}[case]
        assert said in err.getvalue() and "nothing copied" in err.getvalue()
    assert _state(root) == before


KILL = """import os, signal, sys
from pathlib import Path
from tasks.ops import committed_run
k, calls = int(sys.argv[2]), [0]
def dying(real):
    def write(*args):
        if calls[0] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        calls[0] += 1
        return real(*args)
    return write
committed_run.write_json = dying(committed_run.write_json)     # the journal
committed_run.write_bytes = dying(committed_run.write_bytes)   # each file
changes = committed_run.plan(Path(sys.argv[1]), Path(sys.argv[3]))
committed_run.copy_back(Path(sys.argv[1]), changes)
"""


def test_a_copy_killed_at_any_file_is_finished_by_the_next_run(tmp_path):
    """SIGKILL before the journal, before each file the copy writes, and never: afterwards the checkout is as before
    (no journal) or, once `recover` has run, exactly as after."""
    from tasks.ops import committed_run

    clone = tmp_path / "clone"
    clone.mkdir()
    for name, text in (("dvc.lock", "new\n"), ("metrics/a.json", "1\n"), ("metrics/b.json", "2\n"),
                       ("plots/p.png", "p\n"), ("report/index.html", "page\n")):
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        (clone / name).write_text(text)
    after = None
    for k in range(7):   # the journal, 5 files written (2 deleted), no kill
        root = _project(tmp_path / f"k{k}")
        before = _state(root)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", KILL, str(root), str(k), str(clone)], env=env, timeout=120)
        journal = root / ".git" / "prbench" / "committed-run.json"
        if k == 0:
            assert done.returncode == -signal.SIGKILL and not journal.exists() and _state(root) == before
            continue
        assert done.returncode == (0 if k == 6 else -signal.SIGKILL) and journal.exists() == (k < 6)
        assert committed_run.recover(root, out=io.StringIO()) == (k < 6)
        if after is None:
            after = _state(root)
            assert after["metrics/a.json"] == b"1\n" and "metrics/old.json" not in after
        assert _state(root) == after, k
        assert not journal.exists()


def test_outside_a_git_checkout_it_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    from flows.cli import main

    monkeypatch.chdir(tmp_path)
    for argv in (["committed-run"], ["committed-run", "--recover"]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert err == f"prbench committed-run: {tmp_path} is not a git checkout: run it in the project's clone"
