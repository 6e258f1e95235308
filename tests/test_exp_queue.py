"""Several RMs at once through DVC's own experiment queue: in a temp git + DVC repo holding the
real `score` stage (flows/stage.py score, a foreach over scoring.rms), two experiments each adding an RM
are queued with `dvc exp run --queue -S` and run side by side by `dvc queue start -j 2`. Each
experiment's dvc.lock records its new RM's Parquet with the md5 of a local run of that RM, and the
RM already in the baseline keeps its locked bytes (DVC did not rerun it)."""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from dvc.utils.hydra import apply_overrides

from tasks.core import layout
from tasks.stages import score
from tasks.ops.params import load_params
from tests.conftest import ROOT
from tests.test_scale import inputs, outputs, scale_project
from tests.test_versions import commit, dvc, sh

pytestmark = [pytest.mark.slow, pytest.mark.timeout(480)]

NEW = {"random": {"kind": "random"}, "length-shorter": {"kind": "length-shorter"}}
# every RM but length-longer removed (hydra's ~key), as a user trims the shipped file with -S
REDUCED = [*(f"~scoring.rms.{rm}" for rm in yaml.safe_load((ROOT / "params.yaml").read_text())["scoring"]["rms"]
             if rm != "length-longer"), "rl.rms=[]", "scoring.per_domain_limit=null",
           *(f"~benchmarks.{b}" for b in yaml.safe_load((ROOT / "params.yaml").read_text())["benchmarks"]),
           "scoring.benchmarks=[personalised]", "scoring.strategies=[none,raw_profile,oracle]", "scale.chunk_size=4",
           # what the trimmed file's correlation may still name
           "correlation.primary.rms=[length-longer]", "correlation.benchmarks=[personalised]", "correlation.comparisons=[]"]


def _rms_block(path) -> list[str]:
    """Comments inside scoring.rms (every line indented deeper than its `rms:` key)."""
    lines, out, inside = Path(path).read_text().splitlines(), [], False
    for line in lines:
        if re.match(r"^  rms:", line):
            inside = True
            continue
        if inside and not line.startswith("    ") and line.strip():
            break
        if inside:
            out += [re.sub(r"\s+$", "", c) for c in re.findall(r"#.*", line)]
    return out


def comments(path) -> list[str]:
    return sorted(re.sub(r"\s+$", "", c) for c in re.findall(r"#.*", Path(path).read_text()))


def score_stage(repo) -> dict:
    """The project's own score stage, minus the deps (code, other stages' outputs) this repo has not."""
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["score"]
    spec["do"]["deps"] = [d for d in spec["do"]["deps"] if (repo / d).exists()]
    return {"stages": {"score": spec}}


def md5(path) -> str:
    return hashlib.md5(open(path, "rb").read()).hexdigest()


def locked_md5(lock: dict, rm: str) -> str:
    outs = {o["path"]: o["md5"] for o in lock["stages"][f"score@{rm}"]["outs"]}
    return outs[layout.scores(rm)["scores"]]


def queue(repo, *args: str) -> str:
    env_keep = os.environ.pop("PREFECT_HOME")   # each queued run then keeps its Prefect state in its own copy
    try:
        return dvc(repo, *args)
    finally:
        os.environ["PREFECT_HOME"] = env_keep


def start_workers(repo, log) -> None:
    """`dvc queue start -j 2`, its output to a file: the workers it leaves behind hold its stdout open."""
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_HOME", "PYTHONPATH")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]
    with open(log, "wb") as out:
        subprocess.run([sys.executable, "-m", "dvc", "queue", "start", "-j", "2"], cwd=repo, env=env, stdout=out,
                       stderr=subprocess.STDOUT, timeout=120, check=True)


