"""The environment variables the docs name, declared once with what each must hold: every command checks them
before any work (flows/boundary.py; a stage command at start-up, flows/__init__.py), so a value set to nonsense
is one line naming the variable instead of a traceback, or a setting silently read as another (huggingface_hub
reads HF_HUB_OFFLINE=maybe as "online"). Stdlib only: it runs before the numerics are pinned. A secret's value
is never printed."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

BOOLS = ("1", "0", "true", "false", "yes", "no", "on", "off")


def _whole(text: str) -> str | None:
    return None if text.isdigit() and int(text) >= 1 else "a whole number >= 1"


def _boolean(text: str) -> str | None:
    return None if text.lower() in BOOLS else f"one of {', '.join(BOOLS)}"


def _url(text: str) -> str | None:
    return None if re.fullmatch(r"https?://[^\s/?#]+(/\S*)?", text) else "an http(s) URL, e.g. http://127.0.0.1:4200/api"


def _folder(text: str) -> str | None:
    from tasks.core.paths import problem

    why = problem(text, "new_folder")
    return None if why is None else f"a folder (made if missing): {why}"


def _json_object(text: str) -> str | None:
    try:
        return None if isinstance(json.loads(text), dict) else "a JSON object"
    except ValueError:
        return "a JSON object (prbench writes it; unset it)"


def _secret(text: str) -> str | None:
    return "a key without spaces or line breaks (pasted with one?)" if re.search(r"\s", text) else None


def _wait_policy(text: str) -> str | None:
    return None if text.upper() in ("PASSIVE", "ACTIVE") else "PASSIVE or ACTIVE"


# name -> (what it must hold, where the docs name it). An unset or empty variable is never checked.
VARIABLES = {
    "PRBENCH_TORCH_THREADS": (_whole, "docs/determinism.md"),
    "PRBENCH_NUMERICS_REPLACED": (_json_object, "docs/determinism.md"),
    "OMP_NUM_THREADS": (_whole, "docs/determinism.md"),
    "MKL_NUM_THREADS": (_whole, "docs/determinism.md"),
    "OPENBLAS_NUM_THREADS": (_whole, "docs/determinism.md"),
    "OMP_WAIT_POLICY": (_wait_policy, "docs/architecture.md"),
    "HF_HUB_OFFLINE": (_boolean, "docs/benchmarks.md"),
    "HF_HOME": (_folder, "docs/benchmarks.md"),
    "HF_ENDPOINT": (_url, "docs/benchmarks.md"),
    "HF_TOKEN": (_secret, "docs/benchmarks.md"),
    "GEMINI_API_KEY": (_secret, "docs/params.md"),
    "GOOGLE_API_KEY": (_secret, "docs/params.md"),
    "PREFECT_API_URL": (_url, "docs/releases.md"),
    "PREFECT_HOME": (_folder, "docs/stages.md"),
    "PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED": (_boolean, "docs/stages.md"),
    "XDG_CACHE_HOME": (_folder, "docs/results.md"),
}
SECRETS = ("HF_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def problems(environ=None) -> list[str]:
    """One line per variable set to something it cannot mean, naming it, its value (never a secret's) and what
    it must hold."""
    environ = os.environ if environ is None else environ
    out = []
    for name, (check, doc) in VARIABLES.items():
        text = environ.get(name)
        why = check(text) if text else None
        if why:
            shown = "its value" if name in SECRETS else repr(text)
            out.append(f"{name}: {shown} is not allowed: {why} (an environment variable, {doc}: fix or unset it)")
    return out

