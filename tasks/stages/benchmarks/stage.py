"""The bench_score stage: one `benchmarks:` entry, each RM it lists -> data/bench_scores/<b>/<rm>.parquet
(per-item rows, every answer's score) and metrics/bench_scores/<b>.json (accuracy, CI, chance level,
n, ties per RM x strategy and subset, and the benchmark's published numbers). A DVC foreach stage per
entry, so adding a benchmark runs only its own stage and the reports."""
from __future__ import annotations

from pathlib import Path

from tasks.core.errors import ConfigError, did_you_mean

NAME = r"[A-Za-z0-9_-]+"


def run(params: dict, benchmark: str, out: dict) -> dict:
    import re

    from tasks.models import chunks
    from tasks.core.artifacts import write_table
    from tasks.stages.benchmarks import scoring
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm
    from tasks.core.runlog import write_metrics
    from tasks.stages import hub

    entries = params.get("benchmarks") or {}
    if benchmark not in entries:
        raise ConfigError(f"benchmarks: {did_you_mean(benchmark, entries)}")
    if not re.fullmatch(NAME, benchmark):
        raise ConfigError(f"benchmarks.{benchmark}: a name of letters, digits, '-' and '_' only")
    entry = entries[benchmark]
    if not entry.get("path"):
        raise ConfigError(f"benchmarks.{benchmark}.path: the pipeline scores a local copy (DVC tracks it); "
                          "download the hub files first (`hf download <id> --repo-type dataset --revision <rev> --local-dir "
                          "<path>`: the sha is then recorded), or use `prbench score --benchmark` for a hub id")
    rms = entry.get("rms") or []
    unknown = [rm for rm in rms if rm not in params["scoring"]["rms"]]
    if not rms or unknown:
        raise ConfigError(f"benchmarks.{benchmark}.rms: " + (did_you_mean(unknown[0], params["scoring"]["rms"])
                                                             if unknown else "list the RMs to score (names under scoring.rms)"))
    bench, items = scoring.load(benchmark, entry)
    hub_id = entry.get("hub_id") or bench.hub_id
    read = hub.check_pin(f"benchmarks.{benchmark}.revision", hub_id, entry["path"], entry.get("revision"))
    res = Resources(params)
    folder = Path(out["scores"])
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.parquet"):   # an RM taken off the list leaves no table behind
        if stale.stem not in rms:
            stale.unlink()
    per_rm = {}
    for rm_name in rms:
        rm = make_rm(rm_name, params["scoring"]["rms"][rm_name], res)
        rows = scoring.score(rm, benchmark, bench, items, chunks.chunk_size(params))
        write_table(rows, folder / f"{rm_name}.parquet", "list_scores")
        per_rm[rm_name] = {"kind": rm.kind, "identity": rm.identity(),
                           **scoring.summary(rows, bench, params["leaderboard"], params["common"]["seed"])}
    metrics = {"benchmark": benchmark, "source": bench.name, **({"hub_id": hub_id, "revision": read} if read else {}),
               "items": len(items), "strategies": bench.strategies(),
               "rms": per_rm, "run": res.stats()}
    write_metrics(metrics, out["metrics"])
    return metrics


def stage_run(params: dict, benchmark: str, inputs: dict, out: dict) -> dict:
    """The stage as flows/stage.py runs it: its key is the benchmark's name; it reads no other stage's output."""
    return run(params, benchmark, out)