def test_two_queued_rms_run_at_once_with_local_bytes(tmp_path, monkeypatch, stage_server):
    for key, value in stage_server.client_env().items():   # the stages report there, as `prbench run`'s do,
        monkeypatch.setenv(key, value)                      # instead of each starting a server of its own
    repo = tmp_path / "repo"
    repo.mkdir()
    scale_project(repo, rms={"length-longer": {"kind": "length-longer"}})   # the inputs
    # the shipped params.yaml, reduced the way a user would: through DVC's own rewrite (what -S does)
    shutil.copy(ROOT / "params.yaml", repo / "params.yaml")
    apply_overrides(repo / "params.yaml", REDUCED)
    removed = _rms_block(ROOT / "params.yaml")   # the removed RM entries' own comments go with them
    assert set(comments(ROOT / "params.yaml")) - set(comments(repo / "params.yaml")) <= set(removed), "comments kept"
    params = load_params(repo / "params.yaml", complete=True)
    expected = {}
    for rm, entry in NEW.items():   # the bytes a local run gives, in a scratch copy
        p = {**params, "scoring": {**params["scoring"], "rms": {rm: entry}}}
        score.run(p, rm, inputs(repo), outputs(tmp_path / "local", rm))
        expected[rm] = md5(outputs(tmp_path / "local", rm)["scores"])
    (repo / "dvc.yaml").write_text(yaml.safe_dump(score_stage(repo), sort_keys=False))
    (repo / ".gitignore").write_text(".prbench-cache/\n.prefect/\nruns/\ncache/\n")
    shutil.rmtree(repo / "cache", ignore_errors=True)
    sh(repo, "git", "init", "-q")
    dvc(repo, "init", "-q")
    queue(repo, "repro")
    commit(repo, "baseline: one RM")
    base = yaml.safe_load((repo / "dvc.lock").read_text())

    try:
        for rm, entry in NEW.items():
            flow = "{" + ", ".join(f"{k}: {v}" for k, v in entry.items()) + "}"
            queue(repo, "exp", "run", "--queue", "-n", f"add-{rm}", "-S", f"+scoring.rms.{rm}={flow}")
        start_workers(repo, tmp_path / "queue-start.log")
        end = time.monotonic() + 300
        while time.monotonic() < end:
            status = dvc(repo, "queue", "status")
            if "Queued" not in status and "Running" not in status:
                break
            time.sleep(3)
        assert status.count("Success") == 2, status + "".join(dvc(repo, "queue", "logs", f"add-{rm}") for rm in NEW)
    finally:   # no queue worker outlives the test
        dvc(repo, "queue", "stop", "--kill")
        end = time.monotonic() + 60
        while "0 active, 0 idle" not in dvc(repo, "queue", "status") and time.monotonic() < end:
            time.sleep(2)

    refs = dict(line.split()[::-1] for line in sh(repo, "git", "for-each-ref", "--format=%(objectname) %(refname)",
                                                  "refs/exps").splitlines())
    by_name = {ref.rsplit("/", 1)[1]: sha for ref, sha in refs.items()}
    assert set(by_name) == {f"add-{rm}" for rm in NEW}
    for rm in NEW:
        lock = yaml.safe_load(sh(repo, "git", "show", f"{by_name[f'add-{rm}']}:dvc.lock"))
        assert set(lock["stages"]) == {"score@length-longer", f"score@{rm}"}
        assert locked_md5(lock, rm) == expected[rm], f"{rm}: the queued run's bytes are a local run's"
        assert locked_md5(lock, "length-longer") == locked_md5(base, "length-longer")
        assert lock["stages"]["score@length-longer"] == base["stages"]["score@length-longer"], "not rerun"
    assert layout.scores("random")["scores"] not in sh(repo, "git", "ls-files"), "outputs stay in DVC's cache"


@pytest.mark.parametrize("setting", ["scoring.per_domain_limit=2", "profiles.encoder=embedded:all-MiniLM-L6-v2"])
def test_exp_run_dry_set_param_on_a_clean_clone_keeps_params_yaml(tmp_path, setting):
    """What the README tells a user, `dvc exp run --dry -S key=value`, on an unmodified clean clone: DVC
    rewrites params.yaml into the experiment (the shipped file stays valid, every comment kept) and plans it.
    Targeted at the first stage: DVC 3.67's dry run plans in a fresh temporary copy where no output of an
    earlier stage exists, and fails on the second stage of any DAG (treeverse/dvc#10135)."""
    from tests.test_dvc import _copy_repo

    repo = tmp_path / "clone"
    _copy_repo(repo)
    commit(repo, "clone")
    before = (repo / "params.yaml").read_text()
    out = dvc(repo, "exp", "run", "--dry", "-S", setting, "ingest")
    assert "Running stage 'ingest'" in out, out[-2000:]
    assert (repo / "params.yaml").read_text() == before, "a dry run leaves the workspace's params as they were"
    staged = tmp_path / "params.yaml"   # what the experiment got: DVC's own rewrite of the same file
    staged.write_text(before)
    apply_overrides(staged, [setting])
    assert comments(staged) == comments(repo / "params.yaml")
    assert load_params(staged, complete=True)["scoring" if "scoring" in setting else "profiles"]
