"""Code deps that cannot go stale, seen by DVC itself: in a copy of the repo, the stages are recorded
(`dvc commit`, with placeholder data so no stage has to run), then a function is edited in a module
a stage imports directly or not; `dvc status` reports exactly the stages that run that module (score@<rm>
through its fingerprint file: stale once `score_inputs` has rewritten it, as `dvc repro` runs them)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks.core import stage_table as stages
from tests.test_dvc import _clone_env, _copy_repo

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
RECORDED = ["ingest", "score_inputs", "score@random", "leaderboard", "bon_report"]
REFRESH = """import yaml
from tasks.stages.fingerprint import run
run(yaml.safe_load(open("params.yaml")), {}, {"fingerprints": "data/rm_inputs/score"})"""


def _dvc(repo: Path, *args) -> str:
    out = subprocess.run(["dvc", *args], cwd=repo, env=_clone_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return out.stdout


def _placeholder(path: Path) -> None:
    """A stand-in file (or folder holding one) where a stage's data dep or output would be."""
    if path.exists():
        return
    if path.suffix:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("placeholder\n")
    else:
        path.mkdir(parents=True, exist_ok=True)
        (path / "placeholder").write_text("placeholder\n")


def refresh(repo: Path) -> None:
    """What `score_inputs` writes, written in the copy (score@random's one dep): the fingerprints of now."""
    subprocess.run([sys.executable, "-c", REFRESH], cwd=repo, env=_clone_env(), check=True, timeout=120)


def record(repo: Path, names: list[str]) -> None:
    """Record stages in dvc.lock as if they had run: placeholders for their missing data and outputs."""
    (repo / "dvc.lock").unlink(missing_ok=True)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    for name in names:
        stage, _, rm = name.partition("@")
        s = stages.STAGES[stage]
        for dep in [*s.inputs.values(), *s.deps]:
            path = stages.resolve(dep, params, rm or None)
            if path:
                _placeholder(repo / path)
        for out in s.out(rm or None).values():
            _placeholder(repo / out)
    refresh(repo)
    _dvc(repo, "commit", "-f", *names)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    repo = tmp_path_factory.mktemp("deps") / "repo"
    _copy_repo(repo)
    record(repo, RECORDED)
    assert json.loads(_dvc(repo, "status", "--json", *RECORDED)) == {}
    return repo


def _edit_function(path: Path, name: str) -> str:
    text = path.read_text()
    assert f"def {name}(" in text
    path.write_text(text.replace(f"def {name}(", f"def _unused_{name}():\n    return None\n\n\ndef {name}(", 1))
    return text


SCORE = {"score_inputs", "score@random"}   # score@random through its fingerprint, once score_inputs has run


@pytest.mark.parametrize("module, function, stale", [
    ("tasks/stages/ingest.py", "first_per_domain", {"ingest", *SCORE}),     # score calls it: the old stale dep
    ("tasks/models/rms/base.py", "user_message", {*SCORE, "leaderboard", "bon_report"}),   # through imports
    ("tasks/downstream/bon/select.py", "best_of_k", {"bon_report"}),
])
def test_editing_an_imported_function_makes_its_stages_stale(recorded, module, function, stale):
    path = recorded / module
    text = _edit_function(path, function)
    try:
        before = set(json.loads(_dvc(recorded, "status", "--json", *RECORDED)))
        refresh(recorded)   # score_inputs as `dvc repro` runs it before score@random
        status = json.loads(_dvc(recorded, "status", "--json", *RECORDED))
    finally:
        path.write_text(text)
        refresh(recorded)
    assert before == stale - {"score@random"}, "until its fingerprint is rewritten, score@random's dep holds"
    assert set(status) == stale, status
    for name in stale:
        changed = [e["changed deps"] for e in status[name] if "changed deps" in e]
        dep = "data/rm_inputs/score/random.json" if name == "score@random" else module
        assert any(dep in c or any(dep.startswith(d + "/") for d in c) for c in changed), status[name]


@pytest.mark.parametrize("key, value, stale", [
    ("bon.bootstrap", 17, {"bon_report"}),               # resampling: not the answers, not the scores
    ("ingest.downstream_share", 0.25, {"ingest"}),       # the halves: ingest, then only their readers
    ("scoring.per_domain_limit", 1, SCORE),
    ("leaderboard.bootstrap", 17, {"leaderboard"}),
])
def test_changing_a_param_makes_only_its_readers_stale(recorded, key, value, stale):
    """What tests/test_params_scope.py reads off dvc.yaml, as DVC sees it."""
    path = recorded / "params.yaml"
    text = path.read_text()
    params = yaml.safe_load(text)
    group, _, rest = key.partition(".")
    params[group][rest] = value
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        refresh(recorded)
        status = json.loads(_dvc(recorded, "status", "--json", *RECORDED))
    finally:
        path.write_text(text)
        refresh(recorded)
    assert set(status) == stale, status
