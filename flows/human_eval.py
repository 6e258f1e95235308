"""human_eval: import annotators' ratings (or an LLM proxy's), unblind, test -> data/human_eval/"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout
from tasks.artifacts import tree_hash
from tasks.human_eval import stage
from tasks.params import load_params


human_eval_task = stage_task("human_eval", stage.run)


@flow(name="human_eval", log_prints=True)
def human_eval_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {k: params[k] for k in ("common", "llms", "human_eval")}
    p = params["human_eval"]
    # the annotators' files and the key are inputs too: a new file must miss the cache
    return run_stage_task(human_eval_task, args={"params": used, "inputs": stage.INPUTS},
                          key={"prompts": hashes({"proxy": p["proxy_prompt"]}), "inputs": hashes(stage.INPUTS),
                               "annotations": tree_hash([p["raw_dir"], p["key"]]), "code": code_hash("human_eval")},
                          out=layout.HUMAN_EVAL)


if __name__ == "__main__":
    sys.exit(main(human_eval_flow))
