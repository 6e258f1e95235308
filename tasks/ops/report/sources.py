"""The stage outputs the run page reads, by name: the report stage hashes exactly these files."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from tasks.core import layout


def reference_files(params: dict) -> dict[str, str]:
    """{label: params file} of the settings this run is set against (report.reference_params)."""
    return dict(sorted(((params.get("report") or {}).get("reference_params") or {}).items()))


def input_paths(params: dict) -> dict[str, str]:
    """{name: path} of every output the page can show."""
    from tasks.downstream.correlation.methods import methods

    return {
        **{name: path for m in methods() for name, path in m.report.items()},
        **{f"{m.name}_per_question": m.per_question for m in methods()},   # the generic section's data
        "leaderboard": layout.LEADERBOARD["leaderboard"], "leaderboard_metrics": layout.LEADERBOARD["metrics"],
        "correlation": layout.CORRELATION["correlation"], "correlation_points": layout.CORRELATION["points"],
        "correlation_metrics": layout.CORRELATION["metrics"], "human_eval_metrics": layout.HUMAN_EVAL["metrics"],
        "pairs_metrics": layout.PAIRS["metrics"], "generic_pairs_metrics": layout.GENERIC_PAIRS["metrics"],
        "ingest_metrics": layout.INGEST["metrics"], "train_rm_metrics": layout.TRAIN_RM["metrics"],
        "explain_cells": layout.EXPLAIN["cells"], "explain_pairs": layout.EXPLAIN["pairs"],
        "explain_metrics": layout.EXPLAIN["metrics"],
        "questions": layout.INGEST["questions"], "pairs": layout.INGEST["pairs"], "profiles": layout.INGEST["profiles"],
        **{f"score_metrics:{rm}": layout.scores(rm)["metrics"] for rm in sorted(params["scoring"]["rms"])},
        **{f"bench_metrics:{b}": layout.bench_scores(b)["metrics"] for b in sorted(params.get("benchmarks") or {})},
        **{f"reference:{label}": path for label, path in reference_files(params).items()},
    }


def run_inputs(params: dict) -> dict[str, str]:
    """The inputs that exist (RL only once its stages ran; a section without inputs says so)."""
    return {k: v for k, v in input_paths(params).items() if Path(v).exists()}


DATASET = ("questions", "pairs", "profiles")   # the ingested tables: their hash names the dataset


class Sources:
    """Read access to the named inputs; a missing one reads as None (its section says so)."""

    def __init__(self, inputs: dict[str, str]):
        self.inputs = dict(inputs)

    def has(self, name: str) -> bool:
        return name in self.inputs

    def json(self, name: str):
        if name not in self.inputs:
            return None
        return json.loads(Path(self.inputs[name]).read_text(encoding="utf-8"))

    def rows(self, name: str) -> list[dict] | None:
        """A Parquet output as rows, read as written (stages add columns; the page shows what is there)."""
        if name not in self.inputs:
            return None
        return pq.read_table(self.inputs[name]).to_pylist()

    def columns(self, name: str) -> list[str]:
        return pq.read_schema(self.inputs[name]).names if name in self.inputs else []

    def prefixed(self, prefix: str) -> dict[str, str]:
        return {k.split(":", 1)[1]: v for k, v in self.inputs.items() if k.startswith(prefix + ":")}
