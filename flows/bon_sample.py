"""bon_sample: the policy's N answers per test question -> data/bon/samples.parquet"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import bon, layout
from tasks.bon import sample
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "ranked_profile": layout.PROFILES["ranked_profile"]}


bon_sample_task = stage_task("bon_sample", sample.run)


@flow(name="bon_sample", log_prints=True)
def bon_sample_flow(params_path: str | None = None):
    params = load_params(params_path)
    p = bon.bon_params(params, bon.SAMPLE_PARAMS)
    used = {"common": params["common"], "llms": params.get("llms", {}), "bon": p}
    return run_stage_task(bon_sample_task, args={"params": used, "inputs": INPUTS},
                          key={"prompt": hashes({"policy": p["prompt"]}), "inputs": hashes(INPUTS),
                               "code": code_hash("bon_sample")}, out=bon.SAMPLE)


if __name__ == "__main__":
    sys.exit(main(bon_sample_flow))
