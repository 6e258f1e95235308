"""Benchmarks by name: one importer module each, registered here (tasks/core/registry.py style, so an
unknown name is refused with "did you mean"). A `benchmarks:` entry in params names one as its
`source`. Adding a benchmark = one module with a Benchmark subclass + a fixture (see README)."""
from __future__ import annotations

from tasks.core.registry import Registry


def _load() -> None:
    # imported for their @register side effect
    from tasks.stages.benchmarks import (generic, personal_rewardbench, personalised, ppe_human, prism, rewardbench2,
                                  rm_bench)
    return (personalised, generic, rewardbench2, personal_rewardbench, prism, rm_bench, ppe_human)


BENCHMARKS = Registry("benchmark", _load)
register = BENCHMARKS.register


def get(name: str, key: str = "benchmarks.source"):
    """An instance of the importer registered as `name`."""
    return BENCHMARKS.lookup(name, key)()
