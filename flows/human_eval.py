"""human_eval: import annotators' ratings (or an LLM proxy's), unblind, test -> data/human_eval/"""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.core.artifacts import tree_hash
from tasks.stages.human_eval import stage
from tasks.ops.params import load_params

human_eval_task = stage_task("human_eval", stage.run)


@flow(name="human_eval", log_prints=True)
def human_eval_flow(params_path: str | None = None):
    params = load_params(params_path)
    p = params["human_eval"]
    # the annotators' files and the key wherever params put them: a new file must miss the cache
    return run_stage(human_eval_task, "human_eval", params, key_extra={"annotations": tree_hash([p["raw_dir"], p["key"]])})


if __name__ == "__main__":
    sys.exit(main(human_eval_flow))
