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
