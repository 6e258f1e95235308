"""The numerics every artifact is computed under, pinned before torch or numpy is imported (docs/determinism.md).

torch, numpy and OpenBLAS pick their CPU kernels by the instruction sets the CPU has: ATen's vectorised ops
(softmax, reductions), oneDNN's JIT kernels, MKL's GEMM, numpy's SIMD loops (its log, exp, sums) and the
OpenBLAS that numpy and scipy each bundle (dot products, matrix products) each dispatch on their own, and
float sums taken in another order round differently. So every process that computes an artifact (stage
processes, the warm server whose forks inherit torch and numpy, Dask/Ray workers, `prbench score`, `prbench
doctor`'s workers) calls `pin()` first: the same kernels on any x86-64 CPU with AVX2, FMA and the rest of
x86-64-v3 (the floor). Stdlib only: this runs before anything heavy is imported, and the libraries read their switches once, when
they load. The values win over the environment's; what they replaced is recorded (REPLACED_ENV) and shown
in the provenance."""
from __future__ import annotations

import json
import os
import platform
import sys

CAPABILITY = "avx2"                       # ATen's capability dispatch (torch.backends.cpu.get_cpu_capability)
# Each library told the same capability through its own documented switch. numpy: its dispatch targets
# above the capability, disabled (numpy 2.4's names; tests/test_numerics.py checks them against the numpy
# installed, so an upgrade that adds a target fails there, not silently in a run). OpenBLAS (numpy's and
# scipy's each bundle one): the core whose kernels it runs. oneDNN: the highest ISA it may JIT for.
NUMPY_ABOVE = {"default": ("X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR"),
               "avx2": ("X86_V4", "AVX512_ICL", "AVX512_SPR"), "avx512": ()}
NUMPY_PINNED = "X86_V3"                   # the one numpy dispatch target left on at the floor
OPENBLAS_CORE = {"default": "Nehalem", "avx2": "Haswell", "avx512": "SkylakeX"}
# a core forced above the CPU dies of an illegal instruction: set only where /proc/cpuinfo shows these
OPENBLAS_NEEDS = {"Nehalem": ("sse4_2",), "Haswell": ("avx2", "fma"),
                  "SkylakeX": ("avx512f", "avx512bw", "avx512vl", "avx512dq")}
ONEDNN_ISA = {"default": "SSE41", "avx2": "AVX2", "avx512": "AVX512_CORE"}


def library_pins(capability: str = CAPABILITY) -> dict:
    """Every library's switch for one capability: default | avx2 (the pin) | avx512."""
    return {"ATEN_CPU_CAPABILITY": capability,                     # ATen's vectorised kernels
            "ONEDNN_MAX_CPU_ISA": ONEDNN_ISA[capability],          # oneDNN's JIT kernels
            "DNNL_MAX_CPU_ISA": ONEDNN_ISA[capability],            # the same switch under its older name
            "NPY_DISABLE_CPU_FEATURES": " ".join(NUMPY_ABOVE[capability]),   # numpy's SIMD loops
            "OPENBLAS_CORETYPE": OPENBLAS_CORE[capability]}        # numpy's and scipy's BLAS kernels


ISA_PINS = library_pins()
# MKL's conditional numerical reproducibility (CNR), on every x86-64 vendor. MKL's own dispatch runs other GEMM
# code on Intel and on AMD, and its AVX2/AVX512 branches exist on Intel only (elsewhere they fall back to AUTO);
# COMPATIBLE (SSE2 without rcpps/rsqrtps) is one code path for both: doctor's training gave 76c9faeb... on an AMD
# EPYC, a Sapphire Rapids and an Ice Lake Xeon. STRICT applies to the AVX2/AVX512 branches only (oneMKL guide),
# so it is not asked for. MKL_DYNAMIC=FALSE: MKL's documented condition for reproducibility across systems (it
# may otherwise use fewer threads than asked, e.g. one per physical core where cores are hyperthreaded).
MKL_PINS = {"MKL_CBWR": "COMPATIBLE", "MKL_DYNAMIC": "FALSE"}
THREAD_VARS = ("PRBENCH_TORCH_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# /proc/cpuinfo flags the pins need: AVX2 and FMA (torch, OpenBLAS Haswell), and the rest of x86-64-v3, without
# which numpy runs its baseline loops instead of X86_V3 (abm: LZCNT)
FLOOR = ("avx2", "fma", "f16c", "bmi1", "bmi2", "abm", "movbe")
SHOWN_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512dq", "avx512bw", "avx512vl",
               "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile")
