"""Prefect flows, one per stage, plus the whole pipeline. Thin: they wire tasks/ functions,
set retries and cache policies, and read/write artifacts."""
import os
from pathlib import Path

# Prefect reads its settings at import time, so these must be set before any flow module loads.
os.environ.setdefault("PREFECT_HOME", str(Path.cwd() / ".prefect"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_API_REQUEST_TIMEOUT", "120")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _torch_threads() -> str:
    """common.torch_threads of the params in use, fixed before torch is imported (OMP reads it once)."""
    try:
        import yaml

        with open(os.environ.get("PRBENCH_PARAMS", "params.yaml"), encoding="utf-8") as fh:
            return str(int(yaml.safe_load(fh)["common"]["torch_threads"]))
    except (OSError, KeyError, TypeError, ValueError):
        return "2"


os.environ.setdefault("PRBENCH_TORCH_THREADS", _torch_threads())
os.environ.setdefault("OMP_NUM_THREADS", os.environ["PRBENCH_TORCH_THREADS"])

from flows import lifeline as _lifeline  # noqa: E402 - after the settings above

_lifeline.install()   # Prefect's ephemeral server dies with the stage process, even on SIGKILL
