"""RM kinds by name. Adding an RM is a params entry (`scoring.rms.<name>: {kind: ..., ...}`);
adding a kind is a class registered here. Behaviour is chosen by `kind`, never by model name."""
from __future__ import annotations

import inspect

from tasks.errors import ConfigError, did_you_mean
from tasks.rms.base import RewardModel

KINDS: dict[str, type[RewardModel]] = {}


def register(cls: type[RewardModel]) -> type[RewardModel]:
    KINDS[cls.kind] = cls
    return cls


def _load_kinds() -> None:
    # imported for their @register side effect; heavy libraries load only when an RM is built
    from tasks.rms import baselines, judges, seq_cls  # noqa: F401


def make_rm(name: str, entry: dict, resources) -> RewardModel:
    """Build the RM of one params entry; unknown kinds and options are errors that list the valid ones."""
    _load_kinds()
    kind = entry.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"scoring.rms.{name}.kind: {did_you_mean(str(kind), KINDS)}")
    cls = KINDS[kind]
    valid = {"kind", *cls.OPTIONS}
    for key in entry:
        if key not in valid:
            raise ConfigError(f"scoring.rms.{name}.{key}: not an option of kind '{kind}': {did_you_mean(key, valid)}")
    sig = inspect.signature(cls.__init__).parameters
    extra = {"resources": resources} if "resources" in sig else {}
    return cls(name, entry, **extra)
