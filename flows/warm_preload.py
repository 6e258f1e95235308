"""What the warm server (flows/warm_server.py) prepares once, before any fork, so that no stage's fork pays for it
again: the imports, the import scans behind code hashes, the registries, Prefect's settings without heartbeats,
one CA context per bundle, and the params file a stage will load."""
from __future__ import annotations

import os


# what Prefect imports only when a flow runs (its engines; fastapi to serialize a flow's parameters)
LATE = ("prefect.flow_engine", "prefect.task_engine", "fastapi", "fastapi.encoders", "pydantic.v1", "tabulate",
        "anyio._backends._asyncio")


def preload() -> None:
    """What stage processes import: every stage's modules, and the heavy libraries their tasks import late."""
    import importlib

    from tasks.core.stage_table import TABLE

    for name in ("torch", "transformers", "sentence_transformers", "llama_cpp", "trl", "sklearn.metrics",
                 "scipy.stats", "matplotlib.pyplot", *LATE):
        try:
            importlib.import_module(name)
        except Exception:   # an optional extra not installed: its stages import it (or fail) themselves
            pass
    for module in dict.fromkeys(m for stage in TABLE for m in stage.code):   # each stage's flow, logic, runner
        importlib.import_module(module)
    # what every fork would redo (~0.8 s of a stage's ~2 s in its fork, py-spy): the import scans behind each
    # stage's code hash (cached by file content, so a file edited later is scanned afresh) and the registries
    # the params check imports
    from tasks.core.codedeps import code_files
    from tasks.ops.params import registries

    for stage in TABLE:
        code_files(stage.code)
    registries()
    no_heartbeats()
    share_verified_tls_context()


def share_verified_tls_context() -> None:
    """Every Prefect client a stage builds (its flow's, the event and log workers': ~4 a stage) loads a CA bundle
    (SSL_CERT_FILE's or certifi's) into a new SSLContext, ~23 ms each: ~0.09 s of a stage's CPU in its fork, even
    for http on 127.0.0.1. A call for one CA file and nothing else gets one context per file, those two built
    here before any fork; the clients only read it. Other calls (Prefect's insecure context, which it then
    changes) stay new."""
    import functools
    import ssl

    import certifi

    default = ssl.create_default_context
    if hasattr(default, "shared"):
        return
    shared: dict[str, ssl.SSLContext] = {}

    @functools.wraps(default)
    def create_default_context(purpose=ssl.Purpose.SERVER_AUTH, *, cafile=None, capath=None, cadata=None):
        if purpose is not ssl.Purpose.SERVER_AUTH or not cafile or capath is not None or cadata is not None:
            return default(purpose, cafile=cafile, capath=capath, cadata=cadata)
        if cafile not in shared:
            shared[cafile] = default(cafile=cafile)
        return shared[cafile]

    create_default_context.shared = shared
    ssl.create_default_context = create_default_context
    for bundle in dict.fromkeys(filter(None, (os.environ.get("SSL_CERT_FILE"), certifi.where()))):
        create_default_context(cafile=bundle)


_QUIET: dict = {}   # the settings object a run starts from -> the same without heartbeats


def no_heartbeats():
    """A flow run's heartbeats let a long-lived server mark a run that stopped beating as crashed, after
    minutes; `prbench run`'s server lives for the run alone, and each stage's exit waited ~0.5 s on
    average for the heartbeat thread's one-second sleep to end. The settings are built once, here before
    any fork (Prefect rebuilds them from the environment: ~0.2 s of each stage's CPU); a fork has the
    server's environment (`refusal`), so they are the ones it would build."""
    import prefect.context
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY

    context = prefect.context.get_settings_context()
    quiet = _QUIET.get(id(context.settings))
    if quiet is None or quiet[0] is not context.settings:
        quiet = (context.settings, context.settings.copy_with_update(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}))
        _QUIET.clear()
        _QUIET[id(context.settings)] = quiet
    return prefect.context.SettingsContext(profile=context.profile, settings=quiet[1])


def warm_params(cwd: str) -> None:
    """Read and check the params file a stage in `cwd` will load, here before the fork: each fork parsed it
    again (~0.4 s of CPU per stage with a hundred RMs). load_params keeps it by path and stat, so a file
    changed since is read afresh in the fork; a bad one is the stage's to report."""
    from tasks.core.errors import ConfigError
    from tasks.ops.params import load_params
    from tasks.core.params import params_path

    try:
        load_params(os.path.join(cwd, params_path()))
    except (ConfigError, OSError):
        pass
