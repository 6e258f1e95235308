"""The one reward every RL algorithm uses: a registry RM scores (question, context, completion) with
the leaderboard's own scorer (`RewardModel.score_answers`) and the strategy's context
(`tasks.models.strategies.contexts`), so RL optimises exactly the numbers the benchmark ranks.

A call that raises, a missing score or a non-finite one is a failure: counted in its step and, as in
Best-of-N, counted as the worst pick, never skipped: the rollout keeps its place in the update with the
lowest finite reward the RM gave that question in the step (else the step's lowest, else the lowest of
the run so far; FAILED_RULE) — never a default like the release's 0.5, which can rank a failure above
real answers. An RM with no finite reward yet has no worst to give: the run stops, as it does once more
than `max_failures` have failed (RewardFailures)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tasks.core.errors import DataError


FAILED_RULE = ("a failed, missing or non-finite reward counts as the worst: the lowest finite reward of the same "
               "question in its step, else of the step, else of the run so far; the rollout stays in the update")


class RewardFailures(DataError):
    """The RM failed more often than rl.max_reward_failures allows: the run stops, nothing is saved."""


@dataclass
class Step:
    rollouts: int
    failures: int
    mean: float | None     # over the RM's own finite rewards of the step (failures left out)
    std: float | None
    errors: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)   # the finite rewards, for the learning figure's CI


def rl_capable(rm) -> bool:
    """RL needs a score for one answer alone: BoN's test (pairwise-only kinds lack score_answers)."""
    from tasks.models.rms.registry import pointwise_kind

    return pointwise_kind({"kind": rm.kind})


def _release_reward(value: float | None) -> float:
    """PPO/reward_function.py:51-60: the server's score / 10; any error (here also a missing or non-finite
    score) becomes 0.5 (bug kept: a failure reads as a middling answer)."""
    return value / 10 if value is not None and math.isfinite(value) else 0.5


def _reward(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


REWARD = {"corrected": _reward, "release": _release_reward}   # common.fidelity: the RM score as PPO's reward


class RMReward:
    def __init__(self, rm, questions: dict[str, str], context: dict[str, str], max_failures: int,
                 fidelity: str = "corrected"):
        from tasks.core.fidelity import pick

        self.rm, self.questions, self.context = rm, questions, context
        self.to_reward = pick(REWARD, fidelity)
        self.max_failures = int(max_failures)
        self.steps: list[Step] = []
        self.lowest: float | None = None   # the lowest finite reward of the run so far

    @property
    def failures(self) -> int:
        return sum(s.failures for s in self.steps)

    def items(self, question_ids: list[str], completions: list[str]) -> list[tuple[str, str, str]]:
        """Exactly what the leaderboard's scorer sees for this (question, user, answer)."""
        return [(self.questions[q], self.context[q], c) for q, c in zip(question_ids, completions)]

    def __call__(self, question_ids: list[str], completions: list[str]) -> list[float]:
        """One step's rewards, a failed one counted as the worst (FAILED_RULE)."""
        errors: list[str] = []
        try:
            scored = self.rm.score_answers(self.items(question_ids, completions))
            values = [s.score for s in scored]
            if len(values) != len(completions):
                raise ValueError(f"{len(values)} scores for {len(completions)} completions")
        except Exception as exc:   # counted and reported, and the run stops above the budget
            errors.append(f"{type(exc).__name__}: {exc}")
            values = [None] * len(completions)
        bad = sum(v is None or not math.isfinite(v) for v in values)
        rewards = [self.to_reward(v) for v in values]
        if bad and not errors:
            errors.append(f"{bad} missing or non-finite score(s)")
        finite = np.array([r for r, v in zip(rewards, values) if v is not None and math.isfinite(v)], dtype=float)
        self.steps.append(Step(len(rewards), bad, float(finite.mean()) if finite.size else None,
                               float(finite.std()) if finite.size else None, errors, finite.tolist()))
        if finite.size:
            self.lowest = min(float(finite.min()), self.lowest if self.lowest is not None else math.inf)
        if self.failures > self.max_failures:
            raise RewardFailures(f"reward model '{self.rm.name}'",
                                 f"{self.failures} failed reward(s) in {len(self.steps)} step(s), more than "
                                 f"rl.max_reward_failures={self.max_failures}; last: {errors[0]}")
        return self.worst_for_failures(question_ids, rewards, errors)

    def worst_for_failures(self, question_ids: list[str], rewards: list, errors: list[str]) -> list[float]:
        if self.lowest is None and None in rewards:
            raise RewardFailures(f"reward model '{self.rm.name}'", "no finite reward yet to count its failures "
                                 f"as the worst in step {len(self.steps)}; last: {errors[0]}")
        step = min((r for r in rewards if r is not None), default=self.lowest)
        same = {}
        for q, r in zip(question_ids, rewards):
            if r is not None:
                same[q] = min(r, same.get(q, r))
        return [r if r is not None else same.get(q, step) for q, r in zip(question_ids, rewards)]

    def reward_func(self):
        """The GRPO/RLOO form: (prompts, completions, question_id, **columns) -> rewards."""
        def reward(prompts, completions, question_id, **_):
            texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
            return self(list(question_id), [t.strip() for t in texts])
        reward.__name__ = "rm"
        return reward


def reward_change(steps: list[Step], rng: np.random.Generator, b: int = 1000, ci: float = 0.95) -> dict | None:
    """Did the policy learn its reward? The mean reward of the last quarter of the updates (at least one)
    minus that of the first quarter, with a percentile-bootstrap CI over the rollouts (resampled within each
    window); None with fewer than two updates. A CI above 0 says the policy moved towards its reward."""
    if len(steps) < 2:
        return None
    w = max(1, len(steps) // 4)
    first = np.array([v for s in steps[:w] for v in s.values])
    last = np.array([v for s in steps[-w:] for v in s.values])
    if not len(first) or not len(last):
        return None
    boot = (rng.choice(last, (b, len(last))).mean(axis=1) - rng.choice(first, (b, len(first))).mean(axis=1))
    lo, hi = np.quantile(boot, [(1 - ci) / 2, (1 + ci) / 2])
    r6 = lambda x: round(float(x), 6)  # noqa: E731
    return {"window_updates": w, "first": r6(first.mean()), "last": r6(last.mean()),
            "change": r6(last.mean() - first.mean()), "ci_low": r6(lo), "ci_high": r6(hi), "ci": ci,
            "rollouts": [int(len(first)), int(len(last))], "excludes_zero": bool(lo > 0 or hi < 0)}