REPLACED_ENV = "PRBENCH_NUMERICS_REPLACED"   # JSON {var: the value the pin replaced}, inherited by children
SAID_ENV = "PRBENCH_BELOW_FLOOR_SAID"        # the below-floor line is said once per run, not once per stage


def cpuinfo(text: str | None = None) -> dict:
    """{"model": ..., "vendor": ..., "flags": set} of the first CPU in /proc/cpuinfo (empty where there is none)."""
    if text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            text = ""
    out: dict = {"model": None, "vendor": None, "flags": set()}
    for line in text.splitlines():
        key, _, value = (s.strip() for s in line.partition(":"))
        if key == "model name" and out["model"] is None:
            out["model"] = value
        elif key == "vendor_id" and out["vendor"] is None:
            out["vendor"] = value
        elif key == "flags" and not out["flags"]:
            out["flags"] = set(value.split())
        elif not key and out["flags"]:   # the first processor's block ends
            break
    return out


def below_floor(flags: set, machine: str | None = None, model: str | None = None) -> str | None:
    """One line when this CPU cannot run the pinned kernels (None when it can, or cannot be told)."""
    machine = machine or platform.machine()
    if machine.lower() not in ("x86_64", "amd64"):
        return (f"prbench: this is a {machine} machine: the numeric pins are for x86-64 with AVX2, so trained "
                "models and what follows them will not match the committed dvc.lock (docs/determinism.md)")
    if not flags:
        return None   # no /proc/cpuinfo (not Linux): nothing to tell by
    missing = [f for f in FLOOR if f not in flags]
    if missing:
        return (f"prbench: this CPU ({model or 'unknown model'}) has no {'/'.join(m.upper() for m in missing)}: below "
                "the numerics floor (x86-64-v3: AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE), torch and numpy run other "
                "kernels here and trained models will not match the committed dvc.lock (docs/determinism.md)")
    return None


def wanted(threads: str, capability: str = CAPABILITY, flags: set | None = None, machine: str | None = None) -> dict:
    """The pinned variables for this machine: the same on every x86-64 CPU at the floor, whatever its vendor
    (MKL's COMPATIBLE branch included). numpy's feature names and MKL are x86's, and an OpenBLAS core is forced
    only where the CPU can run it (`flags`)."""
    env = library_pins(capability)
    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        env.pop("NPY_DISABLE_CPU_FEATURES")
        env.pop("OPENBLAS_CORETYPE")
        return {**env, **{var: threads for var in THREAD_VARS}}
    if not flags or not all(f in flags for f in OPENBLAS_NEEDS[env["OPENBLAS_CORETYPE"]]):
        env.pop("OPENBLAS_CORETYPE")   # below the floor (or unknown): OpenBLAS picks what this CPU can run
    return {**env, **MKL_PINS, **{var: threads for var in THREAD_VARS}}


def pin(threads: int | str, capability: str = CAPABILITY, env=None, err=None) -> dict:
    """Set the pinned variables in `env` (os.environ) before torch or numpy is imported; say once, in one line,
    when the CPU is below the floor. An explicit PRBENCH_TORCH_THREADS (a launcher's, e.g. a benchmark's) sets
    the thread count; OMP/MKL/OpenBLAS threads always follow it. `capability` other than the pin: `prbench
    doctor` only (each library then gets that capability's kernels: `library_pins`)."""
    env = os.environ if env is None else env
    cpu = cpuinfo()
    line = below_floor(cpu["flags"], model=cpu["model"])
    if line and not env.get(SAID_ENV):
        print(line, file=err or sys.stderr, flush=True)
        env[SAID_ENV] = "1"
    values = wanted(str(env.get("PRBENCH_TORCH_THREADS") or threads), capability, cpu["flags"])
    replaced = json.loads(env.get(REPLACED_ENV) or "{}")
    for var in MKL_PINS:
        if var not in values and var in env:   # not x86-64: no MKL, a user's value recorded and removed
            replaced[var] = env.pop(var)
    for var, value in values.items():
        if env.get(var) not in (None, value) and var != "PRBENCH_TORCH_THREADS":
            replaced[var] = env[var]
        env[var] = value
    if replaced:
        env[REPLACED_ENV] = json.dumps(replaced, sort_keys=True)
    return values


def machine() -> dict:
    """What this run's numbers were computed on: the CPU, its SIMD flags, the pins in effect, what they replaced."""
    cpu = cpuinfo()
    return {"cpu": cpu["model"], "vendor": cpu["vendor"], "arch": platform.machine(),
            "flags": [f for f in SHOWN_FLAGS if f in cpu["flags"]],
            "below_floor": below_floor(cpu["flags"], model=cpu["model"]),
            "pins": {k: os.environ.get(k) for k in (*ISA_PINS, *MKL_PINS, *THREAD_VARS)},
            "replaced": json.loads(os.environ.get(REPLACED_ENV) or "{}")}


