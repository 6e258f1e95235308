"""`prbench score --benchmark NAME` (or `--data PATH` in another benchmark's layout): one RM on one
benchmark through the list-wise scorer, outside DVC; prints accuracy with CI, chance, n, ties and
per-subset rows, and writes the per-item scores and metrics."""
from __future__ import annotations

from pathlib import Path

from tasks.core.errors import ConfigError
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
                    subset: str | None = None, limit: int | None = None, strategies: list[str] | None = None,
                    source: str = "params.yaml", revision: str | None = None) -> str:
    """Score, write out/scores.parquet + out/results.json, return the printable table. `strategies`: those
    asked for (--strategy), each one the benchmark scores (default: all of them); `source`: where the params
    came from (recorded); `revision`: the hub dataset's (null = main), its sha recorded."""
    from tasks.core.artifacts import write_json, write_table
    from tasks.core import numerics, results
    from tasks.stages.benchmarks import get, scoring
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm

    bench = get(benchmark, "--benchmark")
    wrong = [s for s in strategies or () if s not in bench.strategies()]
    if wrong:
        raise ConfigError(f"--strategy {wrong[0]}: {benchmark} is scored with {', '.join(bench.strategies())} only")
    res = Resources(params)
    rm = make_rm(name, entry, res)
    local = data and Path(data).exists()
    spec = {"source": benchmark, "path": data if local else None, "hub_id": None if local else data,
            "subset": subset, "limit": limit, "revision": revision}
    bench, items = scoring.load(benchmark, spec, subset_key="--subset",
                                data_key=f"--data {data}" if data else f"--benchmark {benchmark}")
    rows = scoring.score(rm, benchmark, bench, items, strategies=strategies)
    write_table(rows, out / "scores.parquet", "list_scores")
    lb = params["leaderboard"]
    metrics = scoring.summary(rows, bench, lb, params["common"]["seed"])
    config = {"strategies": list(metrics["strategies"]), "limit": limit, "subset": subset,
              "tie_policy": lb["tie_policy"], "bootstrap": lb["bootstrap"], "ci": lb["ci"], "seed": params["common"]["seed"]}
    doc = results.document(benchmark=benchmark, model={"name": name, "entry": entry, "identity": rm.identity(),
                                                                 "scoring": rm.numerics()},
                           data=data or bench.hub_id, dataset=dataset_read(bench, revision), params=source,
                           config=config, n=len(items), results=metrics, run=res.stats(),
                           numerics=numerics.describe())
    write_json(doc, out / results.FILE)
    read = f"read at revision {bench.revision}\n" if bench.revision else ""
    return read + scoring.format_summary(benchmark, name, metrics)


def dataset_read(bench, asked: str | None) -> dict:
    """What a results JSON records of the data read: the revision asked and the commit sha read (hub only)."""
    return {"revision_asked": asked or "main", "revision": bench.revision} if bench.revision else {}
