"""Labels the leaderboard and the correlation put beside an RM, read from params alone:

- shares_llm_with: the judges elsewhere in the pipeline that run on this RM's LLM (the same
  `llms` entry, or any entry or hub RM of the same model, whatever the backend: ids are compared
  normalised, so `Qwen/Qwen2.5-32B-Instruct` behind vLLM, in transformers and as a
  `qwen2.5-32b-instruct-q4_k_m.gguf` are one model). Such an RM is not independent of what it is
  measured against: `pairs.judge` when it filters the benchmark (kind llm, keep_invalid false),
  `pairs.llm` when it wrote the scored pairs (source generate), `generic_pairs.llm` when it wrote the
  generic benchmark's rejected answers (mode generate), `bon.judge` when it referees the downstream BoN.
- shares_encoder_with: the same for an encoder: an embedding judge (`pairs.judge` when it filters,
  `bon.judge`, which also judges RL) running on the encoder this RM embeds with (the `similarity`
  kind; ids compared as for LLMs). Such an RM agrees with its referee by construction.
- in_distribution: the train_rm stage's RM (kind bradley-terry on its trained folder) was trained
  on pairs built the same way as the benchmark's, unlike every released RM.
- implicit_reward: a DPO policy scored by its log-probabilities (kind dpo) is an implicit reward, and which
  reference it was scored against says what its numbers mean: "DPO vs <ref_model>", or "DPO, reference-free"
  (its log-probability alone); ", mean per token" with `normalize: mean`.
- null baselines (by kind): length-only and random scorers are reference points, not contestants;
  the correlation leaves them out unless `correlation.include_null_baselines`.
- positive controls (kind mixture): they read the gold rubric, a known order by construction; no contestant
  either. The leaderboard's "top RM" is the best contestant (role).
"""
from __future__ import annotations

import re

from tasks.core import layout

NULL_BASELINE_KINDS = ("length-longer", "length-shorter", "random")
POSITIVE_CONTROL_KINDS = ("mixture",)
NULL_BASELINE, POSITIVE_CONTROL, CONTESTANT = "null baseline", "positive control", "contestant"
ENCODER_KINDS = ("similarity",)                 # RM kinds that embed with an `encoder`
DEFAULT_ENCODER = "embedded:all-MiniLM-L6-v2"   # what they and an embedding judge use when none is named
PARAMS = {"pairs": ("judge", "keep_invalid", "source", "llm"), "bon": ("judge",),
          "generic_pairs": ("mode", "llm")}   # what the labels read
# a file or quantisation suffix says how a model is stored, not which model it is
_STORAGE = re.compile(r"([-._](gguf|q\d(_[a-z0-9]+)*|f16|fp16|bf16|fp32|awq|gptq|int4|int8))+$")


def role(entry: dict | None) -> str:
    """What an RM is on the board: a null baseline, a positive control, or a contestant (any other kind)."""
    kind = (entry or {}).get("kind")
    return NULL_BASELINE if kind in NULL_BASELINE_KINDS else POSITIVE_CONTROL if kind in POSITIVE_CONTROL_KINDS \
        else CONTESTANT


def model_id(model: str | None) -> str | None:
    """One id per model across backends: lower case, the last path part, without a storage suffix."""
    if not model:
        return None
    name = str(model).lower().removeprefix("embedded:").rstrip("/").rsplit("/", 1)[-1]
    return _STORAGE.sub("", name.removesuffix(".gguf")) or None


def label_params(params: dict) -> dict:
    """The params the labels depend on (a stage's cache key and its dvc.yaml `params` list)."""
    out = {"llms": params.get("llms") or {},
           "scoring": {"rms": params["scoring"]["rms"], "benchmarks": params["scoring"].get("benchmarks")}}
    for group, keys in PARAMS.items():
        out[group] = {k: params.get(group, {}).get(k) for k in keys}
    return out


