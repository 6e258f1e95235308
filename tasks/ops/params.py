"""The params file checked completely: the structure (tasks/core/params: types, unknown keys, enums,
missing keys) and then what only the registries of every layer can tell: entries of pluggable kinds,
names that refer across groups (an LLM under `llms`, an RM under `scoring.rms`, a strategy, a retriever,
a benchmark importer, a downstream method) and the guards no stage may be given. Every entry point
(`prbench`, each stage command, a release) loads params through here. Nothing is built or loaded."""
from __future__ import annotations

from pathlib import Path

from tasks.core import params as core_params
from tasks.core.errors import ConfigError, suggestion
from tasks.core.params import params_path, read_yaml, stage_params  # noqa: F401 - the params API in one place
from tasks.core.params.rules import value as key_value
from tasks.ops.params_data import data_notices, data_problems
from tasks.core.stage_table import GROUP_SCHEMAS   # the params groups stages bring, checked with the schema's


def load_params(path: str | Path | None = None, *, complete=False, paths=False) -> dict:
    """tasks.core.params.load_params, with every plug-in name checked too."""
    return core_params.load_params(path, complete=complete, plugin_check=check_plugins, groups=GROUP_SCHEMAS,
                                   paths=paths)


def validate(raw, label: str = core_params.DEFAULT, root: Path | None = None) -> dict:
    return core_params.validate(raw, label, plugin_check=check_plugins, groups=GROUP_SCHEMAS, root=root)


def check_params(raw):
    from tasks.core.params.check import check_params as check

    return check(raw, plugin_check=check_plugins, groups=GROUP_SCHEMAS)


STRATEGY_KEYS = ("train_rm.strategy", "leaderboard.heatmap_strategy", "bon.strategy", "rl.strategy",
                 "correlation.strategy", "releases.rank_strategy", "scoring.strategies", "scoring.generic_strategies")


def registries() -> dict[str, tuple[str, object]]:
    """Every params key whose names a registry holds: key -> (the entry field naming the plug-in, or "" when
    the value is the name or a list of names; the registry). The check and `prbench params --doc` read it."""
    from tasks.downstream.correlation.methods import DOWNSTREAM
    from tasks.downstream.rl.algorithms import ALGORITHMS
    from tasks.models.judge import JUDGES
    from tasks.models.llm.backends import BACKENDS
    from tasks.models.retrieval import RETRIEVERS
    from tasks.models.rms.registry import KINDS
    from tasks.models.strategies import STRATEGIES
    from tasks.ops.task_runners import TASK_RUNNERS
    from tasks.stages.benchmarks import BENCHMARKS
    from tasks.stages.sources import SOURCES

    return {"scale.task_runner": ("", TASK_RUNNERS), "ingest.source": ("", SOURCES),
            "ingest.rl_prompts.source": ("", SOURCES), "profiles.retriever": ("", RETRIEVERS),
            "llms": ("backend", BACKENDS), "pairs.judge": ("kind", JUDGES), "bon.judge": ("kind", JUDGES),
            "scoring.rms": ("kind", KINDS), "releases.entry": ("kind", KINDS), "benchmarks": ("source", BENCHMARKS),
            "rl.algorithm": ("", ALGORITHMS), "correlation.downstream": ("", DOWNSTREAM),
            **{key: ("", STRATEGIES) for key in STRATEGY_KEYS}}


def plugin_doc() -> dict[str, str]:
    """`prbench params --doc`'s note on each registry-checked key: the names registered now."""
    return {key: f"{field + ' ' if field else ''}one of: {', '.join(reg.names())}"
            for key, (field, reg) in registries().items()}


def _names(problems: list[str], value, valid, key: str, what: str) -> None:
    if value is not None and value not in valid:
        problems.append(f"{key}: '{value}' is not {what}{suggestion(str(value), valid)}; valid: {', '.join(valid)}")


def _a(what: str) -> str:
    """'a strategy', 'an ingest source', 'an RL algorithm'."""
    first = what.split()[0]
    vowel = first[0] in "aeiouAEIOU" or (first.isupper() and first[0] in "AEFHILMNORSX")
    return f"{'an' if vowel else 'a'} {what}"


