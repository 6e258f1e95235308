"""Labels the leaderboard and the correlation put beside an RM, read from params alone:

- shares_llm_with: the judges elsewhere in the pipeline that run on this RM's LLM (the same
  `llms` entry, or another entry with the same backend and model; for a hub RM, the same model
  id). Such an RM is not independent of what it is measured against: `pairs.judge` when it
  filters the benchmark (kind llm, keep_invalid false), `pairs.llm` when it wrote the scored
  pairs (source generate), `bon.judge` when it referees the downstream BoN (kind llm).
- in_distribution: the train_rm stage's RM (kind bradley-terry on its trained folder) was trained
  on pairs built the same way as the benchmark's, unlike every released RM.
- null baselines (by kind): length-only and random scorers are reference points, not contestants;
  the correlation leaves them out unless `correlation.include_null_baselines`.
"""
from __future__ import annotations

from tasks import layout

NULL_BASELINE_KINDS = ("length-longer", "length-shorter", "random")
PARAMS = {"pairs": ("judge", "keep_invalid", "source", "llm"), "bon": ("judge",)}   # what the labels read


def label_params(params: dict) -> dict:
    """The params the labels depend on (a stage's cache key and its dvc.yaml `params` list)."""
    out = {"llms": params.get("llms") or {}, "scoring": {"rms": params["scoring"]["rms"]}}
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
    if (bon.get("judge") or {}).get("kind") == "llm":
        roles["bon.judge"] = bon["judge"].get("llm")
    return {role: name for role, name in roles.items() if name}


def _same_llm(entry: dict, name: str, llms: dict) -> bool:
    model = lambda n: ((llms.get(n) or {}).get("backend"), (llms.get(n) or {}).get("model"))  # noqa: E731
    if entry.get("llm") is not None:
        return entry["llm"] == name or (model(entry["llm"]) == model(name) and model(name)[1] is not None)
    return entry.get("model") is not None and entry["model"] == model(name)[1]


def shares_llm_with(params: dict) -> dict[str, list[str]]:
    """RM name -> the roles (sorted) whose LLM it shares; [] for an independent RM."""
    llms, roles = params.get("llms") or {}, judge_roles(params)
    return {rm: sorted(role for role, name in roles.items() if _same_llm(entry or {}, name, llms))
            for rm, entry in sorted(params["scoring"]["rms"].items())}


def in_distribution(entry: dict) -> bool:
    return entry.get("kind") == "bradley-terry" and entry.get("model") in (None, layout.TRAIN_RM["model"])


def labels(params: dict) -> dict[str, dict]:
    """RM name -> {"shares_llm_with": "bon.judge, pairs.judge" ("" = none), "in_distribution": bool}."""
    if "scoring" not in params:   # a caller without the pipeline's params (quick_score): no labels
        return {}
    shared = shares_llm_with(params)
    return {rm: {"shares_llm_with": ", ".join(shared[rm]), "in_distribution": in_distribution(entry or {})}
            for rm, entry in sorted(params["scoring"]["rms"].items())}
