"""The results JSON of `prbench score` (`results/<benchmark>/<model>/results.json`), versioned as
lm-evaluation-harness versions its output: a reader checks `schema_version` before it reads anything
else. A change that renames, removes or retypes a field bumps SCHEMA_VERSION; a new optional field does
not. Every document is checked against this model (docs/results.md lists the fields)."""
from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1
FILE = "results.json"


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="the RM's name in the outputs (--name; default the model's folder name or the kind)")
    entry: dict = Field(description="its scoring.rms-style entry, as the flags built it")
    identity: dict | str = Field(description="what pins its scores: model id, revision, options")
    scoring: dict = Field(default_factory=dict, description="what its scores depend on besides inputs and weights: "
                          "dtype, device (kind), attn_implementation, batch_invariant; empty for kinds that run no "
                          "model here")


class Results(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = Field(description="this layout's version; readers refuse a version they do not know")
    prbench_version: str = Field(description="the installed prbench package's version")
    benchmark: str = Field(description="personalised (ours) or another benchmark's importer name")
    model: Model
    data: str = Field(description="--data as given, or the hub id or project artifact read")
    dataset: dict = Field(default_factory=dict, description="a hub dataset read: revision_asked (null = main) and "
                                                          "revision, the commit sha read; empty for a local copy")
    params: str = Field(description="the params file scored under, or 'defaults' (the schema's, outside a project)")
    config: dict = Field(description="what was asked: strategies, limit, subset, per_domain_limit, tie_policy, "
                                     "bootstrap, ci, seed")
    n: int = Field(description="pairs (ours) or items (another benchmark) scored per strategy")
    results: dict = Field(description="the numbers: ours the leaderboard metrics, another benchmark per strategy "
                                      "and subset accuracy, CI, chance, ties, invalid and its published rule")
    run: dict = Field(description="run counters: model loads, cache hits, seconds")
    numerics: dict = Field(default_factory=dict, description="what the numbers were computed on, so a user whose "
                           "bytes differ can see why: the CPU and its SIMD flags, the pinned variables and what they "
                           "replaced, the kernels torch, numpy and each OpenBLAS chose, library versions "
                           "(tasks/core/numerics.describe; docs/determinism.md)")


def folder(benchmark: str, name: str, base: str | Path = "results") -> Path:
    """results/<benchmark>/<model>: one folder per benchmark and RM, so benchmarks never mix."""
    safe = lambda s: re.sub(r"[^\w.+-]+", "_", s).strip("._") or "_"  # noqa: E731
    return Path(base) / safe(benchmark) / safe(name)


def version() -> str:
    from importlib.metadata import PackageNotFoundError, version as dist_version

    try:
        return dist_version("prbench")
    except PackageNotFoundError:   # run from a source tree that was never installed
        return "0+unknown"


def document(**fields) -> dict:
    """The results JSON object, checked against Results (a field missing or misnamed is a bug: it raises)."""
    return Results(schema_version=SCHEMA_VERSION, prbench_version=version(), **fields).model_dump()
