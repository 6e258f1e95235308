"""Metrics hold results; counters about a run live beside them, outside DVC's hashes.

A stage's metrics dict may carry a `run` section (LLM calls, cache hits, retries, tokens,
latency, wall time, encoded vs reused embeddings). Those describe *this* run — they change with
cache state and load — so `write_metrics` writes the results to the DVC-tracked metrics file and
the counters to a gitignored run record: `metrics/pairs.json` -> `runs/pairs.json` (latest run),
plus one line per run in `runs/history.jsonl`.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from tasks.core.artifacts import write_json

RUN_KEY = "run"


def _locate(metrics_path: str | Path) -> tuple[Path, Path]:
    """(run record, history file) for a metrics file: its last `metrics/` folder swapped for `runs/`."""
    p = Path(metrics_path)
    parts = p.parts
    if "metrics" in parts[:-1]:
        i = len(parts) - 2 - parts[-2::-1].index("metrics")
        root = Path(*parts[:i], "runs")
        return root.joinpath(*parts[i + 1:]), root / "history.jsonl"
    return p.with_name(f"{p.stem}.run.json"), p.with_name(f"{p.stem}.run.jsonl")


def record_path(metrics_path: str | Path) -> Path:
    return _locate(metrics_path)[0]


def write_metrics(metrics: dict, path: str | Path) -> dict:
    """Results (everything but `run`) to `path`; the `run` counters to the run record."""
    results = {k: v for k, v in metrics.items() if k != RUN_KEY}
    write_json(results, path)
    if metrics.get(RUN_KEY) is not None:
        record(path, metrics[RUN_KEY])
    return metrics


def record(metrics_path: str | Path, counters: dict) -> Path:
    target, history = _locate(metrics_path)
    entry = {"metrics": Path(metrics_path).as_posix(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
             "counters": counters}
    write_json(entry, target)
    with open(history, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
    return target


def read_counters(metrics_path: str | Path) -> dict:
    """The latest run's counters for a metrics file (tests and `prbench` read them here)."""
    return json.loads(record_path(metrics_path).read_text(encoding="utf-8"))["counters"]
