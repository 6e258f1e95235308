"""params.yaml access: one group per stage, plus `common`."""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from tasks.errors import ConfigError

DEFAULT = "params.yaml"


def load_params(path: str | Path | None = None) -> dict:
    path = Path(path or os.environ.get("PRBENCH_PARAMS", DEFAULT))
    if not path.exists():
        raise ConfigError(f"{path}: params file not found (run from the project root)")
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh) or {}


def stage_params(params: dict, stage: str) -> dict:
    if stage not in params:
        raise ConfigError(f"params: missing group '{stage}'")
    return params[stage]
