"""One machine stands in for others (docs/determinism.md#one-machine-stands-in-for-others): the statistics
stage (correlation, with the primary test in it) and a training stage (train_rm) run as stage processes,
`python -m flows.stage <name>` as dvc runs them, under this machine's own dispatch and under the kernels
another CPU's libraries would pick, asked for through each library's documented switch. The outputs must
be the same bytes. What the switches asked for is replaced by the pins, and the stage's record says so.

An AVX-512 machine is emulated as an AVX2-only one (AVX2_ONLY; only where this CPU has more than AVX2:
elsewhere the two are the same machine, and the pin is checked to replace none of an AVX2-only CPU's
settings). Every machine also runs OTHER_KERNELS, kernels it has but the pins do not use (numpy's baseline
loops, OpenBLAS's AVX kernels without FMA, ATen's default): without the pins they change the bytes of both
stages on any x86-64 machine, so this test fails wherever the pins are removed."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.core import layout, numerics
from tasks.core.artifacts import file_hash, write_table
from tests.conftest import ROOT
from tests.stage_project import save_params, shipped_params
from tests.test_correlation_stage import score
from tests.test_train_rm import P as TRAIN_P
from tests.test_train_rm import toy_project

# what a CPU without AVX-512 makes each library pick, through the library's own switch
AVX2_ONLY = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Haswell",
             "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2"}
# kernels every x86-64 machine at the floor can run and the pins do not use
OTHER_KERNELS = {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",   # numpy's baseline loops
                 "OPENBLAS_CORETYPE": "Sandybridge",                                   # AVX, no FMA
                 "ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "DNNL_MAX_CPU_ISA": "SSE41",
                 "MKL_CBWR": "AUTO", "MKL_DYNAMIC": "TRUE"}                            # MKL's own ISA dispatch
SWITCHES = sorted({*AVX2_ONLY, *OTHER_KERNELS, *numerics.ISA_PINS, *numerics.THREAD_VARS, *numerics.MKL_PINS,
                   numerics.REPLACED_ENV, numerics.SAID_ENV})
LADDER = [f"ladder-{i:02d}" for i in range(6)]          # the primary test's RMs (correlation.primary.rms)
# 34 more: OpenBLAS's dot kernels differ from 32 elements on (fewer RMs go through the same scalar tail)
OTHERS = [f"rand-{i:02d}" for i in range(34)]
DOMAINS = ["Art", "Food", "Travel"]


@pytest.fixture(autouse=True)
def _report_to_one_server(stage_server, monkeypatch):
    """Every stage process here reports to the session's server, as under `prbench run`."""
    for key, value in stage_server.client_env().items():
        monkeypatch.setenv(key, value)


def _statistics_inputs(root: Path) -> None:
    """Scores and BoN judge scores of 40 RMs with the ties real runs have: 12 questions in 3 domains, so many
    RMs' worst domain is 0 on a resample; two RMs whose BoN picks always agree (equal judge scores)."""
    rng = np.random.default_rng(45)
    questions = [(f"q{i:02d}", DOMAINS[i % 3]) for i in range(12)]
    judge = {rm: np.clip(rng.uniform(0.3, 0.8) + rng.normal(0, 0.15, len(questions)), 0, 1) for rm in LADDER + OTHERS}
    judge["rand-01"] = judge["ladder-02"].copy()
    bon = []
    for rm in LADDER + OTHERS:
        skill, rows = rng.uniform(0.15, 0.6), []
        for i, (q, domain) in enumerate(questions):
            for bench in ("personalised", "generic"):
                outcome = "right" if rng.random() < skill else "tie" if rng.random() < 0.1 else "wrong"
                rows.append({**score(rm, q, outcome, benchmark=bench, strategy="raw_profile"), "domain": domain})
            bon.append({"rm": rm, "question_id": q, "domain": domain, "k": 2, "method": "expected",
                        "judge_score": float(judge[rm][i])})
        write_table(rows, root / layout.scores(rm)["scores"], "scores")
    path = root / layout.BON_REPORT["per_question"]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(bon).cast(pa.schema([
        ("rm", pa.string()), ("question_id", pa.string()), ("domain", pa.string()), ("k", pa.int32()),
        ("method", pa.string()), ("judge_score", pa.float64())])), path)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A project with both stages' inputs; each run gets a copy (the same relative paths, no outputs)."""
    root = tmp_path_factory.mktemp("emulation-template")
    _statistics_inputs(root)
    toy_project(root)
    rms = {**shipped_params()["scoring"]["rms"], **{rm: {"kind": "random"} for rm in OTHERS}}
    params = shipped_params(common={"seed": 2604, "cache_dir": str(root / "cache")},
                            scoring={"rms": {rm: rms[rm] for rm in LADDER + OTHERS}},
                            correlation={"downstream": ["bon"], "bootstrap": 1000, "permutations": 999},
                            train_rm={**TRAIN_P, "epochs": 1})
    params["correlation"]["power"].update(simulations=50, flips=49)
    save_params(root, params)
    return root


