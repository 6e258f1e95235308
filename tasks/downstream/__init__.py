"""Downstream methods: does an RM's ranking help a policy? Each method (Best-of-N, RL) is a module here
that registers one entry: the per-question table its stages write (one judge score per RM and question,
what the correlation reads), how to read it, and the outputs its report section shows. The correlation
stage and the report loop over this registry: a new method is one module, a line in `_load` and its
params (the section is the generic one unless tasks/report/downstream.py draws it its own way)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from tasks.registry import Registry


@dataclass(frozen=True)
class Method:
    name: str
    title: str                   # the report section's heading
    per_question: str            # the table the correlation reads: one judge score per (RM, question)
    stage: str                   # the stage that writes it (named when it is missing)
    load: Callable               # (path or None, correlation params) -> correlation Side
    report: dict = field(default_factory=dict)   # {report input name: path} its section reads


def _load() -> None:
    from tasks.downstream import bon, rl  # noqa: F401 - each registers its method


DOWNSTREAM = Registry("downstream method", _load)


def methods() -> list[Method]:
    return [DOWNSTREAM[name] for name in DOWNSTREAM.names()]
