"""Downstream RL: does an RM's ranking help when it is the only reward a policy is trained on?
(the paper's PPO validation; PPO, GRPO or RLOO with trl 1.12)

rl_train@<rm>  trains the policy on the train split's questions + the user's top posts, with that RM
               as the reward through the leaderboard's own scorer and strategy contexts (reward.py,
               train.py), for each RM rl.rms lists; one that is not RL-capable gets a small record instead
rl_eval        every trained policy and the untrained one answer the test questions through the LLM
               layer (greedy, or sampled at rl.eval.temperature); the rubric judge of BoN scores each
               distinct answer once, and every question counts (evaluate.py)

The keys each stage reads are listed here: they are its Prefect cache key and its dvc.yaml `params`,
so changing the eval budget never retrains and adding an RM trains only that RM.
"""
from tasks.core.layout import RL_EVAL as EVAL  # noqa: F401 - the paths live in tasks/core/layout.py
from tasks.core.layout import RL_POLICIES_DIR as POLICIES_DIR  # noqa: F401
from tasks.core.layout import rl_train as train_outputs  # noqa: F401

from tasks.core.stage_table import RL_EVAL_PARAMS as EVAL_PARAMS  # noqa: F401 - the table declares them
from tasks.core.stage_table import RL_PROMPT_KEYS as PROMPT_KEYS  # noqa: F401
from tasks.core.stage_table import RL_TRAIN_PARAMS as TRAIN_PARAMS  # noqa: F401
NOT_CAPABLE, TRAINED = "not RL-capable", "trained"


def rl_params(params: dict, keys: tuple[str, ...]) -> dict:
    from tasks.core.params import group_keys

    return group_keys(params, "rl", keys)
