"""The params schema, part 1: the data and benchmark groups. One model per params.yaml group, each
field with its type, default and a one-line doc (`prbench params --doc` prints them). Entries of a
pluggable kind (an LLM, an RM, a rubric judge) are checked by their registry (see check.py)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Strategy = str      # a profile strategy name: checked against the strategy registry (check.py)
LlmName = str       # a name under `llms`: checked across groups (check.py)


def F(default, doc: str):
    return Field(default, description=doc)


EMBEDDING_JUDGE = {"kind": "embedding", "encoder": "embedded:all-MiniLM-L6-v2", "partly": 0.35, "well": 0.5,
                   "prompt": "prompts/judge_aspect.txt", "max_tokens": 128}
SMOLLM2 = {"backend": "llamacpp", "model": "embedded:smollm2-135m", "n_ctx": 4096, "n_threads": 1}


class Group(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Common(Group):
    cache_dir: str = F(".prbench-cache", "embeddings and LLM calls, keyed by content hash (gitignored)")
    seed: int = F(2604, "every random choice (sampling, bootstrap, A/B order) derives from it")
    torch_threads: int = F(2, "one torch thread count in every stage: other counts round reductions differently")


class Scale(Group):
    task_runner: str = F("local", "where per-RM / per-chunk work runs")
    address: str | None = F(None, "an existing cluster (tcp://head:8786, ray://head:10001); null = local")
    root: str | None = F(None, "the project's absolute path as workers see it (null = the same path as here)")
    chunk_size: int = F(256, "pairs (score) or distinct answers (bon_score) per task; sets batch mates")


class RlPrompts(Group):
    source: str = F("hub", "files | hub, as ingest.source")
    hub_id: str = F("alireza7/LaMP-QA", "the hub dataset when source is hub")
    path: str | None = F(None, "with source files: a folder of {Config}_train.json (official download)")
    splits: list[Literal["train", "validation", "test"]] = F(["train"], "splits read from it: none of ingest.splits")
    limit_per_split: int | None = F(None, "cost control: the first N good rows per file")


class Ingest(Group):
    source: str = F("files", "read local files or a hub dataset")
    path: str = F("data/sample/rewardbench", "a file or folder: {Config}_{split}.json|jsonl|parquet, {Config}/{split}-*.parquet")
    hub_id: str = F("alireza7/LaMP-QA", "the hub dataset when source is hub")
    layout: Literal["auto", "lamp_qa", "rewardbench"] = F("auto", "rewardbench: rows carry chosen/rejected")
    configs: list[str] = F(["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"],
                           "LaMP-QA configs (domains) to read")
    splits: list[Literal["train", "validation", "test"]] = F(["train", "test"], "splits to read")
    on_error: Literal["fail", "quarantine"] = F("fail", "quarantine: bad rows go to data/ingest/quarantine.parquet")
    limit_per_split: int | None = F(None, "cost control: keep the first N good rows per file")
    pair_source: str = F("sample", "label recorded as generator 'reference:<label>' on ingested pairs")
    downstream_share: float = Field(0.5, ge=0, lt=1, description=(
        "share of each domain's test questions kept for BoN and RL evaluation, apart from the scored ones "
        "(seeded hash; 0 = no split: every question in both)"))
    rl_prompts: RlPrompts | None = F(None, "a second source for RL training prompts only (questions and profiles; "
                                           "narrative and rubric dropped): null = RL reads ingest.splits")


class Profiles(Group):
    retriever: str = F("dense", "a retriever name (dense | bm25)")
    encoder: str = F("embedded:all-MiniLM-L6-v2", "any HF encoder id or path, e.g. facebook/contriever-msmarco")
    k: int = F(10, "top-k posts kept per question")
    context_k: int = F(4, "of those, how many form the profile text RMs see (raw_profile)")
    max_words_per_post: int = F(60, "per post in the formatted profile text")
    batch_size: int = F(64, "encoder batch size")


class TextGen(Group):
    """What every LLM-writing step shares: its LLM, budget and parse retries."""
    llm: LlmName = F("smollm2", "a name under llms")
    temperature: float = F(0.0, "sampling temperature")
    max_tokens: int = F(140, "reply budget in tokens")
    parse_retries: int = F(2, "retries of a reply that does not parse, then invalid (raw text kept)")
    temperature_bump: float = F(0.3, "added to the temperature on each parse retry")


class Rubrics(TextGen):
    prompt: str = F("prompts/planner.txt", "the planner's prompt file")
    splits: list[str] = F(["test"], "splits the planner infers aspects for")
    questions_limit: int | None = F(None, "cost control: first N questions")
    per_domain_limit: int | None = F(None, "cost control: first N questions per domain (null = all); planner rows "
                                           "missing for a scored pair are counted as planner_failed")
    profile_k: int = F(4, "posts shown to the planner (= profiles.context_k: same posts as raw_profile)")
    max_words_per_post: int = F(60, "words per post shown to the planner")
    max_aspects: int = F(6, "aspects kept per question")
    max_tokens: int = F(120, "reply budget in tokens")
    match_encoder: str = F("embedded:all-MiniLM-L6-v2", "encoder matching inferred to gold aspects")
    match_threshold: float = F(0.6, "cosine above which an inferred aspect matches a gold one")


class Pairs(TextGen):
    source: Literal["reference", "generate"] = F("reference", "what scoring reads: ingested or generated pairs")
    generate: bool = F(True, "generate (and judge) pairs even when scoring reads the reference ones")
    chosen_prompt: str = F("prompts/pair_chosen.txt", "prompt of the answer that follows the rubric")
    rejected_prompt: str = F("prompts/pair_rejected.txt", "prompt of the answer that violates it")
    splits: list[str] = F(["train", "test"], "splits judged and selected")
    generate_splits: list[str] = F(["test"], "splits the LLM writes pairs for")
    generate_per_domain: int | None = F(4, "cost control: first N questions per domain (null = all)")
    questions_limit: int | None = F(None, "cost control: first N questions")
    profile_k: int = F(5, "posts shown to the writer")
    max_words_per_post: int = F(60, "words per post shown to the writer")
    max_words: int = F(100, "the answer length the prompt asks for")
    top_p: float = F(1.0, "nucleus sampling")
    keep_invalid: bool = F(True, "keep pairs the judge finds invalid in the selected set")
    judge: dict = F(EMBEDDING_JUDGE, "the rubric judge (kind embedding | llm), also BoN's")


class HumanEval(Group):
    splits: list[str] = F(["test"], "splits annotators rate")
    raw_dir: str = F("data/human_eval/input/raw", "annotators' files: .csv, .jsonl, Label Studio .json")
    key: str = F("data/human_eval/input/key.parquet", "the unblinding key (written by prbench human-eval export)")
    on_error: Literal["fail", "quarantine"] = F("fail", "quarantine: bad rows to data/human_eval/quarantine.parquet")
    profile_max_words: int = F(120, "profile excerpt shown to annotators and the proxy")
    proxy: Literal["auto", "always", "never"] = F("auto", "the LLM proxy: only while no human rated | always | never")
    proxy_llm: LlmName = F("smollm2", "a name under llms")
    proxy_prompt: str = F("prompts/annotator.txt", "the proxy's prompt file")
    proxy_verdict: Literal["form", "logprobs"] = F(
        "form", "form: one reply filling the four-line form | logprobs: one short prompt per dimension, the most "
                "likely digit 1-5 (always parses; for a small local model)")
    proxy_limit: int = F(3, "pairs the proxy rates (the humans' items first)")
    proxy_temperature: float = F(0.0, "the proxy's temperature")
    proxy_max_tokens: int = F(40, "the proxy's reply budget")
    parse_retries: int = F(2, "retries of a reply that does not parse")
    temperature_bump: float = F(0.3, "added to the temperature on each parse retry")
    general_gap_max: float = F(0.5, "parity: mean per-item |chosen-rejected| over the general dimensions <= this")
    personal_gap_min: float = F(1.0, "parity: chosen-rejected on personal fit >= this")


class GenericPairs(TextGen):
    mode: Literal["generate", "degraded"] = F("generate", "the LLM answers the question alone | another user's answer")
    prompt: str = F("prompts/pair_generic.txt", "the non-personalised answer's prompt")
    splits: list[str] = F(["test"], "splits of the generic benchmark")
    questions_limit: int | None = F(None, "cost control: first N questions")
    per_domain_limit: int | None = F(4, "only these pairs are scored (null = all)")
    max_words: int = F(100, "as pairs.max_words, so lengths stay comparable")
    top_p: float = F(1.0, "nucleus sampling")


class TrainRm(Group):
    backbone: str = F("embedded:all-MiniLM-L6-v2", "any HF encoder id or path")
    strategy: Strategy = F("raw_profile", "what the RM sees of the user while training")
    splits: list[str] = F(["train"], "trained on these splits of the selected pairs ([] = no trained RM)")
    max_length: int = F(512, "tokens per training input")
    epochs: int = F(4, "training epochs")
    learning_rate: float = F(5.0e-5, "learning rate")
    batch_size: int = F(8, "pairs per step")


class Scoring(Group):
    splits: list[str] = F(["test"], "the benchmark split(s)")
    per_domain_limit: int | None = F(4, "cost control: first N test pairs per domain (null = all)")
    benchmarks: list[Literal["personalised", "generic"]] = F(["personalised", "generic"], "benchmarks scored")
    strategies: list[Strategy] = F(["none", "raw_profile", "planner", "oracle"], "profile strategies compared")
    generic_strategies: list[Strategy] = F(["raw_profile"], "strategies the generic benchmark is scored with")
    rms: dict[str, dict] = F({}, "the RMs: name -> {kind: ..., options}")


class BenchmarkEntry(Group):
    """One `benchmarks:` entry: another benchmark scored through the same list-wise scorer."""
    source: str = F("rewardbench2", "its importer (tasks/stages/benchmarks): personalised, generic, rewardbench2, "
                                     "personal-rewardbench, prism, rm-bench, ppe-human")
    path: str | None = F(None, "a local copy of the published layout (file or folder); null = hub_id")
    hub_id: str | None = F(None, "the HF hub dataset (null = the importer's published id)")
    subset: str | None = F(None, "only this subset (null = all)")
    limit: int | None = F(None, "cost control: the first N items (null = all)")
    rms: list[str] = F([], "the RMs (names under scoring.rms) scored on it")


class Leaderboard(Group):
    split: str | None = F("test", "the benchmark split (null = every split)")
    benchmark: Literal["personalised", "generic"] = F("personalised", "the benchmark the board shows")
    tie_policy: Literal["strict", "half", "drop"] = F("strict", "a tie is wrong | counts 0.5 | leaves the denominator")
    bootstrap: int = F(1000, "resamples for the CIs")
    ci: float = F(0.95, "confidence level")
    heatmap_strategy: Strategy = F("raw_profile", "the strategy of the domain heatmap")
