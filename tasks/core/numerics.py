"""The numerics every artifact is computed under, pinned before torch is imported (docs/determinism.md).

torch picks its CPU kernels by the instruction sets the CPU has: ATen's vectorised ops (softmax,
reductions), oneDNN's JIT kernels and MKL's GEMM each dispatch on their own, and float sums taken in
another order round differently. So every process that computes an artifact (stage processes, the warm
server whose forks inherit torch, Dask/Ray workers, `prbench score`, `prbench doctor`'s workers) calls
`pin()` first: the same kernels on any x86-64 CPU with AVX2 and FMA (the floor). Stdlib only: this
runs before anything heavy is imported. The values win over the environment's; what they replaced is
recorded (REPLACED_ENV) and shown in the provenance."""
from __future__ import annotations

import json
import os
import platform
import sys

CAPABILITY = "avx2"                       # ATen's capability dispatch (torch.backends.cpu.get_cpu_capability)
ISA_PINS = {
    "ATEN_CPU_CAPABILITY": CAPABILITY,    # ATen's vectorised kernels: default | avx2 | avx512
    "ONEDNN_MAX_CPU_ISA": "AVX2",         # oneDNN's JIT kernels never above AVX2
    "DNNL_MAX_CPU_ISA": "AVX2",           # the same switch under its older name
}
MKL_BRANCH = "AVX2"                       # MKL_CBWR: Intel CPUs only (intel_only below)
THREAD_VARS = ("PRBENCH_TORCH_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
FLOOR = ("avx2", "fma")                   # /proc/cpuinfo flags the pins need
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
                "the numerics floor (x86-64 with AVX2 and FMA), torch runs other kernels here and trained models "
                "will not match the committed dvc.lock (docs/determinism.md)")
    return None


def wanted(threads: str, vendor: str | None, capability: str = CAPABILITY) -> dict:
    """The pinned variables for this machine. MKL's AVX2 branch exists on Intel CPUs only: on any other CPU
    MKL_CBWR falls back to its AUTO branch (oneMKL guide, CNR), which measurably changes results while
    MKL's own dispatch gives AMD Zen 3 and Zen 5 the same bytes; so it is set on Intel only."""
    isa = "AVX2" if capability == "avx2" else "AVX512_CORE" if capability == "avx512" else "SSE41"
    env = {**ISA_PINS, "ATEN_CPU_CAPABILITY": capability, "ONEDNN_MAX_CPU_ISA": isa, "DNNL_MAX_CPU_ISA": isa}
    if vendor == "GenuineIntel":
        env["MKL_CBWR"] = MKL_BRANCH
    return {**env, **{var: threads for var in THREAD_VARS}}


def pin(threads: int | str, capability: str = CAPABILITY, env=None, err=None) -> dict:
    """Set the pinned variables in `env` (os.environ) before torch is imported; say once, in one line, when
    the CPU is below the floor. An explicit PRBENCH_TORCH_THREADS (a launcher's, e.g. a benchmark's) sets the
    thread count; OMP/MKL threads always follow it. `capability` other than the pin: `prbench doctor` only."""
    env = os.environ if env is None else env
    cpu = cpuinfo()
    line = below_floor(cpu["flags"], model=cpu["model"])
    if line and not env.get(SAID_ENV):
        print(line, file=err or sys.stderr, flush=True)
        env[SAID_ENV] = "1"
    values = wanted(str(env.get("PRBENCH_TORCH_THREADS") or threads), cpu["vendor"], capability)
    replaced = json.loads(env.get(REPLACED_ENV) or "{}")
    if "MKL_CBWR" not in values and "MKL_CBWR" in env:   # not Intel: MKL's own dispatch (see wanted)
        replaced["MKL_CBWR"] = env.pop("MKL_CBWR")
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
            "pins": {k: os.environ.get(k) for k in (*ISA_PINS, "MKL_CBWR", *THREAD_VARS)},
            "replaced": json.loads(os.environ.get(REPLACED_ENV) or "{}")}


def _build(config: str, marker: str) -> str | None:
    """A library version from torch's build summary (torch.__config__.show()), e.g. MKL's and oneDNN's."""
    line = next((l for l in config.splitlines() if marker in l), None)
    return line.split(marker, 1)[1].split("(")[0].split("-Product")[0].strip() if line else None


def libraries() -> dict:
    """The kernels in use: torch's capability under the pins, MKL/oneDNN versions (when torch is loaded:
    importing it only to say so would cost a stage seconds), library versions."""
    from importlib import metadata

    out: dict = {"torch_capability": None}   # None: this process never loaded torch, no kernel of it ran
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        config = torch.__config__.show()
        out = {"torch_capability": torch.backends.cpu.get_cpu_capability(),
               "mkl": _build(config, "Math Kernel Library Version"), "onednn": _build(config, "MKL-DNN"),
               "torch_threads": torch.get_num_threads()}
    for name in ("torch", "transformers", "trl", "llama-cpp-python", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    if "llama_cpp" in sys.modules:   # its compile-time CPU features (no runtime dispatch in this build)
        out["llama_cpp_features"] = sys.modules["llama_cpp"].llama_print_system_info().decode().strip()
    return out


def record(folder, label: str) -> str:
    """runs/numerics/<label>.json: what this process computed its artifact on (outside DVC's hashes)."""
    import time
    from pathlib import Path

    target = Path(folder) / f"{label}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    entry = {"label": label, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **machine(), **libraries()}
    target.write_text(json.dumps(entry, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return str(target)


def mismatch(reported: str | None = None) -> str | None:
    """Why this process must not compute an artifact (None: it may): torch was loaded before the pins (a
    long-lived worker that ran other code first) and dispatches other kernels. `reported`: torch's capability."""
    if reported is None:
        if "torch" not in sys.modules:
            return None   # the pins are in the environment before torch loads
        reported = sys.modules["torch"].backends.cpu.get_cpu_capability()
    cpu = cpuinfo()
    if reported == CAPABILITY.upper() or below_floor(cpu["flags"], model=cpu["model"]):
        return None
    return (f"torch here runs {reported} kernels, not the pinned {CAPABILITY.upper()}: it was loaded before "
            "tasks/core/numerics.py pinned them; restart this worker (docs/determinism.md)")
