"""The params schema, part 2: downstream (BoN, RL, correlation), releases, the report; and the whole
file (`Root`: every group, unknown groups refused)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tasks.core.params.schema import (EMBEDDING_JUDGE, SMOLLM2, BenchmarkEntry, F, Common, GenericPairs, Group, HumanEval,
                                 Explain, Ingest, Leaderboard, LlmName, Pairs, Profiles, Rubrics, Scale, Scoring, Strategy,
                                 TrainRm)


class Bon(Group):
    policy_llm: LlmName = F("smollm2", "the policy: a name under llms (paper: Qwen2.5-0.5B-Instruct)")
    prompt: str = F("prompts/bon_policy.txt", "question + top posts only: never the rubric or narrative")
    system_prompt: str | None = F(None, "the policy's system message (null = none; the release's is in params-paper.yaml)")
    n: int = F(4, "samples per test question (paper 16)", ge=1)
    temperature: float = F(1.0, "sampling temperature", ge=0)
    top_p: float = F(0.9, "nucleus sampling", gt=0, le=1)
    max_tokens: int = F(128, "reply budget in tokens", ge=1)
    max_words: int = F(100, "the length the prompt asks for", ge=1)
    profile_k: int = F(4, "posts shown to the policy (paper 10)", ge=0)
    max_words_per_post: int = F(60, "words per post shown to the policy", ge=1)
    splits: list[str] = F(["test"], "splits whose questions are answered", min_length=1)
    domains: list[str] | None = F(None, "null = all, or e.g. [Art, Lifestyle]", min_length=1)
    questions_limit: int | None = F(3, "cost control: first N questions of each domain (null = all)", ge=1)
    judge: dict = F({**EMBEDDING_JUDGE, "prompt": "prompts/judge_all.txt"}, "the rubric judge, same shape as pairs.judge")
    strategy: Strategy = F("raw_profile", "what each RM sees of the user")
    max_k: int = F(4, "k = 1, 2, 4, ... <= max_k", ge=1)
    bootstrap: int = F(1000, "question resamples for the CIs", ge=1)
    ci: float = F(0.95, "confidence level", gt=0, lt=1)


class RlPolicy(Group):
    model: str = F("embedded:smollm2-135m", "embedded:<name>, a .gguf, a folder or a hub id")
    revision: str | None = F(None, "hub revision")


class RlTrain(Group):
    splits: list[str] = F(["train"], "splits whose questions are training prompts", min_length=1)
    questions_limit: int | None = F(None, "first N questions per domain (null = all)", ge=1)
    per_domain: bool = F(False, "one policy per domain (the release: per RM and domain), or one pooled")
    updates: int | None = F(12, "updates = rollout batches (null = epochs over the questions)", ge=1)
    epochs: int = F(1, "epochs when updates is null", ge=1)
    batch_size: int = F(4, "rollouts per update (paper 128)", ge=1)
    mini_batch_size: int | None = F(4, "rollouts per optimizer step: batch_size / mini_batch_size steps per update "
                                       "(verl's ppo_mini_batch_size; paper 16)", ge=1)
    micro_batch_size: int = F(4, "rollouts per forward/backward; mini_batch_size is a multiple", ge=1)
    num_generations: int = F(4, "grpo/rloo: completions per prompt (a divisor of batch_size)", ge=1)
    ppo_epochs: int = F(1, "ppo: epochs over each batch", ge=1)
    response_length: int = F(24, "new tokens per rollout (paper 512)", ge=1)
    temperature: float = F(1.0, "rollout temperature", ge=0)
    actor_lr: float = F(5.0e-4, "policy learning rate", gt=0)
    critic_lr: float = F(1.0e-4, "ppo value model learning rate", gt=0)
    lr_schedule: Literal["constant", "linear"] = F("constant", "constant (verl's default) | linear (decays to 0: trl's)")
    kl_coef: float = F(0.0, "ppo kl_coef / grpo, rloo beta", ge=0)
    lam: float = F(0.95, "ppo: GAE lambda", ge=0, le=1)
    cliprange_value: float = F(0.2, "ppo: value clip", gt=0)
    train_layers: int | None = F(2, "train the top N decoder layers + final norm (null = all)", ge=1)


class RlEval(Group):
    splits: list[str] = F(["test"], "splits the policies answer", min_length=1)
    questions_limit: int | None = F(1, "first N test questions per domain (null = all)", ge=1)
    max_tokens: int = F(24, "answer budget, as rl.train.response_length", ge=1)
    temperature: float = F(0.0, "0 = greedy; > 0 samples one answer per question, seeded (the release samples)", ge=0)
    top_p: float = F(1.0, "nucleus sampling of the answers", gt=0, le=1)
    profile_k: int | None = F(None, "posts in the answer prompt (null = rl.profile_k; the release answers with 5)", ge=0)
    bootstrap: int = F(1000, "resamples for the CIs", ge=1)
    ci: float = F(0.95, "confidence level", gt=0, lt=1)


class Rl(Group):
    rms: list[str] = F([], "the RMs RL trains, one rl_train@<rm> stage each (names under scoring.rms; [] = none)")
    algorithm: str = F("grpo", "trl 1.12's trainer (paper: ppo)")
    policy: RlPolicy = F(RlPolicy(), "the policy trained")
    prompt: str = F("prompts/bon_policy.txt", "question + top posts only: never the rubric or narrative")
    system_prompt: str | None = F(None, "the policy's system message (null = none), in training and evaluation")
    max_words: int = F(25, "the length the prompt asks for", ge=1)
    profile_k: int = F(1, "posts in the prompt", ge=0)
    max_words_per_post: int = F(30, "words per post in the prompt", ge=1)
    strategy: Strategy = F("raw_profile", "what the RM sees of the user")
    max_reward_failures: int = F(2, "failed or non-finite rewards (each counted as the worst of its update) tolerated "
                                    "before the run stops", ge=0)
    seeds: int = Field(1, ge=1, description="policies trained per RM, seeded common.seed, +1, ...: RL's score per RM is "
                                            "their mean and the spread over seeds is reported (1 = one seed, no spread)")
    train: RlTrain = F(RlTrain(), "training")
    eval: RlEval = F(RlEval(), "evaluation")


class Primary(Group):
    benchmark: Literal["personalised", "generic"] = F("personalised", "the benchmark of the one pre-registered test")
    strategy: Strategy = F("raw_profile", "whose accuracy ranks the RMs in it")
    method: str = F("bon", "the downstream method (bon, rl)")
    statistic: Literal["pearson", "spearman", "kendall_tau_b"] = F("pearson", "the correlation tested")
    alternative: Literal["greater", "less", "two-sided"] = F("greater", "H1: greater = the benchmark predicts")
    alpha: float = Field(0.05, gt=0, lt=1, description="the test's level (significant: p < alpha)")
    rms: list[str] = F(["ladder-*"], "the RMs in it: names or fnmatch patterns over scoring.rms", min_length=1)


class Power(Group):
    effect: float = Field(0.9, gt=0.5, lt=1, description="assumed effect: share of benchmark pairs on which the "
                                                           "good signal alone prefers the chosen answer")
    pairs: int = Field(15, ge=2, description="planned benchmark pairs per RM (`prbench power`)")
    questions: int = Field(15, ge=1, description="planned downstream questions (`prbench power`)")
    simulations: int = Field(1000, ge=50, description="simulated runs")
    flips: int = Field(199, ge=19, description="label flips per simulated test")


class Correlation(Group):
    strategy: Strategy = F("raw_profile", "whose accuracy ranks the RMs")
    split: str | None = F("test", "null = every split")
    benchmarks: list[str] = F(["personalised", "generic"], "benchmarks ranked: personalised, generic, and "
                              "<entry>:published for a `benchmarks:` entry by its publisher's own score (labelled); "
                              "every entry is also ranked by prbench's list-wise score", min_length=1)
    tie_policy: Literal["strict", "half"] = F("strict", "strict | half ('drop' refused: every question counts)")
    downstream: list[str] = F(["bon", "rl"], "downstream methods compared with (the downstream registry: bon, rl)",
                                 min_length=1)
    bon_method: Literal["expected", "first_k"] = F("expected", "BoN's best-of-k rule")
    bon_k: int | None = F(None, "null = the largest k", ge=1)
    exclude_rms: list[str] = F(["(oracle)", "(random)"], "never correlated")
    include_null_baselines: bool = F(True, "length and random RMs count as RMs")
    rbo_p: float = F(0.9, "RBO persistence", gt=0, lt=1)
    min_rms: int = F(5, "below this many RMs a correlation says 'too few RMs': no value, CI or p claimed", ge=3)
    comparisons: list[list[str]] = F([["personalised", "generic"]], "paired tests: does the first benchmark predict "
                                                                    "downstream better than the second?")
    bootstrap: int = F(1000, "resamples for the CIs", ge=1)
    permutations: int = F(9999, "permutation test size (exact when n! <= this)", ge=1)
    ci: float = F(0.95, "confidence level", gt=0, lt=1)
    baselines: list[str] = F([], "CSV/Parquet under data/external/: rm, benchmark, accuracy")
    downstream_tables: list[str] = F([], "CSV/Parquet under data/external/: rm, method, score")
    primary: Primary = F(Primary(), "the pre-registered primary test (all else exploratory)")
    power: Power = F(Power(), "the design `prbench power` simulates")


class Releases(Group):
    port: int = F(4200, "the local Prefect server and UI of `prbench serve`", ge=1, le=65535)
    reproduce_cron: str | None = F("0 3 * * *", "the reproduce deployment's schedule (null = by hand only)")
    watch_cron: str = F("0 * * * *", "how often the release watcher looks")
    branch: str | None = F(None, "commits go to this branch (null = the checked-out one)")
    rank_strategy: Strategy = F("raw_profile", "whose micro accuracy ranks a released RM in its note")
    entry: dict = F({"kind": "seq-cls"}, "options of each released RM's scoring.rms entry")
    watch: list[dict] = F([], "rules: {source: local, path} | {source: hub, author, search, ...}")


class Report(Group):
    title: str = F("Personalized RewardBench: run report", "the page's title")
    reference_params: dict[str, str] = F({}, "label -> params file the page compares this run with")


class Root(BaseModel):
    """The whole params file: every group of the pipeline."""
    model_config = {"extra": "forbid"}
    common: Common = F(Common(), "shared by every stage")
    scale: Scale = F(Scale(), "where per-RM work runs")
    ingest: Ingest = F(Ingest(), "the ingest stage")
    profiles: Profiles = F(Profiles(), "the profiles stage (retrieval)")
    llms: dict[str, dict] = F({"smollm2": SMOLLM2}, "named LLMs: name -> {backend: ..., model: ..., options}",
                             min_length=1)
    rubrics: Rubrics = F(Rubrics(), "the rubrics stage (planner)")
    pairs: Pairs = F(Pairs(), "the pairs stage")
    human_eval: HumanEval = F(HumanEval(), "the human_eval stage")
    generic_pairs: GenericPairs = F(GenericPairs(), "the generic_pairs stage (a baseline benchmark)")
    train_rm: TrainRm = F(TrainRm(), "the train_rm stage")
    scoring: Scoring = F(Scoring(), "the score stages")
    benchmarks: dict[str, BenchmarkEntry] = F({}, "other benchmarks through the same scorer: name -> entry "
                                                  "(a bench_score@<name> stage each)", names=True)
    leaderboard: Leaderboard = F(Leaderboard(), "the leaderboard stage")
    explain: Explain = F(Explain(), "the explain stage: error analysis and the pair explorer")
    bon: Bon = F(Bon(), "the Best-of-N stages")
    rl: Rl = F(Rl(), "the RL stages")
    correlation: Correlation = F(Correlation(), "the correlation stage")
    releases: Releases = F(Releases(), "`prbench serve`: scheduled reruns and released RMs")
    report: Report = F(Report(), "the report stage")
