"""RM kinds by name. Adding an RM is a params entry (`scoring.rms.<name>: {kind: ..., ...}`);
adding a kind is a class registered here. Behaviour is chosen by `kind`, never by model name."""
from __future__ import annotations

import inspect

from tasks.core import fidelity
from tasks.core.errors import ConfigError
from tasks.core.registry import Registry, check_entry
from tasks.models.rms.base import RewardModel

SCHEDULING = "resources"   # accepted by every kind, read by the task runner (flows/runner.py), never by the RM
LIMIT = "per_domain_limit"  # accepted by every kind: this RM's own scoring.per_domain_limit (read by the score stage)
NOT_RM = (SCHEDULING, LIMIT)


def _load_kinds() -> None:
    # imported for their @register side effect; heavy libraries load only when an RM is built
    from tasks.models.rms import baselines, dpo, judges, mixture, seq_cls  # noqa: F401


KINDS = Registry("kind", _load_kinds)
register = KINDS.register


def check(name: str, entry, key: str | None = None) -> list[str]:
    """Problems of one `scoring.rms` entry, without building it: kind, options and their types, then what the
    kind tells from its files (a model folder that is not one)."""
    key = key or f"scoring.rms.{name}"
    return check_entry(entry, KINDS, key, shared={SCHEDULING: dict[str, float], LIMIT: int | None})


def make_rm(name: str, entry: dict, resources) -> RewardModel:
    """Build the RM of one params entry; unknown kinds and options are errors that list the valid ones."""
    problems = check(name, entry)
    if problems:
        raise ConfigError("\n".join(problems))
    cls = KINDS[entry["kind"]]
    resource_requests(name, entry)
    sig = inspect.signature(cls.__init__).parameters
    extra = {"resources": resources} if "resources" in sig else {}
    # where an RM runs is no part of the RM: its scores and identity never see `resources`
    rm = cls(name, {k: v for k, v in entry.items() if k not in NOT_RM}, **extra)
    rm.fidelity = fidelity.of(getattr(resources, "params", None))   # common.fidelity: what the RM sees and how
    return rm


def resource_requests(name: str, entry: dict) -> dict[str, float]:
    """An entry's `resources` (e.g. {gpu: 1}): what each of its tasks asks of a worker, for every kind."""
    req = entry.get(SCHEDULING) or {}
    if not isinstance(req, dict):
        raise ConfigError(f"scoring.rms.{name}.{SCHEDULING}: a mapping like {{gpu: 1}}, got {req!r}")
    for key, value in req.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"scoring.rms.{name}.{SCHEDULING}.{key}: a positive number, got {value!r}")
    return {str(k): float(v) for k, v in sorted(req.items())}


def pointwise_kind(entry: dict) -> bool:
    """Can this entry's kind score an answer on its own? Decided by its class, without building it."""
    cls = KINDS._all().get(entry.get("kind"))
    return cls is not None and cls.score_answers is not RewardModel.score_answers
