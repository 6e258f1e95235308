"""The pinned numerics (tasks/core/numerics.py): set before torch in a stage process and in a warm fork,
recorded outside DVC's hashes, a CPU below the floor said in one line, and `prbench doctor`."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from tasks.core import numerics
from tests.conftest import ROOT

PROBE = ("import flows, json, os, torch; print(json.dumps({'capability': torch.backends.cpu.get_cpu_capability(), "
         "**{k: os.environ.get(k) for k in ('ATEN_CPU_CAPABILITY', 'ONEDNN_MAX_CPU_ISA', 'OMP_NUM_THREADS')}}))")
ZEN3 = "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 sse4_2 avx avx2 fma f16c\n\n"


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (*numerics.ISA_PINS, numerics.REPLACED_ENV)}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def test_a_stage_process_runs_the_pinned_kernels_whatever_the_environment_says():
    """A user's ATEN_CPU_CAPABILITY=default is replaced (and recorded), torch reports AVX2 on this floor machine."""
    done = subprocess.run([sys.executable, "-c", PROBE + "; print(os.environ['PRBENCH_NUMERICS_REPLACED'])"],
                          cwd=ROOT, env=_env(ATEN_CPU_CAPABILITY="default"), capture_output=True, text=True,
                          timeout=120, check=True)
    got, replaced = json.loads(done.stdout.splitlines()[0]), json.loads(done.stdout.splitlines()[1])
    assert got == {"capability": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                   "OMP_NUM_THREADS": "2"}
    assert replaced == {"ATEN_CPU_CAPABILITY": "default"}


def test_a_cpu_below_the_floor_is_said_in_one_line():
    assert numerics.below_floor(numerics.cpuinfo(ZEN3)["flags"], "x86_64") is None
    old = numerics.cpuinfo(ZEN3.replace(" avx2 fma", ""))
    line = numerics.below_floor(old["flags"], "x86_64", old["model"])
    assert line.count("\n") == 0 and "AMD EPYC 7B13" in line and "AVX2/FMA" in line and "dvc.lock" in line
    assert "x86-64" in numerics.below_floor({"neon"}, "aarch64")


def test_intel_gets_mkls_avx2_branch_and_amd_mkls_own_dispatch():
    assert numerics.wanted("2", "GenuineIntel")["MKL_CBWR"] == "AVX2"
    assert "MKL_CBWR" not in numerics.wanted("2", "AuthenticAMD")
    env = {"MKL_CBWR": "AVX512"}
    numerics.pin(2, env=env, err=io.StringIO())
    assert ("MKL_CBWR" in env) == (numerics.cpuinfo()["vendor"] == "GenuineIntel")


def test_the_stage_record_names_the_machine_and_the_kernels(tmp_path):
    import torch  # noqa: F401 - as in a stage that computed with it

    path = numerics.record(tmp_path, "train_rm")
    rec = json.loads(open(path).read())
    assert rec["torch_capability"] == "AVX2" and rec["pins"]["ATEN_CPU_CAPABILITY"] == "avx2"
    assert rec["cpu"] and "avx2" in rec["flags"] and rec["mkl"] and rec["onednn"].startswith("v")
    assert {"torch", "transformers", "trl", "llama-cpp-python", "numpy"} <= set(rec)


def _row(capability: str, torch: str, sha: str) -> dict:
    return {"capability": capability, "torch": torch, "onednn": "AVX2", "sha256": sha, "seconds": 1.0}


def test_the_doctor_fails_only_on_a_real_problem():
    from tasks.ops.doctor import REFERENCE, problems, table

    ref, versions = REFERENCE["sha256"], REFERENCE["versions"]
    fine = [_row("avx2", "AVX2", ref), _row("avx512", "AVX512", "0" * 64)]
    assert problems(fine, None, versions) == []   # another capability differing is what the pins keep out
    assert "differs" in table(fine).splitlines()[2]
    assert "did not take: torch reports AVX512" in problems([_row("avx2", "AVX512", ref)], None, versions)[0]
    assert "differ from the reference machine's" in problems([_row("avx2", "AVX2", "1" * 64)], None, versions)[0]
    assert problems([_row("avx2", "AVX2", "1" * 64)], None, {**versions, "torch": "9.9"}) == []   # other versions
    assert problems([{"capability": "avx2", "error": "boom"}], None, versions) == ["the pinned training failed: boom"]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_prbench_doctor_trains_under_each_capability_and_agrees_with_the_reference():
    """~25 s of CPU in all (three trainings at once); 96 s wall on this 2-core box at load 10."""
    from tasks.ops.doctor import offered

    done = subprocess.run([sys.executable, "-m", "flows.cli", "doctor"], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=230)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[2:] if line.split() and line.split()[0] in
            ("avx2", "default", "avx512")}
    assert set(rows) == set(offered(numerics.cpuinfo()["flags"]))   # avx512 where the CPU has it
    assert rows["avx2"].split()[2] == "AVX2" and rows["default"].split()[1] == "DEFAULT"
    assert "reference machine (docs/determinism.md): f20ed1ba5082325c: agrees" in done.stdout
    assert done.stdout.rstrip().endswith("the pinned numerics work here")


def test_a_worker_whose_torch_predates_the_pins_refuses_to_compute():
    assert numerics.mismatch("AVX2") is None
    assert "AVX512 kernels, not the pinned AVX2" in numerics.mismatch("AVX512")
