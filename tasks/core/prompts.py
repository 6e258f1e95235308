"""Prompt files (referenced from params, tracked by DVC) and their rendering."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from string import Template

from tasks.core.errors import ConfigError


@lru_cache(maxsize=None)
def load(path: str) -> Template:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"prompt file '{path}' not found")
    return Template(p.read_text(encoding="utf-8").strip())


def render(path: str, **fields) -> list[dict]:
    """The chat messages for one request. A missing field is an error, never an empty slot."""
    try:
        text = load(path).substitute({k: str(v) for k, v in fields.items()})
    except KeyError as exc:
        raise ConfigError(f"prompt file '{path}' uses ${exc.args[0]}, which this stage does not provide") from None
    return [{"role": "user", "content": text}]


def aspect_titles(aspects: list[dict]) -> str:
    """As the release passes them: the comma-joined aspect titles, evidence and reason dropped."""
    return ", ".join(a["aspect"] for a in aspects)
