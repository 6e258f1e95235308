"""pairs: generate chosen/rejected, judge every pair source, select what scoring reads -> data/pairs/"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout, pairs
from tasks.params import load_params

INPUTS = {"questions": layout.INGEST["questions"], "reference_pairs": layout.INGEST["pairs"],
          "ranked_profile": layout.PROFILES["ranked_profile"]}


def prompt_files(p: dict) -> dict:
    files = {"chosen": p["chosen_prompt"], "rejected": p["rejected_prompt"]}
    if p["judge"].get("prompt"):
        files["judge"] = p["judge"]["prompt"]
    return files


pairs_task = stage_task("pairs", pairs.run)


@flow(name="pairs", log_prints=True)
def pairs_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {k: params[k] for k in ("common", "llms", "pairs")}
    return run_stage_task(pairs_task, args={"params": used, "inputs": INPUTS},
                          key={"prompts": hashes(prompt_files(params["pairs"])), "inputs": hashes(INPUTS),
                               "code": code_hash("pairs")}, out=layout.PAIRS)


if __name__ == "__main__":
    sys.exit(main(pairs_flow))
