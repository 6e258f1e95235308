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

PROBE = ("import flows, json, os, torch, scipy.stats; from tasks.core import numerics; "
         "print(json.dumps({'capability': torch.backends.cpu.get_cpu_capability(), **numerics.numpy_kernels(), "
         "**{k: os.environ.get(k) for k in ('ATEN_CPU_CAPABILITY', 'ONEDNN_MAX_CPU_ISA', 'OMP_NUM_THREADS', "
         "'NPY_DISABLE_CPU_FEATURES', 'OPENBLAS_CORETYPE')}}))")
ZEN3 = ("vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n"
        "flags\t\t: fpu sse2 sse4_2 avx avx2 fma f16c bmi1 bmi2 abm movbe\n\n")
ABOVE_AVX2 = ("X86_V4", "AVX512_ICL", "AVX512_SPR")


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (*numerics.ISA_PINS, numerics.REPLACED_ENV)}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def test_a_stage_process_runs_the_pinned_kernels_whatever_the_environment_says():
    """A user's ATEN_CPU_CAPABILITY=default, numpy baseline and OpenBLAS Nehalem are replaced (and recorded):
    torch reports AVX2, numpy runs its X86_V3 loops and both OpenBLAS builds (numpy's, scipy's) Haswell's."""
    user = {"ATEN_CPU_CAPABILITY": "default", "NPY_DISABLE_CPU_FEATURES": "X86_V3", "OPENBLAS_CORETYPE": "Nehalem"}
    done = subprocess.run([sys.executable, "-c", PROBE + "; print(os.environ['PRBENCH_NUMERICS_REPLACED'])"],
                          cwd=ROOT, env=_env(**user), capture_output=True, text=True, timeout=120, check=True)
    got, replaced = json.loads(done.stdout.splitlines()[0]), json.loads(done.stdout.splitlines()[1])
    cores = {b["library"]: b["core"] for b in got.pop("openblas")}
    assert got == {"capability": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                   "OMP_NUM_THREADS": "2", "numpy_dispatch": ["X86_V3"],
                   "NPY_DISABLE_CPU_FEATURES": " ".join(ABOVE_AVX2), "OPENBLAS_CORETYPE": "Haswell"}
    assert cores == {"numpy": "Haswell", "scipy": "Haswell"}
    assert replaced == user


def test_the_numpy_pin_names_every_dispatch_target_above_avx2_of_the_installed_numpy():
    """numpy warns (and disables nothing) for a name its build does not know, and a new target above X86_V3
    would run unpinned: an upgrade that changes the targets fails here."""
    from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__

    assert set(__cpu_dispatch__) == {numerics.NUMPY_PINNED, *ABOVE_AVX2} == {*numerics.NUMPY_ABOVE["default"]}
    assert numerics.NUMPY_ABOVE["avx2"] == ABOVE_AVX2 and __cpu_baseline__ == ["X86_V2"]


def test_openblas_is_never_forced_onto_a_core_the_cpu_cannot_run():
    """A forced core above the CPU dies of an illegal instruction (SkylakeX on this AVX2-only Zen 3: SIGILL)."""
    zen3 = numerics.cpuinfo(ZEN3)["flags"]
    assert numerics.wanted("2", flags=zen3, machine="x86_64")["OPENBLAS_CORETYPE"] == "Haswell"
    assert "OPENBLAS_CORETYPE" not in numerics.wanted("2", "avx512", zen3, "x86_64")
    assert "OPENBLAS_CORETYPE" not in numerics.wanted("2", flags=zen3 - {"fma"}, machine="x86_64")
    assert "OPENBLAS_CORETYPE" not in numerics.wanted("2", flags=set(), machine="x86_64")
    arm = numerics.wanted("2", flags={"asimd"}, machine="aarch64")
    assert "NPY_DISABLE_CPU_FEATURES" not in arm and "OPENBLAS_CORETYPE" not in arm


def test_a_worker_whose_numpy_predates_the_pins_refuses_to_compute():
    """numpy and OpenBLAS read their switches when they load: pinning afterwards changes nothing."""
    code = ("import numpy, scipy.linalg; from tasks.core import numerics; numerics.pin(2); "
            "print(numerics.mismatch())")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=True, env=_env(NPY_DISABLE_CPU_FEATURES="X86_V3", OPENBLAS_CORETYPE="Nehalem"))
    said = done.stdout.strip()   # which numpy loops remain depends on the CPU: baseline on AVX2, X86_V4 on AVX-512
    assert said.startswith("numpy ") and said.endswith(
        " loops and numpy's OpenBLAS Nehalem kernels and scipy's OpenBLAS Nehalem kernels here, not the "
        "pinned X86_V3 and Haswell: numpy was loaded before tasks/core/numerics.py pinned them; restart this worker "
        "(docs/determinism.md)"), said
    assert "X86_V3 loops" not in said.split(" and ")[0], "the pinned loops are not what it runs"
    assert numerics.mismatch() is None   # this process: pinned by conftest before numpy loaded


