"""The params schema, part 1: the data and benchmark groups. One model per params.yaml group, each
field with its type, default and a one-line doc (`prbench params --doc` prints them). Entries of a
pluggable kind (an LLM, an RM, a rubric judge) are checked by their registry (see check.py)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Strategy = str      # a profile strategy name: checked against the strategy registry (check.py)
LlmName = str       # a name under `llms`: checked across groups (check.py)


def F(default, doc: str, names: bool = False, **limits):
    """A key: its default, one-line doc and range (ge=, gt=, le=, lt=, min_length=; checked in check.py, shown by
    --doc). `names`: a mapping whose keys name stages and files (check.py's NAME)."""
    return Field(default, description=doc, json_schema_extra={"names": True} if names else None, **limits)


EMBEDDING_JUDGE = {"kind": "embedding", "encoder": "embedded:all-MiniLM-L6-v2", "partly": 0.35, "well": 0.5,
                   "prompt": "prompts/judge_aspect.txt", "max_tokens": 128}
# the RMs a file that leaves scoring.rms out scores: the null baselines and the positive-control ladder that
# correlation.primary.rms (ladder-*) names (w = (i/11)^3, as params.yaml)
DEFAULT_RMS = {**{k: {"kind": k} for k in ("length-longer", "length-shorter", "random")},
               **{f"ladder-{i:02d}": {"kind": "mixture", "weight": round((i / 11) ** 3, 3)} for i in range(12)}}
SMOLLM2 = {"backend": "llamacpp", "model": "embedded:smollm2-135m", "n_ctx": 4096, "n_threads": 1}


class Group(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Common(Group):
    cache_dir: str = F(".prbench-cache", "embeddings and LLM calls, keyed by content hash (gitignored)")
    seed: int = F(2604, "every random choice (sampling, bootstrap, A/B order) derives from it", ge=0)
    torch_threads: int = F(2, "one torch thread count in every stage: other counts round reductions differently", ge=1)
    fidelity: Literal["corrected", "release"] = F(
        "corrected", "corrected (prbench's behaviour) | release (the authors' release, its bugs included: "
                     "docs/paper-setting.md)")


class Scale(Group):
    task_runner: str = F("local", "where per-RM / per-chunk work runs")
    address: str | None = F(None, "an existing cluster (tcp://head:8786, ray://head:10001); null = local")
    root: str | None = F(None, "the project's absolute path as workers see it (null = the same path as here)")
    chunk_size: int = F(256, "pairs (score) or distinct answers (bon_score) per task; sets batch mates", ge=1)
    jobs: int = F(1, "stages `prbench run` runs at a time (its --jobs overrides); the same dvc.lock and outputs", ge=1)


REVISION = "with source hub: the dataset's branch, tag or commit sha (null = main); the sha read is recorded"


class RlPrompts(Group):
    source: str = F("hub", "files | hub, as ingest.source")
    hub_id: str = F("alireza7/LaMP-QA", "the hub dataset when source is hub")
    revision: str | None = F(None, REVISION)
    path: str | None = F(None, "with source files: a folder of {Config}_train.json (official download)")
    splits: list[Literal["train", "validation", "test"]] = F(["train"], "splits read from it: none of ingest.splits",
                                                           min_length=1)
    limit_per_split: int | None = F(None, "cost control: the first N good rows per file", ge=1)


class Ingest(Group):
    source: str = F("files", "read local files or a hub dataset")
    path: str = F("data/sample/rewardbench", "a file or folder: {Config}_{split}.json|jsonl|parquet, {Config}/{split}-*.parquet")
    hub_id: str = F("alireza7/LaMP-QA", "the hub dataset when source is hub")
    revision: str | None = F(None, REVISION)
    layout: Literal["auto", "lamp_qa", "rewardbench"] = F("auto", "rewardbench: rows carry chosen/rejected")
    configs: list[str] = F(["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"],
                           "LaMP-QA configs (domains) to read", min_length=1)
    splits: list[Literal["train", "validation", "test"]] = F(["train", "test"], "splits to read", min_length=1)
    on_error: Literal["fail", "quarantine"] = F("fail", "quarantine: bad rows go to data/ingest/quarantine.parquet")
    limit_per_split: int | None = F(None, "cost control: keep the first N good rows per file", ge=1)
    pair_source: str = F("sample", "label recorded as generator 'reference:<label>' on ingested pairs")
    downstream_share: float = Field(0.5, ge=0, lt=1, description=(
        "share of each domain's test questions kept for BoN and RL evaluation, apart from the scored ones "
        "(seeded hash; 0 = no split: every question in both)"))
    rl_prompts: RlPrompts | None = F(None, "a second source for RL training prompts only (questions and profiles; "
                                           "narrative and rubric dropped): null = RL reads ingest.splits")


class Profiles(Group):
    retriever: str = F("dense", "a retriever name (dense | bm25)")
    encoder: str = F("embedded:all-MiniLM-L6-v2", "any HF encoder id or path, e.g. facebook/contriever-msmarco")
    k: int = F(10, "top-k posts kept per question", ge=1)
    context_k: int = F(4, "of those, how many form the profile text RMs see (raw_profile)", ge=1)
    max_words_per_post: int = F(60, "per post in the formatted profile text", ge=1)
    batch_size: int = F(64, "encoder batch size on a GPU (texts of one token count); on CPU each text alone", ge=1)


class TextGen(Group):
    """What every LLM-writing step shares: its LLM, budget and parse retries."""
    llm: LlmName = F("smollm2", "a name under llms")
    temperature: float = F(0.0, "sampling temperature", ge=0)
    max_tokens: int = F(140, "reply budget in tokens", ge=1)
    parse_retries: int = F(2, "retries of a reply that does not parse, then invalid (raw text kept)", ge=0)
    temperature_bump: float = F(0.3, "added to the temperature on each parse retry", ge=0)


class Rubrics(TextGen):
    prompt: str = F("prompts/planner.txt", "the planner's prompt file")
    splits: list[str] = F(["test"], "splits the planner infers aspects for", min_length=1)
    questions_limit: int | None = F(None, "cost control: first N questions", ge=1)
    per_domain_limit: int | None = F(None, "cost control: first N questions per domain (null = all); planner rows "
                                           "missing for a scored pair are counted as planner_failed", ge=1)
    profile_k: int = F(4, "posts shown to the planner (= profiles.context_k: same posts as raw_profile)", ge=0)
    max_words_per_post: int = F(60, "words per post shown to the planner", ge=1)
    max_aspects: int = F(6, "aspects kept per question", ge=1)
    max_tokens: int = F(120, "reply budget in tokens", ge=1)
    match_encoder: str = F("embedded:all-MiniLM-L6-v2", "encoder matching inferred to gold aspects")
    match_threshold: float = F(0.6, "cosine above which an inferred aspect matches a gold one", ge=-1, le=1)


class Pairs(TextGen):
    source: Literal["reference", "generate"] = F("reference", "what scoring reads: ingested or generated pairs")
    generate: bool = F(True, "generate (and judge) pairs even when scoring reads the reference ones")
    chosen_prompt: str = F("prompts/pair_chosen.txt", "prompt of the answer that follows the rubric")
    rejected_prompt: str = F("prompts/pair_rejected.txt", "prompt of the answer that violates it")
    splits: list[str] = F(["train", "test"], "splits judged and selected", min_length=1)
    generate_splits: list[str] = F(["test"], "splits the LLM writes pairs for")
    generate_per_domain: int | None = F(4, "cost control: first N questions per domain (null = all)", ge=1)
    questions_limit: int | None = F(None, "cost control: first N questions", ge=1)
    profile_k: int = F(5, "posts shown to the writer", ge=0)
    max_words_per_post: int = F(60, "words per post shown to the writer", ge=1)
    max_words: int = F(100, "the answer length the prompt asks for", ge=1)
    top_p: float = F(1.0, "nucleus sampling", gt=0, le=1)
    keep_invalid: bool = F(True, "keep pairs the judge finds invalid in the selected set")
    judge: dict = F(EMBEDDING_JUDGE, "the rubric judge (kind embedding | llm), also BoN's")


class HumanEval(Group):
    splits: list[str] = F(["test"], "splits annotators rate", min_length=1)
    raw_dir: str = F("data/human_eval/input/raw", "annotators' files: .csv, .jsonl, Label Studio .json")
    key: str = F("data/human_eval/input/key.parquet", "the unblinding key (written by prbench human-eval export)")
    on_error: Literal["fail", "quarantine"] = F("fail", "quarantine: bad rows to data/human_eval/quarantine.parquet")
    profile_max_words: int = F(120, "profile excerpt shown to annotators and the proxy", ge=1)
    proxy: Literal["auto", "always", "never"] = F("auto", "the LLM proxy: only while no human rated | always | never")
    proxy_llm: LlmName = F("smollm2", "a name under llms")
    proxy_prompt: str = F("prompts/annotator.txt", "the proxy's prompt file")
    proxy_verdict: Literal["form", "logprobs"] = F(
        "form", "form: one reply filling the four-line form | logprobs: one short prompt per dimension, the most "
                "likely digit 1-5 (always parses; for a small local model)")
    proxy_limit: int = F(3, "pairs the proxy rates (the humans' items first)", ge=0)
    proxy_temperature: float = F(0.0, "the proxy's temperature", ge=0)
    proxy_max_tokens: int = F(40, "the proxy's reply budget", ge=1)
    parse_retries: int = F(2, "retries of a reply that does not parse", ge=0)
    temperature_bump: float = F(0.3, "added to the temperature on each parse retry", ge=0)
    general_gap_max: float = F(0.5, "parity: mean per-item |chosen-rejected| over the general dimensions <= this",
                               ge=0, le=4)
    personal_gap_min: float = F(1.0, "parity: chosen-rejected on personal fit >= this", ge=0, le=4)


class GenericPairs(TextGen):
    mode: Literal["generate", "degraded"] = F("generate", "the LLM answers the question alone | another user's answer")
    prompt: str = F("prompts/pair_generic.txt", "the non-personalised answer's prompt")
    splits: list[str] = F(["test"], "splits of the generic benchmark", min_length=1)
    questions_limit: int | None = F(None, "cost control: first N questions", ge=1)
    per_domain_limit: int | None = F(4, "only these pairs are scored (null = all)", ge=1)
    max_words: int = F(100, "as pairs.max_words, so lengths stay comparable", ge=1)
    top_p: float = F(1.0, "nucleus sampling", gt=0, le=1)


class TrainRm(Group):
    backbone: str = F("embedded:all-MiniLM-L6-v2", "any HF encoder id or path")
    strategy: Strategy = F("raw_profile", "what the RM sees of the user while training")
    splits: list[str] = F(["train"], "trained on these splits of the selected pairs ([] = no trained RM)")
    max_length: int = F(512, "tokens per training input", ge=1)
    epochs: int = F(4, "training epochs", ge=1)
    learning_rate: float = F(5.0e-5, "learning rate", gt=0)
    batch_size: int = F(8, "pairs per step", ge=1)


class Scoring(Group):
    splits: list[str] = F(["test"], "the benchmark split(s)", min_length=1)
    per_domain_limit: int | None = F(4, "cost control: first N test pairs per domain (null = all)", ge=1)
    benchmarks: list[Literal["personalised", "generic"]] = F(["personalised", "generic"], "benchmarks scored",
                                                             min_length=1)
    strategies: list[Strategy] = F(["none", "raw_profile", "planner", "oracle"], "profile strategies compared",
                                 min_length=1)
    generic_strategies: list[Strategy] = F(["raw_profile"], "strategies the generic benchmark is scored with")
    rms: dict[str, dict] = F(DEFAULT_RMS, "the RMs: name -> {kind: ..., options}", names=True, min_length=1)


class BenchmarkEntry(Group):
    """One `benchmarks:` entry: another benchmark scored through the same list-wise scorer."""
    source: str = F(..., "its importer (tasks/stages/benchmarks): personalised, generic, rewardbench2, "
                         "personal-rewardbench, prism, rm-bench, ppe-human (required)")
    path: str | None = F(None, "a local copy of the published layout (file or folder); null = hub_id")
    hub_id: str | None = F(None, "the HF hub dataset (null = the importer's published id)")
    revision: str | None = F(None, "with hub_id / no path (`prbench score`), or a local copy made by `hf download "
                                   "--local-dir`: the dataset revision (null = main), recorded as the sha read")
    subset: str | None = F(None, "only this subset (null = all)")
    limit: int | None = F(None, "cost control: the first N items (null = all)", ge=1)
    rms: list[str] = F(..., "the RMs (names under scoring.rms) scored on it (required)", min_length=1)


class Leaderboard(Group):
    split: str | None = F("test", "the benchmark split (null = every split)")
    benchmark: Literal["personalised", "generic"] = F("personalised", "the benchmark the board shows")
    tie_policy: Literal["strict", "half", "drop"] = F("strict", "a tie is wrong | counts 0.5 | leaves the denominator")
    bootstrap: int = F(1000, "resamples for the CIs", ge=1)
    ci: float = F(0.95, "confidence level", gt=0, lt=1)
    heatmap_strategy: Strategy = F("raw_profile", "the strategy of the domain heatmap")


class Explain(Group):
    min_n: int = F(10, "below this many pairs a figure of the error analysis says 'too few pairs': its value, no CI "
                       "(a percentile bootstrap of a share of n pairs takes n + 1 values)", ge=2)
    profile_bins: int = F(3, "bins of the users' profile sizes (posts), about equal counts of scored pairs each", ge=1)