def check_plugins(p: dict) -> list[str]:
    """Entries of pluggable kinds and the names that refer across groups (after the types passed)."""
    from tasks.ops import releases
    from tasks.core.registry import check_entry
    from tasks.models.llm.registry import check as check_llm
    from tasks.models.rms.registry import check as check_rm

    problems: list[str] = []
    llms, rms, named = p["llms"], p["scoring"]["rms"], registries()
    for name, entry in llms.items():
        problems += check_llm(entry, f"llms.{name}")
    for name, entry in rms.items():
        problems += check_rm(name, entry)
    entry = p["releases"]["entry"]   # a template: each release fills in its model and revision (releases.rm_entry)
    problems += check_rm("", {"kind": "seq-cls", **entry, "model": "org/released-rm", "revision": "0" * 40}
                         if isinstance(entry, dict) else entry, "releases.entry")
    for group in ("pairs", "bon"):
        problems += check_entry(p[group]["judge"], named[f"{group}.judge"][1], f"{group}.judge")
    try:
        releases.check_rules(p["releases"]["watch"])
    except ConfigError as exc:
        problems.append(str(exc))
    for key, (field, reg) in named.items():   # the keys whose value is a name, or a list of names
        value = None if field else key_value(p, key)
        if isinstance(value, (list, tuple)):
            problems += reg.check_names(value, key)
        else:
            _names(problems, value, reg.names(), key, _a(reg.what))

    problems += model_problems(p)
    for b, entry in (p.get("benchmarks") or {}).items():   # other benchmarks: their importer exists
        _names(problems, entry.get("source"), named["benchmarks"][1].names(), f"benchmarks.{b}.source", "a benchmark")
    for i, name in enumerate(p["correlation"]["benchmarks"]):   # ours, or an entry by its published score
        base = name[:-len(":published")] if name.endswith(":published") else None
        _names(problems, name if base is None else base, ["personalised", "generic"] if base is None
               else sorted(p.get("benchmarks") or {}), f"correlation.benchmarks[{i}]",
               "personalised or generic" if base is None else "an entry under benchmarks (as <entry>:published)")
    problems += correlation_names(p) + data_problems(p)
    return problems + guards(p) if not problems else problems


def model_keys() -> dict[str, object]:
    """Keys naming a model outside a plug-in entry -> what tells a name that cannot load, without loading it (an
    embedded:<name> no package ships, a local path that is not there or not a model). Entries of a kind (an RM,
    an LLM, a judge) say it themselves: their class's `entry_problems`."""
    from tasks.downstream.rl.policy import model_problem as policy
    from tasks.models.encoders import model_problem as encoder

    return {"profiles.encoder": encoder, "rubrics.match_encoder": encoder, "train_rm.backbone": encoder,
            "rl.policy.model": policy}


def model_problems(p: dict) -> list[str]:
    out = []
    for key, problem in model_keys().items():
        why = problem(key_value(p, key)) if isinstance(key_value(p, key), str) else None
        out += [f"{key}: {why}"] if why else []
    return out


def notices(p: dict) -> list[str]:
    """Settings that run but do less than they say (printed by `prbench params` and `prbench run`)."""
    from tasks.core.params.rules import notices as rule_notices

    return rule_notices(p) + data_notices(p)


def correlation_names(p: dict) -> list[str]:
    """correlation.exclude_rms names RMs (or BoN's reference lines); comparisons name benchmarks it ranks."""
    from tasks.downstream.bon.report import ORACLE, RANDOM

    c, problems = p["correlation"], []
    for i, name in enumerate(c["exclude_rms"]):
        _names(problems, name, sorted(p["scoring"]["rms"]) + [ORACLE, RANDOM], f"correlation.exclude_rms[{i}]",
               "an RM under scoring.rms")
    benches = sorted({*c["benchmarks"], *(p.get("benchmarks") or {})})
    for i, pair in enumerate([] if c["baselines"] else c["comparisons"]):   # baselines add names only their files hold
        for j, name in enumerate(pair):
            _names(problems, name, benches, f"correlation.comparisons[{i}][{j}]",
                   "a benchmark in correlation.benchmarks or benchmarks")
    return problems


def guards(p: dict) -> list[str]:
    """What no stage may be given: the gold rubric as an input, planner contexts for splits the planner never
    saw, an RM trained on the split it is scored on, RL prompts read twice."""
    from tasks.models.strategies import check_benchmark_strategy, check_planner_splits

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
    from tasks.models.rms.registry import pointwise_kind

    for i, name in enumerate(p["rl"]["rms"] or []):   # RL's reward is one answer's score: not a pairwise-only kind
        entry = p["scoring"]["rms"].get(name)
        if isinstance(entry, dict) and not pointwise_kind(entry):
            problems.append(f"rl.rms[{i}]: '{name}' (kind {entry.get('kind')}) scores pairs only, and RL's reward is the "
                            "score of one answer alone: leave it out of rl.rms")
    both = sorted(set(p["train_rm"]["splits"]) & set(p["scoring"]["splits"]))
    if both:
        problems.append(f"train_rm.splits: '{both[0]}' is also a scored split (scoring.splits); train on questions "
                        "the benchmark does not test")
    rp = p["ingest"].get("rl_prompts") or {}
    twice = sorted(set(rp.get("splits") or ()) & set(p["ingest"]["splits"]))
    if twice:
        problems.append(f"ingest.rl_prompts.splits: '{twice[0]}' is also in ingest.splits; read each split from one source")
    return problems