def test_a_cpu_below_the_floor_is_said_in_one_line():
    assert numerics.below_floor(numerics.cpuinfo(ZEN3)["flags"], "x86_64") is None
    old = numerics.cpuinfo(ZEN3.replace(" avx2 fma", ""))
    line = numerics.below_floor(old["flags"], "x86_64", old["model"])
    assert line.count("\n") == 0 and "AMD EPYC 7B13" in line and "AVX2/FMA" in line and "dvc.lock" in line
    no_movbe = numerics.cpuinfo(ZEN3.replace(" movbe", ""))   # numpy would run its baseline loops, not X86_V3
    assert "has no MOVBE" in numerics.below_floor(no_movbe["flags"], "x86_64", no_movbe["model"])
    assert "x86-64" in numerics.below_floor({"neon"}, "aarch64")


def test_every_x86_64_cpu_gets_mkls_compatible_branch_whatever_its_vendor():
    """MKL's own dispatch (and its AVX2 branch, Intel-only) runs other GEMM code on Intel and AMD; COMPATIBLE is one
    code path for both. A user's MKL_CBWR is replaced and recorded; where there is no x86 MKL nothing is set."""
    zen3, intel = numerics.cpuinfo(ZEN3)["flags"], numerics.cpuinfo()["flags"]
    for flags in (zen3, intel, set()):
        got = numerics.wanted("2", flags=flags, machine="x86_64")
        assert (got["MKL_CBWR"], got["MKL_DYNAMIC"]) == ("COMPATIBLE", "FALSE")
    assert not {"MKL_CBWR", "MKL_DYNAMIC"} & set(numerics.wanted("2", flags={"asimd"}, machine="aarch64"))
    env = {"MKL_CBWR": "AVX512", "MKL_DYNAMIC": "TRUE"}
    numerics.pin(2, env=env, err=io.StringIO())
    assert (env["MKL_CBWR"], env["MKL_DYNAMIC"]) == ("COMPATIBLE", "FALSE")
    assert json.loads(env[numerics.REPLACED_ENV]) == {"MKL_CBWR": "AVX512", "MKL_DYNAMIC": "TRUE"}


def test_off_x86_a_users_mkl_setting_is_removed_and_recorded(monkeypatch):
    """No x86 MKL to pin: a user's MKL_CBWR would still steer an MKL that loads, so it goes, and the record says so."""
    monkeypatch.setattr(numerics.platform, "machine", lambda: "aarch64")
    env = {"MKL_CBWR": "AUTO", "MKL_DYNAMIC": "TRUE"}
    numerics.pin(2, env=env, err=io.StringIO())
    assert "MKL_CBWR" not in env and "MKL_DYNAMIC" not in env
    assert json.loads(env[numerics.REPLACED_ENV]) == {"MKL_CBWR": "AUTO", "MKL_DYNAMIC": "TRUE"}


def test_an_explicit_thread_count_sets_every_librarys_threads_and_is_no_replacement():
    env = {"PRBENCH_TORCH_THREADS": "3", "OMP_NUM_THREADS": "8"}
    values = numerics.pin(2, env=env, err=io.StringIO())
    assert {var: env[var] for var in numerics.THREAD_VARS} == {var: "3" for var in numerics.THREAD_VARS} == {
        var: values[var] for var in numerics.THREAD_VARS}
    assert json.loads(env[numerics.REPLACED_ENV]) == {"OMP_NUM_THREADS": "8"}   # the launcher's own count is no user's


def test_the_below_floor_line_is_said_once_per_run_not_once_per_stage(monkeypatch):
    no_movbe = numerics.cpuinfo(ZEN3.replace(" movbe", ""))
    monkeypatch.setattr(numerics, "cpuinfo", lambda text=None: no_movbe)
    env, err = {}, io.StringIO()
    for _stage in range(3):   # the stages of one run share the environment the first one set
        numerics.pin(2, env=env, err=err)
    assert len(err.getvalue().splitlines()) == 1 and "has no MOVBE" in err.getvalue()
    assert env[numerics.SAID_ENV] == "1"


