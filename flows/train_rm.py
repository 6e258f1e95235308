"""train_rm: a Bradley-Terry RM on the train split's selected pairs -> data/models/bradley-terry/"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout, train_rm
from tasks.params import load_params

INPUTS = {"selected_pairs": layout.PAIRS["selected_pairs"], "questions": layout.INGEST["questions"],
          "profile_context": layout.PROFILES["profile_context"]}


def stage_inputs(p: dict) -> dict:
    """The planner strategy also reads the inferred rubrics; the others do not depend on them."""
    return {**INPUTS, "inferred_rubrics": layout.RUBRICS["inferred_rubrics"]} if p["strategy"] == "planner" else INPUTS


train_rm_task = stage_task("train_rm", train_rm.run)


# no log_prints: Prefect's print-to-log would catch the disassembly dill prints into its own captured
# stdout while `datasets` fingerprints a function (bytecode lines in the log, and dill sees no globals)
@flow(name="train_rm")
def train_rm_flow(params_path: str | None = None):
    from tasks.encoders import resolve_model

    params = load_params(params_path)
    used = {**{k: params[k] for k in ("common", "train_rm")},
            "scoring": {"splits": params["scoring"]["splits"]}}   # refused when train_rm.splits overlaps them
    backbone = resolve_model(used["train_rm"]["backbone"])[1]   # local weights hash: new weights, new run
    inputs = stage_inputs(used["train_rm"])
    return run_stage_task(train_rm_task, args={"params": used, "inputs": inputs},
                          key={"inputs": hashes(inputs), "backbone": backbone, "code": code_hash("train_rm")},
                          out=layout.TRAIN_RM)


if __name__ == "__main__":
    sys.exit(main(train_rm_flow))
