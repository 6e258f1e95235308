"""The whole DAG in one process, for users without DVC: `prbench run --no-dvc`.
The stages of the stage table (tasks/core/stage_table.py) in its order; per-RM stages run once per `scoring.rms` entry."""
from __future__ import annotations

import contextvars
import sys
from concurrent.futures import ThreadPoolExecutor

from prefect import flow
from prefect.states import Failed

from flows.common import main
from flows.runner import scale_params
from flows.stage import flow_of
from tasks.ops.params import load_params
from tasks.core.stage_table import TABLE, fan_keys


FAN_OUT = {"score", "bon_score"}   # per-RM stages whose work goes to the task runner (flows/runner.py)


def _fanned_out(stage: str, rms: list[str], params_path: str | None) -> list:
    """Every RM's flow at once (threads waiting on the cluster, each its own copy of the context);
    states in RM order."""
    def one(rm: str):
        return flow_of(stage)(params_path=params_path, return_state=True, rm=rm)

    with ThreadPoolExecutor(max_workers=len(rms), thread_name_prefix=stage) as pool:
        futures = [pool.submit(contextvars.copy_context().run, one, rm) for rm in rms]
        return [f.result() for f in futures]


@flow(name="prbench-pipeline", log_prints=True)
def pipeline(params_path: str | None = None, until: str | None = None):
    """Run every stage in order (or up to and including `until`); stop at the first failure. On a
    cluster (`scale.task_runner` dask or ray) the RMs of a per-RM stage run at once."""
    params = load_params(params_path)
    rms, on_cluster = sorted(params["scoring"]["rms"]), scale_params(params)["task_runner"] != "local"
    for s in TABLE:
        if s.per_rm and on_cluster and s.name in FAN_OUT and len(rms) > 1:
            states = _fanned_out(s.name, rms, params_path)
        else:
            states = []
            for kwargs in ([{s.key_arg: k} for k in fan_keys(s, params)] if s.per_rm else [{}]):
                states.append(flow_of(s.name)(params_path=params_path, return_state=True, **kwargs))
                if states[-1].is_failed():
                    break
        failed = next((st for st in states if st.is_failed()), None)
        if failed:
            return Failed(message=f"{s.name}: {failed.message}")
        if s.name == until:
            break
    return "ok"


if __name__ == "__main__":
    sys.exit(main(pipeline))
