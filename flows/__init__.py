"""Prefect flows: the one stage flow (flows/stage.py, every stage of the table), the whole pipeline,
serve's deployments, the CLI. Thin: they wire tasks/ functions, set retries and cache policies, and
read/write artifacts."""
import os
import sys
from pathlib import Path


def _stage_command() -> tuple[str, list[str]] | None:
    """(module, args) when this process is `python -m flows.<module> args` (dvc runs `flows.stage <name>`)."""
    argv = getattr(sys, "orig_argv", [])
    if "-m" not in argv or argv.index("-m") + 1 >= len(argv) or not argv[argv.index("-m") + 1].startswith("flows."):
        return None
    return argv[argv.index("-m") + 1], argv[argv.index("-m") + 2:]


def _torch_threads() -> str:
    """common.torch_threads of the params in use, fixed before torch is imported (OMP reads it once)."""
    try:
        import yaml

        with open(os.environ.get("PRBENCH_PARAMS", "params.yaml"), encoding="utf-8") as fh:
            return str(int(yaml.safe_load(fh)["common"]["torch_threads"]))
    except Exception:  # noqa: BLE001 - any broken file (a tab, say): the params check names its problem, not this
        return "2"


# The environment variables the docs name, as the user set them (before the pin replaces the thread counts): a
# value set to nonsense is one line each, before any work (flows/boundary.py; a stage command: just below).
from tasks.core.env import problems as _env_problems  # noqa: E402

ENV_PROBLEMS = _env_problems()
if ENV_PROBLEMS and _stage_command():
    print("\n".join(ENV_PROBLEMS), file=sys.stderr)
    sys.exit(1)

# the numerics every artifact is computed under, before anything can import torch; before the hand-off too,
# so a stage command and the warm server it hands itself to agree on them (docs/determinism.md). Not on an
# environment that is refused (the command stops before any work: the pin itself reads these variables)
from tasks.core.numerics import pin as _pin  # noqa: E402

if not ENV_PROBLEMS:
    _pin(_torch_threads())

if _stage_command() and os.environ.get("PRBENCH_WARM"):   # under `prbench run`: run in a warm fork (flows/warm.py)
    from flows.warm import hand_off

    hand_off(*_stage_command())   # exits with the stage's status, or returns when refused

# Prefect reads its settings at import time, so these must be set before any flow module loads.
os.environ.setdefault("PREFECT_HOME", str(Path.cwd() / ".prefect"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_API_REQUEST_TIMEOUT", "120")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def refuse_bad_params_early(module: str, rest: list[str]) -> None:
    """`python -m flows.stage <name> [<key>]` (what dvc runs) or the pipeline: check params before Prefect
    is even imported (seconds of import, its home created): a bad file is one line per problem and exit 1,
    nothing started. A command that names no stage is the stage flow's to refuse (its usage line)."""
    from tasks.core.errors import ConfigError, did_you_mean
    from tasks.ops.params import load_params
    from tasks.core.stage_table import STAGES

    stage = rest[0] if module == "flows.stage" and rest else None
    if stage not in STAGES and module != "flows.pipeline":
        return
    try:
        from tasks.core.stage_table import read_keys

        params = load_params(complete=read_keys([stage] if stage else None))   # its files: dvc checks its deps
        if stage and STAGES[stage].per_rm and len(rest) == 2:
            from tasks.core.stage_table import fan_keys

            keys = fan_keys(STAGES[stage], params)
            if rest[1] not in keys:
                raise ConfigError(f"{STAGES[stage].foreach}: {did_you_mean(rest[1], keys)}")
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        sys.exit(1)


if _stage_command():
    refuse_bad_params_early(*_stage_command())

from flows import lifeline as _lifeline  # noqa: E402 - after the settings above

_lifeline.install()   # Prefect's ephemeral server dies with the stage process, even on SIGKILL
