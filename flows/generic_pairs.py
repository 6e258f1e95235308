"""generic_pairs: the baseline benchmark (same chosen, a non-personalised rejected) -> data/pairs/generic.parquet"""
from __future__ import annotations

import sys

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import generic_pairs, layout
from tasks.params import load_params, stage_params

INPUTS = {"questions": layout.INGEST["questions"], "selected_pairs": layout.PAIRS["selected_pairs"]}


def prompt_files(params: dict) -> dict:
    files = {"generic": params["generic_pairs"]["prompt"]} if params["generic_pairs"]["mode"] == "generate" else {}
    if params["pairs"]["judge"].get("prompt"):
        files["judge"] = params["pairs"]["judge"]["prompt"]
    return files


@task(name="generic_pairs", **STAGE_TASK)
def generic_pairs_task(params: dict, prompt_hashes: dict, input_hashes: dict, code: str, out: dict):
    try:
        metrics = generic_pairs.run(params, INPUTS, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="generic_pairs", log_prints=True)
def generic_pairs_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": params["common"], "llms": params.get("llms", {}),
            "generic_pairs": stage_params(params, "generic_pairs"), "pairs": {"judge": params["pairs"]["judge"]}}
    return run_stage_task(generic_pairs_task, params=used, prompt_hashes=hashes(prompt_files(params)),
                          input_hashes=hashes(INPUTS), code=code_hash("generic_pairs"), out=layout.GENERIC_PAIRS)


if __name__ == "__main__":
    sys.exit(main(generic_pairs_flow))
