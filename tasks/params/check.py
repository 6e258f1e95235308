"""Every problem of a params dict at once, one line each naming the key: unknown keys (with "did you
mean"), wrong types and values outside an enum (naming what is allowed), entries of pluggable kinds
checked by their registries, and names that must refer to something (an LLM under `llms`, an RM
under `scoring.rms`, a strategy, a retriever). Nothing is built and nothing is loaded."""
from __future__ import annotations

import inspect

from pydantic import BaseModel

from tasks.errors import ConfigError, suggestion
from tasks.registry import check_value


def _is_model(annotation) -> bool:
    return inspect.isclass(annotation) and issubclass(annotation, BaseModel)


def _optional_model(annotation):
    """The model of a `Model | None` field (a group that may be null), else None."""
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0] if len(args) == 1 and _is_model(args[0]) and type(None) in typing.get_args(annotation) else None


def _model_values(annotation):
    """The model of a `dict[str, Model]` field (named entries, each a group), else None."""
    import typing

    args = typing.get_args(annotation)
    return args[1] if typing.get_origin(annotation) is dict and len(args) == 2 and _is_model(args[1]) else None


def fields_of(model: type[BaseModel], key: str) -> dict:
    """A model's fields; at the top, also the groups that stages of the table bring (Stage.schema)."""
    fields = dict(model.model_fields)
    if key == "":
        from pydantic.fields import FieldInfo

        from tasks.stages import GROUP_SCHEMAS

        fields.update({g: FieldInfo(annotation=m, default=None) for g, m in GROUP_SCHEMAS.items() if g not in fields})
    return fields


def check_group(raw, model: type[BaseModel], key: str) -> list[str]:
    """Types and unknown keys of one group (recursing into nested groups)."""
    fields, problems = fields_of(model, key), []
    if not isinstance(raw, dict):
        return [f"{key}: a mapping of {', '.join(fields)}, got {raw!r}"]
    for name, value in raw.items():
        path = f"{key}.{name}" if key else str(name)
        if name not in fields:
            hint = suggestion(str(name), fields)
            problems.append(f"{path}: unknown key{hint}" + ("" if hint else f"; valid: {', '.join(fields)}"))
        elif _is_model(fields[name].annotation):
            problems += check_group(value, fields[name].annotation, path)
        elif value is not None and _optional_model(fields[name].annotation):
            problems += check_group(value, _optional_model(fields[name].annotation), path)
        elif _model_values(fields[name].annotation) and isinstance(value, dict):   # name -> group (benchmarks)
            for entry, sub in value.items():
                problems += check_group(sub, _model_values(fields[name].annotation), f"{path}.{entry}")
        else:
            problems += check_value(value, fields[name].annotation, path)
    return problems


def with_defaults(raw: dict, model: type[BaseModel], key: str = "") -> dict:
    """The user's values as written, plus the schema's default for every key left out."""
    out = dict(raw)
    for name, f in fields_of(model, key).items():
        if _is_model(f.annotation):
            out[name] = with_defaults(out.get(name) or {}, f.annotation, name)
        elif isinstance(out.get(name), dict) and _optional_model(f.annotation):
            out[name] = with_defaults(out[name], _optional_model(f.annotation), name)
        elif name not in out:
            default = f.get_default(call_default_factory=True)
            out[name] = default.model_dump() if isinstance(default, BaseModel) else default
    return out


def missing_keys(raw: dict, model: type[BaseModel], key: str = "") -> list[str]:
    """Keys of the schema the file leaves out, with the default they would take."""
    import json

    out = []
    for name, f in fields_of(model, key).items():
        path = f"{key}.{name}" if key else name
        if _is_model(f.annotation):
            out += missing_keys((raw or {}).get(name) or {}, f.annotation, path)
        elif _optional_model(f.annotation) and isinstance((raw or {}).get(name), dict):
            out += missing_keys(raw[name], _optional_model(f.annotation), path)
        elif name not in (raw or {}):
            default = f.get_default(call_default_factory=True)
            out.append(f"{path}: missing (its default: {json.dumps(default)}); a pipeline run reads every key from "
                       "the file, so that dvc tracks what it reads: add it")
    return out


def _names(problems: list[str], value, valid, key: str, what: str) -> None:
    if value is not None and value not in valid:
        problems.append(f"{key}: '{value}' is not {what}{suggestion(str(value), valid)}; valid: {', '.join(valid)}")