def judge_roles(params: dict) -> dict[str, str]:
    """role (the params key) -> the llms entry it runs on, for the roles that make an RM dependent."""
    pairs, bon = params.get("pairs") or {}, params.get("bon") or {}
    roles = {}
    judge = pairs.get("judge") or {}
    if judge.get("kind") == "llm" and pairs.get("keep_invalid") is False:
        roles["pairs.judge"] = judge.get("llm")
    if pairs.get("source") == "generate" and pairs.get("llm"):
        roles["pairs.llm"] = pairs["llm"]
    generic = params.get("generic_pairs") or {}
    if generic.get("mode", "generate") == "generate" and generic.get("llm") and \
            "generic" in ((params.get("scoring") or {}).get("benchmarks") or ("generic",)):
        roles["generic_pairs.llm"] = generic["llm"]
    if (bon.get("judge") or {}).get("kind") == "llm":
        roles["bon.judge"] = bon["judge"].get("llm")
    return {role: name for role, name in roles.items() if name}


def encoder_roles(params: dict) -> dict[str, str]:
    """role -> the encoder id of each embedding judge that makes an RM dependent (as judge_roles)."""
    pairs, bon = params.get("pairs") or {}, params.get("bon") or {}
    judges = {"pairs.judge": pairs.get("judge") if pairs.get("keep_invalid") is False else None,
              "bon.judge": bon.get("judge")}
    return {role: j.get("encoder") or DEFAULT_ENCODER for role, j in judges.items()
            if j and j.get("kind") == "embedding"}


def rm_encoder(entry: dict) -> str | None:
    """The encoder an RM embeds with, where its kind embeds with one (similarity)."""
    return (entry.get("encoder") or DEFAULT_ENCODER) if entry.get("kind") in ENCODER_KINDS else None


def shares_encoder_with(params: dict) -> dict[str, list[str]]:
    """RM name -> the roles (sorted) whose encoder it embeds with; [] for an independent RM."""
    roles = {role: model_id(enc) for role, enc in encoder_roles(params).items()}
    return {rm: sorted(role for role, enc in roles.items() if enc and model_id(rm_encoder(entry or {})) == enc)
            for rm, entry in sorted(params["scoring"]["rms"].items())}


def _same_llm(entry: dict, name: str, llms: dict) -> bool:
    judge = model_id((llms.get(name) or {}).get("model"))
    if entry.get("llm") is not None:
        return entry["llm"] == name or (judge is not None and model_id((llms.get(entry["llm"]) or {}).get("model")) == judge)
    return judge is not None and model_id(entry.get("model")) == judge


def shares_llm_with(params: dict) -> dict[str, list[str]]:
    """RM name -> the roles (sorted) whose LLM it shares; [] for an independent RM."""
    llms, roles = params.get("llms") or {}, judge_roles(params)
    return {rm: sorted(role for role, name in roles.items() if _same_llm(entry or {}, name, llms))
            for rm, entry in sorted(params["scoring"]["rms"].items())}


def in_distribution(entry: dict) -> bool:
    return entry.get("kind") == "bradley-terry" and entry.get("model") in (None, layout.TRAIN_RM["model"])


def implicit_reward(entry: dict) -> str:
    """'DPO vs <ref_model>' / 'DPO, reference-free' (+ ', mean per token') for kind dpo; '' for any other kind."""
    if entry.get("kind") != "dpo":
        return ""
    ref = f"DPO vs {entry['ref_model']}" if entry.get("ref_model") else "DPO, reference-free"
    return ref + (", mean per token" if entry.get("normalize") == "mean" else "")


def labels(params: dict) -> dict[str, dict]:
    """RM name -> {"shares_llm_with": "bon.judge, pairs.judge" ("" = none), "shares_encoder_with": (the same),
    "in_distribution": bool, "implicit_reward": "DPO vs <ref>" ("" = not one)}."""
    if "scoring" not in params:   # a caller without the pipeline's params (quick_score): no labels
        return {}
    shared, encoded = shares_llm_with(params), shares_encoder_with(params)
    return {rm: {"shares_llm_with": ", ".join(shared[rm]), "shares_encoder_with": ", ".join(encoded[rm]),
                 "in_distribution": in_distribution(entry or {}), "implicit_reward": implicit_reward(entry or {})}
            for rm, entry in sorted(params["scoring"]["rms"].items())}
