"""pairs: generate chosen/rejected, judge every pair source, select what scoring reads -> data/pairs/"""
from __future__ import annotations

import sys

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import layout, pairs
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "reference_pairs": layout.INGEST["pairs"],
          "ranked_profile": layout.PROFILES["ranked_profile"]}


def prompt_files(p: dict) -> dict:
    files = {"chosen": p["chosen_prompt"], "rejected": p["rejected_prompt"]}
    if p["judge"].get("prompt"):
        files["judge"] = p["judge"]["prompt"]
    return files


@task(name="pairs", **STAGE_TASK)
def pairs_task(params: dict, prompt_hashes: dict, input_hashes: dict, code: str, out: dict):
    try:
        metrics = pairs.run(params, INPUTS, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="pairs", log_prints=True)
def pairs_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {k: params[k] for k in ("common", "llms", "pairs")}
    return run_stage_task(pairs_task, params=used, prompt_hashes=hashes(prompt_files(params["pairs"])),
                          input_hashes=hashes(INPUTS), code=code_hash("pairs"), out=layout.PAIRS)


if __name__ == "__main__":
    sys.exit(main(pairs_flow))