def _build(config: str, marker: str) -> str | None:
    """A library version from torch's build summary (torch.__config__.show()), e.g. MKL's and oneDNN's."""
    line = next((l for l in config.splitlines() if marker in l), None)
    return line.split(marker, 1)[1].split("(")[0].split("-Product")[0].strip() if line else None


def libraries() -> dict:
    """The kernels in use: torch's capability under the pins, MKL/oneDNN versions (when torch is loaded:
    importing it only to say so would cost a stage seconds), numpy's dispatch and each OpenBLAS's core
    (when numpy is loaded), library versions."""
    from importlib import metadata

    out: dict = {"torch_capability": None}   # None: this process never loaded torch, no kernel of it ran
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        config = torch.__config__.show()
        out = {"torch_capability": torch.backends.cpu.get_cpu_capability(),
               "mkl": _build(config, "Math Kernel Library Version"), "onednn": _build(config, "MKL-DNN"),
               "torch_threads": torch.get_num_threads()}
    if "numpy" in sys.modules:
        out.update(numpy_kernels())
    for name in ("torch", "transformers", "trl", "llama-cpp-python", "numpy", "scipy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    if "llama_cpp" in sys.modules:   # its compile-time CPU features (no runtime dispatch in this build)
        out["llama_cpp_features"] = sys.modules["llama_cpp"].llama_print_system_info().decode().strip()
    return out


def numpy_kernels() -> dict:
    """numpy's dispatch targets in use (its SIMD loops: the highest one a function was built for) and every
    OpenBLAS this process loaded (numpy's, and scipy's once scipy.linalg or scipy.stats is imported): whose,
    its version, the core whose kernels it runs and its threads, as threadpoolctl reads them."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        dispatch = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    except ImportError:   # another numpy layout: say so rather than guess
        dispatch = None
    out: dict = {"numpy_dispatch": dispatch, "openblas": []}
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return out
    for lib in threadpool_info():
        if lib.get("internal_api") == "openblas":
            path = lib.get("filepath") or ""
            owner = next((o for o in ("numpy", "scipy") if f"{o}.libs" in path), os.path.basename(path))
            out["openblas"].append({"library": owner, "version": lib.get("version"),
                                    "core": lib.get("architecture"), "threads": lib.get("num_threads")})
    out["openblas"].sort(key=lambda b: b["library"])
    return out


def describe() -> dict:
    """This process's machine and kernels (machine() and libraries()): what results.json and the
    runs/numerics/ records carry, so a user whose bytes differ can see why."""
    return {**machine(), **libraries()}


def record(folder, label: str) -> str:
    """runs/numerics/<label>.json: what this process computed its artifact on (outside DVC's hashes)."""
    import time
    from pathlib import Path

    target = Path(folder) / f"{label}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    entry = {"label": label, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **describe()}
    target.write_text(json.dumps(entry, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return str(target)


def mismatch(reported: str | None = None) -> str | None:
    """Why this process must not compute an artifact (None: it may): torch or numpy was loaded before the
    pins (a long-lived worker that ran other code first) and dispatches other kernels. `reported`: torch's
    capability (else read from the torch loaded here, and numpy's dispatch and OpenBLAS's core checked)."""
    cpu = cpuinfo()
    if below_floor(cpu["flags"], model=cpu["model"]):
        return None
    if reported is None:
        if "numpy" in sys.modules:
            kernels, core = numpy_kernels(), OPENBLAS_CORE[CAPABILITY]
            wrong = ([f"numpy {'/'.join(kernels['numpy_dispatch']) or 'baseline'} loops"]
                     if kernels["numpy_dispatch"] not in (None, [NUMPY_PINNED]) else [])
            wrong += [f"{b['library']}'s OpenBLAS {b['core']} kernels" for b in kernels["openblas"] if b["core"] != core]
            if wrong:
                return (f"{' and '.join(wrong)} here, not the pinned {NUMPY_PINNED} and {core}: numpy was loaded before "
                        "tasks/core/numerics.py pinned them; restart this worker (docs/determinism.md)")
        if "torch" not in sys.modules:
            return None   # the pins are in the environment before torch loads
        reported = sys.modules["torch"].backends.cpu.get_cpu_capability()
    if reported == CAPABILITY.upper():
        return None
    return (f"torch here runs {reported} kernels, not the pinned {CAPABILITY.upper()}: it was loaded before "
            "tasks/core/numerics.py pinned them; restart this worker (docs/determinism.md)")