def _run(template: Path, where: Path, switches: dict) -> dict:
    """Both stages as stage processes in a copy of the project, the environment holding `switches` and no
    pin of the test process (each stage process pins for itself); {output: sha256}, and the records."""
    shutil.copytree(template, where)
    env = {**{k: v for k, v in os.environ.items() if k not in SWITCHES}, **switches, "PYTHONPATH": str(ROOT)}
    for stage in ("correlation", "train_rm"):
        done = subprocess.run([sys.executable, "-m", "flows.stage", stage], cwd=where, env=env, capture_output=True,
                              text=True, timeout=400)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    outs = [*layout.CORRELATION.values(), layout.TRAIN_RM["metrics"]]
    model = where / layout.TRAIN_RM["model"]
    got = {rel: file_hash(where / rel) for rel in outs}
    got.update({f.relative_to(where).as_posix(): file_hash(f) for f in sorted(model.rglob("*")) if f.is_file()})
    records = {s: json.loads((where / "runs/numerics" / f"{s}.json").read_text()) for s in ("correlation", "train_rm")}
    return {"hashes": got, "records": records}


def _pinned_kernels(record: dict) -> None:
    assert record["numpy_dispatch"] == [numerics.NUMPY_PINNED]
    assert {b["library"]: b["core"] for b in record["openblas"]} == {"numpy": "Haswell", "scipy": "Haswell"}


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_statistics_and_training_give_this_machines_bytes_under_another_cpus_kernels(template, tmp_path):
    """4 stage processes (6 on a CPU above AVX2); 3 min on the 2-core Zen 3 at load 9."""
    seen = dict(AVX2_ONLY)
    numerics.pin(2, env=seen, err=io.StringIO())
    assert numerics.REPLACED_ENV not in seen, "the pins are an AVX2-only CPU's own settings: they replace none"

    mine = _run(template, tmp_path / "default", {})
    assert mine["records"]["train_rm"]["torch_capability"] == "AVX2"
    metrics = json.loads((tmp_path / "default" / layout.CORRELATION["metrics"]).read_text())
    paired = metrics["comparisons"]["personalised vs generic:worst_domain"]["bon"]["pearson"]
    assert metrics["primary"]["p"] is not None and paired["p_value"] is not None, "the primary and paired tests ran"
    assert all(r["replaced"] == {} for r in mine["records"].values())
    flags = numerics.cpuinfo()["flags"]
    emulated = {"other kernels": OTHER_KERNELS, **({"AVX2-only CPU": AVX2_ONLY} if "avx512f" in flags else {})}
    for name, switches in emulated.items():
        got = _run(template, tmp_path / name.replace(" ", "-"), switches)
        differ = sorted(k for k in mine["hashes"] if got["hashes"][k] != mine["hashes"][k])
        assert not differ, f"{name}: these outputs differ from this machine's own: {differ}"
        for stage, record in got["records"].items():
            _pinned_kernels(record)
            replaced = {k: v for k, v in switches.items() if v != {**numerics.ISA_PINS, **numerics.MKL_PINS}[k]}
            assert record["replaced"] == replaced, (name, stage)   # the user sees what the pins overrode
    for stage, record in mine["records"].items():
        _pinned_kernels(record)
