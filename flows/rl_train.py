"""rl_train: the policy trained with one RM as its only reward -> data/rl/policies/<rm>/. DVC runs one per
RM (a foreach stage, like score); an RM that rl.rms leaves out or that is pairwise-only gets a small record."""
from __future__ import annotations

import os
import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout, rl
from tasks.artifacts import tree_hash
from tasks.params import load_params
from tasks.rl import train

INPUTS = {"questions": layout.INGEST["questions"], "ranked_profile": layout.PROFILES["ranked_profile"],
          "profile_context": layout.PROFILES["profile_context"], "inferred_rubrics": layout.RUBRICS["inferred_rubrics"]}


rl_train_task = stage_task("rl_train", lambda params, rm, inputs, out: train.run(params, rm, inputs, out))


# no log_prints, as in train_rm: dill's captured disassembly would land in the log
@flow(name="rl_train", flow_run_name="rl_train-{rm}")
def rl_train_flow(rm: str, params_path: str | None = None):
    params = load_params(params_path)
    p = rl.rl_params(params, rl.TRAIN_PARAMS)
    rms = params["scoring"]["rms"]
    # the cache key holds whether *this* RM is selected, not the whole list: listing another RM retrains nothing here
    mine = None if p["rms"] is None else ([rm] if train.selection(p, rm, rms) else [])
    used = {"common": params["common"], "llms": params.get("llms", {}), "rl": {**p, "rms": mine},
            "scoring": {"rms": {rm: rms.get(rm)}}}
    if p["strategy"] == "planner":   # which splits have planner rubrics (refused unless rl.train.splits are among them)
        used["rubrics"] = {"splits": params["rubrics"]["splits"]}
    present = {k: v for k, v in INPUTS.items() if os.path.exists(v)}
    extra = tree_hash(["prompts", layout.TRAIN_RM["model"]])   # prompt files, the trained BT model
    return run_stage_task(rl_train_task.with_options(task_run_name=f"rl_train-{rm}"),
                          args={"params": used, "rm": rm, "inputs": INPUTS},
                          key={"inputs": hashes(present), "extra": extra, "code": code_hash("rl_train")},
                          out=layout.rl_train(rm))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m flows.rl_train <rm name from params scoring.rms>")
    sys.exit(main(rl_train_flow, rm=sys.argv[1]))