def check_plugins(p: dict) -> list[str]:
    """Entries of pluggable kinds and the names that refer across groups (after the types passed)."""
    from tasks import releases
    from tasks.judge import JUDGES
    from tasks.llm.registry import check as check_llm
    from tasks.registry import check_entry
    from tasks.retrieval import RETRIEVERS
    from tasks.rms.registry import check as check_rm
    from tasks.strategies import STRATEGIES

    problems: list[str] = []
    llms, rms = p["llms"], p["scoring"]["rms"]
    for name, entry in llms.items():
        problems += check_llm(entry, f"llms.{name}")
    for name, entry in rms.items():
        problems += check_rm(name, entry)
    problems += check_rm("", p["releases"]["entry"], "releases.entry")
    for group in ("pairs", "bon"):
        problems += check_entry(p[group]["judge"], JUDGES, f"{group}.judge")
    try:
        releases.check_rules(p["releases"]["watch"])
    except ConfigError as exc:
        problems.append(str(exc))
    _names(problems, p["profiles"]["retriever"], RETRIEVERS.names(), "profiles.retriever", "a retriever")

    uses_llm = {"rubrics.llm": p["rubrics"]["llm"], "pairs.llm": p["pairs"]["llm"],
                "generic_pairs.llm": p["generic_pairs"]["llm"], "human_eval.proxy_llm": p["human_eval"]["proxy_llm"],
                "bon.policy_llm": p["bon"]["policy_llm"],
                **{f"{g}.judge.llm": p[g]["judge"].get("llm") for g in ("pairs", "bon") if isinstance(p[g]["judge"], dict)},
                **{f"scoring.rms.{n}.llm": e.get("llm") for n, e in rms.items() if isinstance(e, dict)}}
    for key, name in uses_llm.items():
        _names(problems, name, sorted(llms), key, "a name under llms")

    strategies = STRATEGIES.names()
    one = {"train_rm.strategy": p["train_rm"]["strategy"], "leaderboard.heatmap_strategy":
           p["leaderboard"]["heatmap_strategy"], "bon.strategy": p["bon"]["strategy"], "rl.strategy": p["rl"]["strategy"],
           "correlation.strategy": p["correlation"]["strategy"], "releases.rank_strategy": p["releases"]["rank_strategy"]}
    for key, name in one.items():
        _names(problems, name, strategies, key, "a strategy")
    for key in ("strategies", "generic_strategies"):
        problems += STRATEGIES.check_names(p["scoring"][key], f"scoring.{key}")
    from tasks.downstream import DOWNSTREAM

    problems += DOWNSTREAM.check_names(p["correlation"]["downstream"], "correlation.downstream")
    for i, name in enumerate(p["rl"]["rms"] or []):
        _names(problems, name, sorted(rms), f"rl.rms[{i}]", "an RM under scoring.rms")
    from tasks.benchmarks import BENCHMARKS

    for b, entry in (p.get("benchmarks") or {}).items():   # other benchmarks: their importer and RMs exist
        _names(problems, entry.get("source"), BENCHMARKS.names(), f"benchmarks.{b}.source", "a benchmark")
        for i, name in enumerate(entry.get("rms") or []):
            _names(problems, name, sorted(rms), f"benchmarks.{b}.rms[{i}]", "an RM under scoring.rms")
    return problems + guards(p) if not problems else problems


def guards(p: dict) -> list[str]:
    """What no stage may be given: the gold rubric as an input, planner contexts for splits the planner never
    saw, an RM trained on the split it is scored on, RL prompts read twice."""
    from tasks.strategies import check_benchmark_strategy, check_planner_splits

    checks = [*(lambda key=key, g=g: check_benchmark_strategy(p[g]["strategy"], key)
                for g, key in (("bon", "bon.strategy"), ("rl", "rl.strategy"), ("train_rm", "train_rm.strategy"),
                               ("correlation", "correlation.strategy"))),
              lambda: check_planner_splits(p["bon"]["strategy"], p["bon"]["splits"], p, "bon.strategy"),
              lambda: check_planner_splits(p["rl"]["strategy"], p["rl"]["train"]["splits"], p, "rl.strategy")]
    problems = []
    for check in checks:
        try:
            check()
        except ConfigError as exc:
            problems.append(str(exc))
    both = sorted(set(p["train_rm"]["splits"]) & set(p["scoring"]["splits"]))
    if both:
        problems.append(f"train_rm.splits: '{both[0]}' is also a scored split (scoring.splits); train on questions "
                        "the benchmark does not test")
    rp = p["ingest"].get("rl_prompts") or {}
    twice = sorted(set(rp.get("splits") or ()) & set(p["ingest"]["splits"]))
    if twice:
        problems.append(f"ingest.rl_prompts.splits: '{twice[0]}' is also in ingest.splits; read each split from one source")
    return problems


def check_params(raw) -> tuple[dict | None, list[str]]:
    """(params with defaults, []) or (None, every problem)."""
    from tasks.params.schema_downstream import Root

    if not isinstance(raw, dict):
        return None, [f"the file holds {type(raw).__name__}, not a mapping of params groups"]
    problems = check_group(raw, Root, "")
    if problems:
        return None, problems
    full = with_defaults(raw, Root)
    problems = check_plugins(full)
    return (None, problems) if problems else (full, [])
