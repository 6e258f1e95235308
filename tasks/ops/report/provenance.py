"""Where a run's numbers came from: the code version, params against the shipped settings, each RM's
identity, the dataset's content hash and the package versions. Nothing here depends on the time,
the checkout's path or git: the page is a DVC output hashed in dvc.lock, so it must come out the
same bytes in any fresh clone."""
from __future__ import annotations

import hashlib
import platform
from importlib import metadata
from pathlib import Path

import yaml

from tasks.core.artifacts import file_hash

# the packages whose versions change numbers (models, metrics, orchestration), in display order
PACKAGES = ["torch", "transformers", "trl", "sentence-transformers", "llama-cpp-python", "numpy", "scipy",
            "scikit-learn", "pandas", "pyarrow", "ranked-overlap", "krippendorff", "bm25s", "prefect", "dvc",
            "Jinja2"]
SKIP = {"__pycache__"}


def code_version(root: str | Path, paths: list[str]) -> str:
    """sha256 over every file under `paths` (relative name + content), caches excluded.
    A content hash rather than the git commit: the commit cannot be on a page that is itself
    committed (through dvc.lock) without changing with every commit, and a fresh clone would then
    disagree with the committed lock."""
    root, h = Path(root), hashlib.sha256()
    files = []
    for rel in paths:
        p = root / rel
        files += [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()] if p.is_dir() else []
    for f in sorted(files, key=lambda f: f.relative_to(root).as_posix()):
        parts = f.relative_to(root).parts
        if SKIP.intersection(parts) or f.suffix == ".pyc":
            continue
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + file_hash(f).encode() + b"\0")
    return h.hexdigest()


def flatten(d: dict, prefix: str = "") -> dict:
    """{"a.b.c": leaf}; lists are leaves (shown as written)."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(flatten(v, key + ".") if isinstance(v, dict) and v else {key: v})
    return out


def params_differences(params: dict, references: dict[str, dict]) -> list[dict]:
    """One row per key where this run differs from at least one reference setting:
    {"key", "run", <reference label>: value or MISSING}."""
    mine = flatten(params)
    refs = {label: flatten(p) for label, p in references.items()}
    keys = sorted(set(mine).union(*refs.values()))
    rows = []
    for key in keys:
        values = {label: ref.get(key, MISSING) for label, ref in refs.items()}
        run = mine.get(key, MISSING)
        if any(v != run for v in values.values()):
            rows.append({"key": key, "run": run, "references": values})
    return rows


class _Missing:
    def __repr__(self):
        return "(absent)"


MISSING = _Missing()


def load_references(files: dict[str, str]) -> dict[str, dict]:
    return {label: yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {} for label, path in files.items()}


def rm_rows(rms: dict, llms: dict, score_metrics: dict[str, dict], train_rm: dict | None) -> list[dict]:
    """Each RM: its params entry's model id and revision, and the identity its scores were made with."""
    rows = []
    for name in sorted(rms):
        entry = rms[name] or {}
        m = score_metrics.get(name) or {}
        model = entry.get("model") or entry.get("encoder")
        if entry.get("llm"):   # an LLM judge: the named LLM's model
            llm = llms.get(entry["llm"]) or {}
            model = f"{entry['llm']}: {llm.get('backend')} {llm.get('model')}"
            entry = {**entry, "revision": entry.get("revision") or llm.get("revision")}
        if entry.get("kind") == "bradley-terry" and train_rm:
            model = f"trained here on {train_rm.get('backbone')}"
        if entry.get("kind") == "dpo":   # an implicit reward: the policy and the reference it is measured against
            model = f"{model} vs reference {entry['ref_model']}" if entry.get("ref_model") else f"{model} (reference-free)"
        rows.append({"rm": name, "kind": entry.get("kind"), "model": model, "revision": entry.get("revision"),
                     "identity": m.get("identity"), "scored_with": scored_with(m.get("numerics")),
                     "weights": (train_rm or {}).get("model_hash") if entry.get("kind") == "bradley-terry" else None})
    return rows


def scored_with(numerics: dict | None) -> str | None:
    """What an RM's scores depend on besides inputs and weights, in one line: 'bfloat16 · cuda · sdpa attention ·
    batch-invariant' (None: no model ran here, or scored before this was recorded)."""
    if not numerics:
        return None
    mode = "batch-invariant" if numerics.get("batch_invariant") else "length-sorted batches"
    return f"{numerics.get('dtype')} · {numerics.get('device')} · {numerics.get('attn_implementation')} attention · {mode}"


