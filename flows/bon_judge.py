"""bon_judge: the rubric judge scores every distinct sampled answer once -> data/bon/judged.parquet"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import bon, layout
from tasks.bon import judge_stage
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "samples": bon.SAMPLE["samples"]}


bon_judge_task = stage_task("bon_judge", judge_stage.run)


@flow(name="bon_judge", log_prints=True)
def bon_judge_flow(params_path: str | None = None):
    params = load_params(params_path)
    p = bon.bon_params(params, bon.JUDGE_PARAMS)
    used = {"common": params["common"], "llms": params.get("llms", {}), "bon": p}
    prompt = {"judge": p["judge"]["prompt"]} if p["judge"].get("prompt") else {}
    return run_stage_task(bon_judge_task, args={"params": used, "inputs": INPUTS},
                          key={"prompt": hashes(prompt), "inputs": hashes(INPUTS), "code": code_hash("bon_judge")},
                          out=bon.JUDGE)


if __name__ == "__main__":
    sys.exit(main(bon_judge_flow))
