"""`prbench score --benchmark NAME` (or `--data PATH` in another benchmark's layout): one RM on one
benchmark through the list-wise scorer, outside DVC; prints accuracy with CI, chance, n, ties and
per-subset rows, and writes the per-item scores and metrics."""
from __future__ import annotations

from pathlib import Path

from tasks.stages.sources import data_files, read_file

OURS = "personalised"   # its layout goes through ingest + retrieval (tasks/ops/quick_score.py), as before


def detect(data: str | None) -> str | None:
    """The benchmark whose published layout `data` (a local file or folder) is in, from its first row."""
    if not data or not Path(data).exists():
        return None
    root = Path(data)
    files = data_files(root)
    stems = {p.name.split(".")[0].split("-")[0] for p in files}
    if {"survey", "conversations"} <= stems:
        return "prism"
    for f in files:
        try:
            first = next(iter(read_file(f)), None)
        except Exception:  # noqa: BLE001 - not readable here: let the importer name the problem
            return None
        if first is not None and isinstance(first.row, dict):
            return _layout(first.row)
    return None


def _layout(row: dict) -> str | None:
    keys = set(row)
    if "winner" in keys and {"response_1", "response_2"} <= keys:
        return "ppe-human"
    if "num_correct" in keys or ("subset" in keys and isinstance(row.get("chosen"), list)):
        return "rewardbench2"
    if "domain" in keys and isinstance(row.get("chosen"), list):
        return "rm-bench"
    if "user_id" in keys and {"chosen", "rejected"} <= keys:
        return "personal-rewardbench"
    if {"question", "profile", "chosen", "rejected"} <= keys:
        return OURS
    if {"prompt", "chosen", "rejected"} <= keys:
        return "generic"
    return None


def score_benchmark(params: dict, *, entry: dict, name: str, benchmark: str, data: str | None, out: Path,
                    subset: str | None = None, limit: int | None = None, revision: str | None = None) -> str:
    from tasks.core.artifacts import write_json, write_table
    from tasks.stages.benchmarks import scoring
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm

    res = Resources(params)
    rm = make_rm(name, entry, res)
    local = data and Path(data).exists()
    spec = {"source": benchmark, "path": data if local else None, "hub_id": None if local else data,
            "subset": subset, "limit": limit, "revision": revision}
    bench, items = scoring.load(benchmark, spec)
    rows = scoring.score(rm, benchmark, bench, items)
    write_table(rows, out / "scores.parquet", "list_scores")
    metrics = scoring.summary(rows, bench, params["leaderboard"], params["common"]["seed"])
    write_json({"rm": name, "entry": entry, "identity": rm.identity(), "benchmark": benchmark,
                "data": data or bench.hub_id, **dataset_read(bench, revision), "items": len(items), **metrics,
                "run": res.stats()}, out / "metrics.json")
    read = f"read at revision {bench.revision}\n" if bench.revision else ""
    return read + scoring.format_summary(benchmark, name, metrics)


def dataset_read(bench, asked: str | None) -> dict:
    """What a results JSON records of the data read: the revision asked and the commit sha read (hub only)."""
    return {"revision_asked": asked or "main", "revision": bench.revision} if bench.revision else {}
