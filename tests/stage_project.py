"""A throwaway project folder with ingested sample data, for stage tests."""
from __future__ import annotations

from pathlib import Path

import yaml

from tasks.stages import ingest, profiles
from tasks.core import layout
from tests.conftest import ROOT, SAMPLE

DUMMY = {"backend": "dummy", "model": "dummy"}


def project_params(root: Path, *, configs=("Lifestyle_and_Personal_Development",), splits=("test",),
                   limit: int | None = 3, llm: dict | None = None, downstream_share: float | None = None) -> dict:
    """params.yaml of a project on part of the bundled sample, written to `root`: bm25 retrieval
    (no model load), the LLM stages pointed at `llm` (default: the dummy backend)."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["common"]["cache_dir"] = str(root / "cache")
    params["ingest"].update(path=str(SAMPLE / "rewardbench"), configs=list(configs), splits=list(splits),
                            limit_per_split=limit)
    if downstream_share is not None:   # 0: every test question scored (no BoN/RL half)
        params["ingest"]["downstream_share"] = downstream_share
    params["profiles"]["retriever"] = "bm25"
    use_test_llm(params, llm or DUMMY, splits)
    save_params(root, params)
    return params


def make_project(root: Path, *, configs=("Lifestyle_and_Personal_Development",), splits=("test",),
                 limit: int | None = 3, llm: dict | None = None, downstream_share: float | None = None) -> dict:
    """Ingest part of the bundled sample and rank profiles with bm25 (no model load);
    params.yaml points the LLM stages at `llm` (default: the dummy backend)."""
    params = project_params(root, configs=configs, splits=splits, limit=limit, llm=llm,
                            downstream_share=downstream_share)
    out_ingest = {k: str(root / v) for k, v in layout.INGEST.items()}
    ingest.run(params["ingest"], out_ingest, params["common"]["seed"])
    out_prof = {k: str(root / v) for k, v in layout.PROFILES.items()}
    profiles.run(params["profiles"], params["common"],
                 {"questions": out_ingest["questions"], "profiles": out_ingest["profiles"]}, out_prof)
    return params


def use_test_llm(params: dict, llm: dict, splits=("test",)) -> dict:
    """Point every LLM stage at `llm` (named test-llm) and make prompt paths absolute, so a
    project folder outside the repo works."""
    params["llms"]["test-llm"] = llm
    params["pairs"]["generate_per_domain"] = None   # tests size their projects with ingest limits instead
    for stage in ("rubrics", "pairs"):
        params[stage]["llm"] = "test-llm"
        params[stage]["splits"] = list(splits)
        for key in ("prompt", "chosen_prompt", "rejected_prompt"):
            if key in params[stage]:
                params[stage][key] = str(ROOT / params[stage][key])
    return params


def shipped_params(**groups) -> dict:
    """The shipped params.yaml with some groups' keys replaced: a complete file, as a run requires."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for group, values in groups.items():
        params[group] = {**params[group], **values}
    return params


def fit_to_rms(params: dict) -> dict:
    """rl.rms and each `benchmarks:` entry keep only RMs the project scores (the check refuses others);
    an entry left with none is dropped; correlation.primary.rms keeps the patterns that match a scored RM,
    or becomes every scored RM; correlation's benchmarks and comparisons keep those scoring.benchmarks scores. In place, returned for chaining."""
    from fnmatch import fnmatchcase

    scored = (params.get("scoring") or {}).get("rms", {})
    primary = (params.get("correlation") or {}).get("primary") or {}
    if primary.get("rms"):
        primary["rms"] = [p for p in primary["rms"] if any(fnmatchcase(rm, p) for rm in scored)] or ["*"]
    benchmarks = (params.get("scoring") or {}).get("benchmarks")
    corr = params.get("correlation") or {}
    if benchmarks and corr.get("benchmarks"):   # a benchmark the project no longer scores is not correlated
        corr["benchmarks"] = [b for b in corr["benchmarks"] if ":" in str(b) or b in benchmarks]
        corr["comparisons"] = [c for c in corr.get("comparisons") or [] if all(b in corr["benchmarks"] for b in c)]
    rl = params.get("rl") or {}
    if rl.get("rms"):
        rl["rms"] = [rm for rm in rl["rms"] if rm in scored]
    benches = params.get("benchmarks") or {}
    for name in list(benches):
        benches[name] = {**benches[name], "rms": [rm for rm in benches[name].get("rms") or [] if rm in scored]}
        if not benches[name]["rms"]:
            del benches[name]
    return params


def save_params(root: Path, params: dict) -> None:
    """params.yaml of a test project, fitted to the RMs it scores (fit_to_rms)."""
    (root / "params.yaml").write_text(yaml.safe_dump(fit_to_rms(params), sort_keys=False))
