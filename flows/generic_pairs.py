"""generic_pairs: the baseline benchmark (same chosen, a non-personalised rejected) -> data/pairs/generic.parquet"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import generic_pairs, layout
from tasks.params import load_params, stage_params

INPUTS = {"questions": layout.INGEST["questions"], "selected_pairs": layout.PAIRS["selected_pairs"]}


def prompt_files(params: dict) -> dict:
    files = {"generic": params["generic_pairs"]["prompt"]} if params["generic_pairs"]["mode"] == "generate" else {}
    if params["pairs"]["judge"].get("prompt"):
        files["judge"] = params["pairs"]["judge"]["prompt"]
    return files


generic_pairs_task = stage_task("generic_pairs", generic_pairs.run)


@flow(name="generic_pairs", log_prints=True)
def generic_pairs_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {"common": params["common"], "llms": params.get("llms", {}),
            "generic_pairs": stage_params(params, "generic_pairs"), "pairs": {"judge": params["pairs"]["judge"]}}
    return run_stage_task(generic_pairs_task, args={"params": used, "inputs": INPUTS},
                          key={"prompts": hashes(prompt_files(params)), "inputs": hashes(INPUTS),
                               "code": code_hash("generic_pairs")}, out=layout.GENERIC_PAIRS)


if __name__ == "__main__":
    sys.exit(main(generic_pairs_flow))