def test_the_stage_record_names_the_machine_and_the_kernels(tmp_path):
    import scipy.stats  # noqa: F401 - as in a stage that computed with it (its OpenBLAS loads with scipy.linalg)
    import torch  # noqa: F401

    path = numerics.record(tmp_path, "train_rm")
    rec = json.loads(open(path).read())
    assert rec["torch_capability"] == "AVX2" and rec["pins"]["ATEN_CPU_CAPABILITY"] == "avx2"
    assert rec["cpu"] and "avx2" in rec["flags"] and rec["mkl"] and rec["onednn"].startswith("v")
    assert {"torch", "transformers", "trl", "llama-cpp-python", "numpy", "scipy"} <= set(rec)
    assert rec["numpy_dispatch"] == ["X86_V3"] and rec["pins"]["OPENBLAS_CORETYPE"] == "Haswell"
    assert [(b["library"], b["core"], b["threads"]) for b in rec["openblas"]] == [("numpy", "Haswell", 2),
                                                                               ("scipy", "Haswell", 2)]
    assert all(b["version"] for b in rec["openblas"])


def _row(capability: str, torch: str, sha: str, statistics: str | None = None, numpy: str = "X86_V3",
         core: str = "Haswell") -> dict:
    from tasks.ops.doctor import REFERENCE

    return {"capability": capability, "torch": torch, "onednn": "AVX2", "numpy": numpy,
            "openblas": {"numpy": core, "scipy": core}, "sha256": sha,
            "statistics": statistics or REFERENCE["statistics_sha256"], "seconds": 1.0}


def test_the_doctor_fails_only_on_a_real_problem():
    from tasks.ops.doctor import REFERENCE, problems, table

    ref, versions = REFERENCE["sha256"], {**REFERENCE["versions"], **REFERENCE["statistics_versions"]}
    fine = [_row("avx2", "AVX2", ref), _row("avx512", "AVX512", "0" * 64, "1" * 64, "X86_V4", "SkylakeX")]
    assert problems(fine, None, versions) == []   # another capability differing is what the pins keep out
    assert table(fine).splitlines()[2].endswith("weights and statistics differ")
    assert "X86_V4" in table(fine).splitlines()[2] and "SkylakeX/SkylakeX" in table(fine).splitlines()[2]
    assert "did not take: torch reports AVX512" in problems([_row("avx2", "AVX512", ref)], None, versions)[0]
    assert "differ from the reference machine's" in problems([_row("avx2", "AVX2", "1" * 64)], None, versions)[0]
    assert problems([_row("avx2", "AVX2", "1" * 64)], None, {**versions, "torch": "9.9"}) == []   # other versions
    assert problems([{"capability": "avx2", "error": "boom"}], None, versions) == ["the pinned training failed: boom"]
    assert problems([_row("avx2", "AVX2", ref, numpy="X86_V4")], None, versions) == [
        "the pins did not take: numpy runs X86_V4 loops, not X86_V3 (NPY_DISABLE_CPU_FEATURES; docs/determinism.md)"]
    said = problems([_row("avx2", "AVX2", ref, core="SkylakeX")], None, versions)
    assert said[0].startswith("the pins did not take: numpy's OpenBLAS runs SkylakeX kernels, not Haswell") and len(said) == 2
    stats = problems([_row("avx2", "AVX2", ref, "2" * 64)], None, versions)
    assert stats == [f"the pinned statistics differ from the reference machine's ({'2' * 16} vs "
                     f"{REFERENCE['statistics_sha256'][:16]}) with the same library versions: this machine will not "
                     "reproduce the committed dvc.lock; please report its CPU and this table"]
    assert problems([_row("avx2", "AVX2", ref, "2" * 64)], None, {**versions, "scipy": "9.9"}) == []


def test_the_doctor_tries_what_the_cpu_offers_the_pinned_capability_first():
    from tasks.ops.doctor import offered

    every = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"}
    assert offered(set()) == ["avx2", "default", "avx512"], "flags unknown: every capability"
    assert offered(every) == ["avx2", "default", "avx512"]
    assert offered({"avx2", "fma"}) == ["avx2", "default"]
    assert offered({"avx2"}) == ["default"], "avx2 needs fma too"
    assert offered(every - {"avx512dq"}) == ["avx2", "default"], "avx512 needs all four"


