"""Chunked scoring: the fixed slices a per-RM stage is cut into, and what a worker process keeps
between chunks (built RMs, tables read) so a chunk costs its scoring, not a model load.

A chunk is a plain dict ({"benchmark", "strategy", "start", "stop"} for score, {"start", "stop"}
for bon_score): it names a slice of rows the worker recomputes from the input files itself, so
only paths and hashes travel. Slices depend on the data and `scale.chunk_size` only, never on the
runner or the number of workers, so every runner scores exactly the same batches."""
from __future__ import annotations

import gc
import json
import os
import threading
from collections import OrderedDict
from pathlib import Path

KEEP_RMS = 2   # built RMs a worker keeps (a GPU holds about two mid-sized RMs; more would evict work)
_RMS: OrderedDict = OrderedDict()
_TABLES: OrderedDict = OrderedDict()
_BUILD, _READ = threading.Lock(), threading.Lock()


def slices(n: int, size: int) -> list[tuple[int, int]]:
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def chunk_size(params: dict) -> int:
    return int((params.get("scale") or {}).get("chunk_size") or 256)


def built_rm(params: dict, rm_name: str, key: dict | None = None):
    """(rm, resources) for an entry, built once per process per (entry, LLMs, common params, input
    hashes): a retrained model or an edited entry builds anew."""
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm

    entry = params["scoring"]["rms"][rm_name]
    k = json.dumps([os.getcwd(), rm_name, entry, params["common"], params.get("llms", {}), key], sort_keys=True,
                   default=str)
    with _BUILD:
        if k in _RMS:
            _RMS.move_to_end(k)
            return _RMS[k]
        res = Resources(params)
        built = (make_rm(rm_name, entry, res), res)
        _RMS[k] = built
        while len(_RMS) > KEEP_RMS:
            _RMS.popitem(last=False)
            _free_memory()
        return built


def _free_memory() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def rows(path: str, schema: str) -> list[dict]:
    """A table's rows, read once per process while the file is unchanged (size, mtime)."""
    from tasks.core.artifacts import read_table

    k = ("rows", schema, _stamp(path))
    with _READ:
        if k in _TABLES:
            return _TABLES[k]
    table = read_table(path, schema).to_pylist()
    with _READ:
        _TABLES[k] = table
        while len(_TABLES) > 16:
            _TABLES.popitem(last=False)
    return table


def _stamp(path: str | None):
    if not path or not os.path.exists(path):
        return None
    st = os.stat(path)
    return str(Path(path).resolve()), st.st_size, st.st_mtime_ns


def contexts(strategy: str, questions: str, profile_context: str, inferred: str | None,
             fidelity: str = "corrected") -> dict[str, str]:
    """tasks.models.strategies.load_contexts, computed once per process while its input files are unchanged."""
    from tasks.models.strategies import load_contexts

    k = ("contexts", strategy, fidelity, _stamp(questions), _stamp(profile_context), _stamp(inferred))
    with _READ:
        if k in _TABLES:
            return _TABLES[k]
    ctx = load_contexts(strategy, questions, profile_context, inferred, fidelity)
    with _READ:
        _TABLES[k] = ctx
        while len(_TABLES) > 16:
            _TABLES.popitem(last=False)
    return ctx


# --- run counters: a chunk reports what it did; the stage sums them ------------------------------

def delta(before: dict, after: dict) -> dict:
    """after - before, per nested counter (a memoized RM's Resources counts across chunks)."""
    out = {}
    for k, v in after.items():
        if isinstance(v, dict):
            out[k] = delta(before.get(k, {}), v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = round(v - before.get(k, 0), 6) if isinstance(v, float) else v - before.get(k, 0)
    return out


def total(parts: list[dict]) -> dict:
    out: dict = {}
    for part in parts:
        for k, v in part.items():
            if isinstance(v, dict):
                out[k] = total([out.get(k, {}), v])
            else:
                out[k] = round(out.get(k, 0) + v, 6) if isinstance(v, float) else out.get(k, 0) + v
    return out


def same_rm(results: list[dict], rm_name: str) -> tuple[str, str]:
    """(kind, identity) every chunk agrees on. Two workers with different weights or code under the
    same path would mix two models in one table: refuse."""
    from tasks.core.errors import ConfigError

    seen = {(r["kind"], r["identity"]): r.get("worker", "this process") for r in results}
    if len(seen) != 1:
        lines = "; ".join(f"{ident} on {where}" for (_, ident), where in sorted(seen.items()))
        raise ConfigError(f"scoring.rms.{rm_name}: workers built different models ({lines}); "
                          "every worker must see the same files (see README, Scale out)")
    return next(iter(seen))


def same_numerics(results: list[dict], rm_name: str) -> dict:
    """The dtype, device kind, attention and invariance mode every chunk scored with: chunks on a GPU and on a
    CPU (or in bf16 and fp32) would mix two sets of bits in one table: refuse."""
    from tasks.core.errors import ConfigError

    seen = {json.dumps(r.get("numerics") or {}, sort_keys=True) for r in results}
    if len(seen) != 1:
        raise ConfigError(f"scoring.rms.{rm_name}: workers scored with different numerics ({'; '.join(sorted(seen))}); "
                          "give every worker the same device kind (see README, Scale out)")
    return json.loads(next(iter(seen)))


def counters(results: list[dict]) -> dict:
    """The stage's run counters: the chunks' own (cached chunks did no work now) plus where they ran."""
    fresh = [r for r in results if not r.get("cached")]
    where: dict = {}
    for r in fresh:
        where[r.get("worker") or "this process"] = where.get(r.get("worker") or "this process", 0) + 1
    return {**total([r.get("run") or {} for r in fresh]),
            "chunks": {"total": len(results), "cached": len(results) - len(fresh), **dict(sorted(where.items()))}}
