"""Scheduled reruns from the Prefect UI (e.g. nightly, or when a new RM is added to params):
`prbench serve --cron "0 3 * * *"` registers the pipeline as a deployment and runs it on schedule."""
from __future__ import annotations

from flows.pipeline import pipeline


def serve(cron: str, name: str = "prbench-scheduled") -> None:
    pipeline.serve(name=name, cron=cron)