def test_prbench_doctor_prints_the_table_the_reference_verdicts_and_each_problem_and_exits_on_one(monkeypatch):
    from tasks.ops import doctor
    from tasks.ops.doctor import REFERENCE

    ref, stats = REFERENCE["sha256"], REFERENCE["statistics_sha256"]
    versions = {**REFERENCE["versions"], **REFERENCE["statistics_versions"], "other": "9"}
    monkeypatch.setattr(doctor.numerics, "cpuinfo", lambda: {"flags": {"avx2", "fma"}, "model": "Test CPU", "vendor": "Test"})
    monkeypatch.setattr(doctor.numerics, "below_floor", lambda flags, model=None: None)
    monkeypatch.setattr(doctor.numerics, "libraries", lambda: versions)
    asked, rows = [], []
    monkeypatch.setattr(doctor, "in_processes", lambda caps, timeout: asked.append((caps, timeout)) or rows)

    def run() -> tuple[int, list[str]]:
        out = io.StringIO()
        code = doctor.main(timeout=12, out=out)
        return code, out.getvalue().splitlines()

    rows[:] = [_row("avx2", "AVX2", ref), _row("default", "DEFAULT", "0" * 64, "1" * 64, "X86_V2", "Prescott")]
    code, lines = run()
    assert code == 0 and asked == [(["avx2", "default"], 12)]
    assert lines[0].startswith("prbench doctor: Test CPU (") and lines[0].endswith(
        ", ".join(f"{k} {versions[k]}" for k in ("torch", "transformers", "trl", "numpy", "scipy")))
    assert lines[1:4] == doctor.table(rows).splitlines()
    assert lines[4:] == [f"reference machine (docs/determinism.md), weights: {ref[:16]}: agrees",
                         f"reference machine (docs/determinism.md), statistics: {stats[:16]}: agrees",
                         "prbench doctor: the pinned numerics work here"]

    rows[0] = _row("avx2", "AVX2", "2" * 64)
    code, lines = run()
    assert code == 1 and lines[-3] == f"reference machine (docs/determinism.md), weights: {ref[:16]}: differs"
    assert lines[-1].startswith("problem: the pinned weights differ from the reference machine's (2222222222222222 vs")

    rows[:] = [{"capability": "avx2", "error": "boom"}]
    code, lines = run()
    assert code == 1 and lines[-1] == "problem: the pinned training failed: boom"
    assert not any(line.startswith("reference machine") for line in lines), "no hash to compare"


def test_a_cpu_below_the_floor_is_said_first_and_its_other_kernels_are_not_problems():
    """Below the floor numpy and OpenBLAS run what the CPU has: the floor's line says it; the torch pin and the
    hashes are still checked."""
    from tasks.ops.doctor import REFERENCE, problems

    ref, versions = REFERENCE["sha256"], {**REFERENCE["versions"], **REFERENCE["statistics_versions"]}
    floor = "this CPU lacks AVX2: it cannot reproduce the committed dvc.lock"
    slow = _row("avx2", "AVX2", ref, numpy="X86_V2", core="Prescott")
    assert problems([slow], floor, versions) == [floor]
    assert problems([_row("avx2", "DEFAULT", ref, numpy="X86_V2")], floor, versions)[1].startswith(
        "the pins did not take: torch reports DEFAULT")
    assert problems([{**slow, "sha256": "3" * 64}], floor, versions)[1].startswith("the pinned weights differ")
    assert len(problems([slow], None, versions)) == 3, "above the floor: numpy's loops and both OpenBLAS are problems"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_prbench_doctor_trains_under_each_capability_and_agrees_with_the_reference():
    """~25 s of CPU in all (three trainings at once); 96 s wall on this 2-core box at load 10. The same pinned weights
    and statistics on Intel and AMD (docs/determinism.md, Golden values)."""
    from tasks.ops.doctor import offered

    done = subprocess.run([sys.executable, "-m", "flows.cli", "doctor"], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=230)
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[2:] if line.split() and line.split()[0] in
            ("avx2", "default", "avx512")}
    assert set(rows) == set(offered(numerics.cpuinfo()["flags"])), done.stdout + done.stderr   # avx512 where the CPU has it
    assert rows["avx2"].split()[2:6] == ["AVX2", "AVX2", "X86_V3", "Haswell/Haswell"]
    assert rows["default"].split()[1:5] == ["DEFAULT", "SSE41", "baseline", "Nehalem/Nehalem"]
    assert rows["default"].endswith("weights and statistics differ"), "the other kernels change both"
    assert "reference machine (docs/determinism.md), statistics: 80324adcaaec7294: agrees" in done.stdout
    # one reference for every vendor: MKL's COMPATIBLE branch gave these weights on AMD and Intel alike
    assert done.returncode == 0, done.stdout + done.stderr
    assert rows["avx2"].split()[6] == "76c9faeb9f577df3", done.stdout
    assert "reference machine (docs/determinism.md), weights: 76c9faeb9f577df3: agrees" in done.stdout
    assert done.stdout.rstrip().endswith("the pinned numerics work here")


def test_a_worker_whose_torch_predates_the_pins_refuses_to_compute():
    assert numerics.mismatch("AVX2") is None
    assert "AVX512 kernels, not the pinned AVX2" in numerics.mismatch("AVX512")
