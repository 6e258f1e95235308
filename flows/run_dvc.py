"""`prbench run` with DVC: a local Prefect server and the warm stage server around `dvc repro`, and a
stop on Ctrl-C or SIGTERM that leaves no process and no temp folder behind (flows/stopping.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_dvc(targets: list[str], env: dict, work=None, jobs: int = 1, engine: list[str] = ()) -> int:
    """`dvc repro targets` reported to a fresh local Prefect server, stages in warm forks; its status
    (128 + the signal when stopped). `work()`, when given, runs while the warm server imports (~8 s of
    CPU: the checks before a run take the other core) and says whether there is anything to run: no,
    and the run ends there with 0, before a Prefect server starts. `jobs` > 1: ready stages that many at a
    time (tasks/ops/dvc_jobs.py), the same bytes; `engine`: its --runner/--address arguments."""
    from flows import server as srv
    from flows.stopping import Interrupted, ignoring_signals, raising_signals, stop_tree
    from flows.warm_run import Warm

    port = srv.free_port()
    # the server is the one this run starts from the same install: no version handshake per stage (~0.3 s)
    env = {**env, "PREFECT_API_URL": f"http://127.0.0.1:{port}/api", "PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED": "false"}
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    server = warm = dvc = None
    with raising_signals():   # a second signal while stopping is ignored (stop_tree, the cleanup)
        try:
            warm = Warm(env, os.path.join(os.environ["PREFECT_HOME"], "warm.log"))   # imports while the rest starts
            if work is not None and not work():
                return 0
            server = srv.start(port=port, for_one_run=True)
            print(f"prbench: Prefect server at {server.ui_url} (stopped at the end)", flush=True)
            # a session of its own: Ctrl-C reaches this process only, which stops dvc's stage first
            # DVC's CLI with the lock written per stage entry (tasks/ops/dvc_cli.py): the bytes `dvc repro` writes
            cmd = ["tasks.ops.dvc_cli", "repro"] if jobs <= 1 else ["tasks.ops.dvc_jobs", "--jobs", str(jobs), *engine]
            dvc = subprocess.Popen([sys.executable, "-m", *cmd, *targets],
                                   env={**env, **warm.wait_ready()}, start_new_session=True)
            rc = dvc.wait()
        except Interrupted as stop:
            rc = 128 + stop.signum
            n = stop_tree(dvc.pid if dvc else None)
            print(f"prbench: stopped by {stop} ({n} process(es) ended). Finished stages are kept in dvc.lock: "
                  "`prbench run` resumes from there", file=sys.stderr, flush=True)
        finally:
            with ignoring_signals():
                if dvc is not None:
                    dvc.wait()
                if server is not None:
                    server.stop()
                if warm is not None:
                    said = warm.stop()
                    if server is not None:   # a run with nothing to do says so, not what its forks did
                        print(said, flush=True)
    return rc
