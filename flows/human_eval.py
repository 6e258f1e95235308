"""human_eval: import annotators' ratings (or an LLM proxy's), unblind, test -> data/human_eval/"""
from __future__ import annotations

import sys

from prefect import flow, task

from flows.common import STAGE_TASK, USER_ERRORS, as_failure, code_hash, hashes, main, run_stage_task
from tasks import layout
from tasks.artifacts import tree_hash
from tasks.human_eval import stage
from tasks.params import load_params


@task(name="human_eval", **STAGE_TASK)
def human_eval_task(params: dict, prompt_hashes: dict, input_hashes: dict, annotations: str, code: str, out: dict):
    try:
        metrics = stage.run(params, stage.INPUTS, out)
    except USER_ERRORS as exc:
        return as_failure(exc)
    return {"outputs": hashes(out), "metrics": metrics}


@flow(name="human_eval", log_prints=True)
def human_eval_flow(params_path: str | None = None):
    params = load_params(params_path)
    used = {k: params[k] for k in ("common", "llms", "human_eval")}
    p = params["human_eval"]
    # the annotators' files and the key are inputs too: a new file must miss the cache
    return run_stage_task(human_eval_task, params=used, prompt_hashes=hashes({"proxy": p["proxy_prompt"]}),
                          input_hashes=hashes(stage.INPUTS), annotations=tree_hash([p["raw_dir"], p["key"]]),
                          code=code_hash("human_eval"), out=layout.HUMAN_EVAL)


if __name__ == "__main__":
    sys.exit(main(human_eval_flow))
