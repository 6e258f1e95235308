"""RL algorithms by name (params `rl.algorithm`; tasks/core/registry.py style): each builds trl 1.12's
trainer for one policy (tasks/downstream/rl/trainers.py). Adding one is a function registered here;
torch and trl load only when it trains, so listing and checking the names stays light."""
from __future__ import annotations

from dataclasses import dataclass

from tasks.core.registry import Registry

ALGORITHMS = Registry("RL algorithm")


@dataclass
class Job:
    """What every algorithm trains on: the loaded policy, its tokenizer and prompts, the reward."""
    policy: object
    folder: str
    kwargs: dict
    tok: object
    prompt_ids: list
    messages: list
    question_ids: list
    reward: object
    t: dict          # rl.train
    seed: int
    work: str        # trl's output folder (temporary)


@ALGORITHMS.register("ppo")
def ppo(job: Job):
    """PPO: a critic (the policy again, with a value head) learns beside the policy."""
    from tasks.downstream.rl import policy as pol
    from tasks.downstream.rl import trainers

    value = pol.load_policy(job.folder, job.kwargs, value_head=True)
    pol.select_trainable(value, job.t["train_layers"], head="score")
    return trainers.ppo(job.policy, value, job.tok, job.prompt_ids, job.question_ids, job.reward, job.t, job.seed,
                        job.work)


@ALGORITHMS.register("grpo")
def grpo(job: Job):
    from trl import GRPOConfig, GRPOTrainer

    return _group_relative(job, GRPOConfig, GRPOTrainer)


@ALGORITHMS.register("rloo")
def rloo(job: Job):
    from trl import RLOOConfig, RLOOTrainer

    return _group_relative(job, RLOOConfig, RLOOTrainer)


def _group_relative(job: Job, config, trainer_cls):
    from tasks.downstream.rl import trainers

    return trainers.group_relative(config, trainer_cls, job.policy, job.tok, job.messages, job.question_ids,
                                   job.reward, job.t, job.seed, job.work)