def dataset_hash(files: dict[str, str]) -> dict:
    """sha256 of each ingested table and one over all of them (names + hashes)."""
    each = {name: file_hash(path) for name, path in sorted(files.items())}
    combined = hashlib.sha256("".join(f"{n}\0{h}\0" for n, h in each.items()).encode()).hexdigest()
    return {"combined": combined, "files": each}


def package_versions() -> list[dict]:
    rows = [{"package": "python", "version": platform.python_version()}]
    for name in PACKAGES:
        try:
            rows.append({"package": name, "version": metadata.version(name)})
        except metadata.PackageNotFoundError:
            rows.append({"package": name, "version": None})
    return rows


def revisions(ingest: dict | None, benches: dict) -> list[dict]:
    """The hub dataset commits the run read (ingest's, each benchmark's): repo, sha, which stage read it."""
    out = [{"repo": repo, "revision": sha, "read_by": "ingest"} for repo, sha in ((ingest or {}).get("revision") or {}).items()]
    for name, m in sorted(benches.items()):
        if (m or {}).get("revision"):
            out.append({"repo": m.get("hub_id") or m.get("source", name), "revision": m["revision"], "read_by": f"bench_score@{name}"})
    return out


def numerics(machines: list[dict] | None) -> dict:
    """The pinned numerics: the same on every machine at the floor, so the DVC page shows them, with the
    rounding rule for decisions; `machines` (the runs/numerics/ records: CPU, flags, the kernels torch, numpy
    and OpenBLAS chose, per stage) only on `prbench report`'s page, as the page in dvc.lock must not depend
    on the machine that made it."""
    from tasks.core import numerics as pins
    from tasks.core.determinism import DECISION_DECIMALS

    needs = lambda core: " + ".join(f.upper() for f in pins.OPENBLAS_NEEDS[core])  # noqa: E731
    shown = {**pins.ISA_PINS, "NPY_DISABLE_CPU_FEATURES": f"{pins.ISA_PINS['NPY_DISABLE_CPU_FEATURES']} (numpy runs "
             f"its {pins.NUMPY_PINNED} loops)", "OPENBLAS_CORETYPE": f"{pins.ISA_PINS['OPENBLAS_CORETYPE']} (numpy's "
             f"and scipy's OpenBLAS; where the CPU has {needs(pins.ISA_PINS['OPENBLAS_CORETYPE'])})"}
    machines = [{**m, "kernels": kernels_of(m) if m.get("numpy_dispatch") is not None else None} for m in machines or []]
    caps = sorted({str(m.get("torch_capability")) for m in machines if m.get("torch_capability")})
    kernels = sorted({m["kernels"] for m in machines if m["kernels"]})
    return {"pins": [{"var": k, "value": v} for k, v in shown.items()]
            + [{"var": "MKL_CBWR", "value": f"{pins.MKL_PINS['MKL_CBWR']} (one MKL code path on Intel and AMD alike)"},
               {"var": "MKL_DYNAMIC", "value": pins.MKL_PINS["MKL_DYNAMIC"]},
               {"var": " / ".join(pins.THREAD_VARS), "value": "common.torch_threads"}],
            "floor": " + ".join(f.upper() for f in pins.FLOOR), "decimals": DECISION_DECIMALS,
            "machines": sorted(machines, key=lambda m: m.get("label", "")) or None,
            "mixed": len(caps) > 1 and caps, "mixed_kernels": len(kernels) > 1 and kernels}


def kernels_of(record: dict) -> str:
    """What numpy and each OpenBLAS ran in one stage process, in one line: 'numpy X86_V3 · OpenBLAS Haswell
    (numpy 0.3.31), Haswell (scipy 0.3.30)'."""
    blas = ", ".join(f"{b['core']} ({b['library']} {b['version']})" for b in record.get("openblas") or [])
    return f"numpy {' '.join(record.get('numpy_dispatch') or ()) or 'baseline'} · OpenBLAS {blas or 'not loaded'}"


def machine_records(folder: str | Path = "runs/numerics") -> list[dict]:
    """Every stage process's record of what it computed on (tasks/core/numerics.py record)."""
    import json

    return [json.loads(f.read_text(encoding="utf-8")) for f in sorted(Path(folder).glob("*.json"))]
