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


def render_release(path: str, system: str | None = None, **fields) -> list[dict]:
    """The release's way (BoN/sample.py:85-86, BoN/evaluate.py:57-59, evaluation/pairwise.py:49-51): the
    file read and stripped, each `{field}` replaced by plain str.replace in the order given, an optional
    system message first. A field the file does not name is refused (a `$field` prompt file given by mistake)."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"prompt file '{path}' not found")
    text = p.read_text(encoding="utf-8").strip()
    for name, value in fields.items():
        if "{" + name + "}" not in text:
            raise ConfigError(f"prompt file '{path}' has no {{{name}}}: common.fidelity release needs the "
                              f"release's prompt files (prompts/release/)")
        text = text.replace("{" + name + "}", str(value))
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]


def _render_template(path: str, system: str | None = None, **fields) -> list[dict]:
    return ([{"role": "system", "content": system}] if system else []) + render(path, **fields)


RENDERERS = {"corrected": _render_template, "release": render_release}   # common.fidelity


def render_with(fidelity: str, path: str, system: str | None = None, **fields) -> list[dict]:
    """A prompt file rendered as the fidelity says: `$field` templates (prbench) or the release's replace."""
    from tasks.core.fidelity import pick

    return pick(RENDERERS, fidelity)(path, system, **fields)


def aspect_titles(aspects: list[dict]) -> str:
    """As the release passes them: the comma-joined aspect titles, evidence and reason dropped."""
    return ", ".join(a["aspect"] for a in aspects)
