"""`dvc repro` end to end in a temp copy of the repo: outputs, a no-op second run, and
byte-identical Parquet after deleting the outputs. Also: dvc.yaml agrees with tasks/layout.py."""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tasks import layout
from tasks.artifacts import file_hash
from tests.conftest import ROOT

STAGES = {"ingest": layout.INGEST, "profiles": layout.PROFILES, "rubrics": layout.RUBRICS, "pairs": layout.PAIRS,
          "human_eval": layout.HUMAN_EVAL, "generic_pairs": layout.GENERIC_PAIRS, "train_rm": layout.TRAIN_RM,
          "leaderboard": layout.LEADERBOARD, "correlation": layout.CORRELATION, "bon_sample": layout.BON_SAMPLE,
          "bon_judge": layout.BON_JUDGE, "bon_report": layout.BON_REPORT}
PER_RM = {"score": layout.scores, "bon_score": layout.bon_scores}


def _dvc_stages():
    return yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]


def _paths(entries):
    return {e if isinstance(e, str) else next(iter(e)) for e in entries or []}


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_dvc_yaml_declares_layout_and_code(stage):
    spec = _dvc_stages()[stage]
    declared = _paths(spec.get("outs")) | _paths(spec.get("metrics")) | _paths(spec.get("plots"))
    assert declared == set(STAGES[stage].values())
    assert set(layout.SHARED_CODE) | set(layout.CODE[stage]) <= _paths(spec["deps"])
    assert spec["cmd"] == f"python -m flows.{stage}"


@pytest.mark.parametrize("stage", sorted(PER_RM))
def test_per_rm_stages_fan_out_over_params(stage):
    spec = _dvc_stages()[stage]
    assert spec["foreach"] == "${scoring.rms}"
    do = spec["do"]
    declared = _paths(do.get("outs")) | _paths(do.get("metrics")) | _paths(do.get("plots"))
    assert declared == set(PER_RM[stage]("${key}").values())
    assert set(layout.SHARED_CODE) | set(layout.CODE[stage]) <= _paths(do["deps"])
    assert "scoring.rms.${key}" in do["params"], "an RM's stage depends on its own entry only"


def _copy_repo(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    subprocess.run(["git", "init", "-q"], cwd=dst, check=True)


KEY = "test-key-4b1d" + "-never-in-artifacts"   # built at run time: the copied test file must not hold it


def _dvc(cwd, *args, env=None):
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"], **(env or {})}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["dvc", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
def test_dvc_repro_is_reproducible(tmp_path):
    repo = tmp_path / "repo"
    _copy_repo(repo)
    locked = yaml.safe_load((repo / "dvc.lock").read_text()) if (repo / "dvc.lock").exists() else None
    params = yaml.safe_load((repo / "params.yaml").read_text())
    # the real SmolLM2 on a few questions keeps this short (every reference pair is still selected)
    params["rubrics"]["questions_limit"] = 2
    params["pairs"]["generate_per_domain"] = 1
    params["generic_pairs"]["per_domain_limit"] = 1
    params["scoring"]["per_domain_limit"] = 1
    params["bon"].update(questions_limit=1, n=2, max_k=2)
    params["human_eval"]["proxy_limit"] = 1
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _dvc(repo, "repro", env={"GEMINI_API_KEY": KEY})
    parquet = sorted(p for spec in STAGES.values() for p in spec.values() if p.endswith(".parquet"))
    first = {p: file_hash(repo / p) for p in parquet}
    assert (repo / "metrics/ingest.json").exists() and (repo / "plots/ingest_profile_sizes.png").exists()

    leaks = [str(p) for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts and KEY.encode() in p.read_bytes()]
    assert leaks == [], "a key in the environment never reaches artifacts, logs, params or dvc.lock"

    start = time.monotonic()
    out = _dvc(repo, "repro")
    assert time.monotonic() - start < 10, "a no-op repro must be quick"
    assert "Data and pipelines are up to date." in out

    for p in parquet:
        (repo / p).unlink()
    _dvc(repo, "repro")
    assert {p: file_hash(repo / p) for p in parquet} == first, "reruns give the same bytes"

    params = yaml.safe_load((repo / "params.yaml").read_text())   # a new RM: only its stages (+ reports) rerun
    params["scoring"]["rms"]["length-longer-2"] = {"kind": "length-longer"}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    status = _dvc(repo, "status", "--json")
    import json

    changed = set(json.loads(status))
    assert {"score@length-longer-2", "bon_score@length-longer-2"} <= changed
    assert changed <= {"score@length-longer-2", "bon_score@length-longer-2", "leaderboard", "bon_report",
                       "correlation"}, changed

    if locked:   # the committed dvc.lock was made from the same code and data: same Parquet bytes
        from hashlib import md5

        for name, stage in locked["stages"].items():
            for out in stage.get("outs", []) if name in ("ingest", "profiles") else []:
                if out["path"].endswith(".parquet"):
                    assert md5((repo / out["path"]).read_bytes()).hexdigest() == out["md5"], out["path"]


def test_paper_params_differ_only_in_values():
    def keys(d, prefix=""):
        return {f"{prefix}{k}" for k in d} | {x for k, v in d.items() if isinstance(v, dict) and k not in ("llms", "rms")
                                               for x in keys(v, f"{prefix}{k}.")}
    default = yaml.safe_load((ROOT / "params.yaml").read_text())
    paper = yaml.safe_load((ROOT / "params-paper.yaml").read_text())
    assert keys(default) - {"pairs.judge.encoder", "pairs.judge.partly", "pairs.judge.well", "bon.judge.encoder",
                            "bon.judge.partly", "bon.judge.well"} <= keys(paper)
