"""rl_train: the policy trained with one RM as its only reward -> data/rl/policies/<rm>/. DVC runs one per
RM (a foreach stage, like score); an RM that rl.rms leaves out or that is pairwise-only gets a small record."""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import per_rm_main, run_stage, stage_task
from tasks.ops.params import load_params
from tasks.downstream.rl import train
from tasks.core.stage_table import used_params

rl_train_task = stage_task("rl_train", lambda params, rm, inputs, out: train.run(params, rm, inputs, out))


# no log_prints, as in train_rm: dill's captured disassembly would land in the log
@flow(name="rl_train", flow_run_name="rl_train-{rm}")
def rl_train_flow(rm: str, params_path: str | None = None):
    params = load_params(params_path)
    used = used_params(params, "rl_train", rm)
    p = used["rl"]
    # the cache key holds whether *this* RM is selected, not the whole list: listing another RM retrains nothing here
    p["rms"] = None if p["rms"] is None else ([rm] if train.selection(p, rm, params["scoring"]["rms"]) else [])
    return run_stage(rl_train_task, "rl_train", params, rm=rm, used=used)


if __name__ == "__main__":
    sys.exit(per_rm_main(rl_train_flow))
