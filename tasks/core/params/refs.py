"""Names that must match something the params define: each REFS key's value is one of the names another key
defines (its mapping's keys, or its list's items), and a pattern (fnmatch) matches one of them. One line per
unknown name, naming every key that refers to it (an RM left out of scoring.rms that three lists name is one
mistake), with "did you mean". Run after the types, the rules and the registries' names (tasks/core/params/
check.py): a key with a problem of its own, or a target that has one (an empty list says so once), gets no
second line."""
from __future__ import annotations

from tasks.core.params.rules import expand, value

# (key, the key whose names it must be one of, when (params, the name) it is read, what it must be)
PATTERNS = ("correlation.primary.rms[]",)   # the keys that take fnmatch patterns; elsewhere a '*' is a name's letter
LLM = "a name under llms"
REFS = [
    *((k, "llms", None, LLM) for k in ("rubrics.llm", "pairs.llm", "generic_pairs.llm", "human_eval.proxy_llm",
                                        "bon.policy_llm", "pairs.judge.llm", "bon.judge.llm", "scoring.rms.*.llm")),
    ("rl.rms[]", "scoring.rms", None, "an RM under scoring.rms"),
    ("benchmarks.*.rms[]", "scoring.rms", None, "an RM under scoring.rms"),
    ("correlation.primary.rms[]", "scoring.rms", None, "an RM under scoring.rms"),
    ("leaderboard.heatmap_strategy", "scoring.strategies", None, "a strategy scoring.strategies scores"),
    ("releases.rank_strategy", "scoring.strategies", None, "a strategy scoring.strategies scores"),
    ("correlation.strategy", "scoring.strategies", lambda p, v: _lists(p, "correlation.benchmarks", "personalised"),
     "a strategy scoring.strategies scores (correlation.benchmarks ranks personalised)"),
    ("correlation.strategy", "scoring.generic_strategies", lambda p, v: _lists(p, "correlation.benchmarks", "generic"),
     "a strategy scoring.generic_strategies scores (correlation.benchmarks ranks generic)"),
    ("correlation.primary.strategy", "scoring.strategies", lambda p, v: value(p, "correlation.primary.benchmark") == "personalised",
     "a strategy scoring.strategies scores"),
    ("correlation.primary.strategy", "scoring.generic_strategies",
     lambda p, v: value(p, "correlation.primary.benchmark") == "generic", "a strategy scoring.generic_strategies scores"),
    ("leaderboard.benchmark", "scoring.benchmarks", None, "a benchmark scoring.benchmarks scores"),
    ("correlation.primary.benchmark", "scoring.benchmarks", None, "a benchmark scoring.benchmarks scores"),
    ("correlation.benchmarks[]", "scoring.benchmarks", lambda p, v: ":" not in str(v), "a benchmark scoring.benchmarks scores"),
    ("correlation.primary.method", "correlation.downstream", None, "a method correlation.downstream compares"),
    ("leaderboard.split", "scoring.splits", None, "a split scoring.splits scores"),
    ("correlation.split", "scoring.splits", None, "a split scoring.splits scores"),
]


def _lists(p: dict, key: str, name: str) -> bool:
    v = value(p, key)
    return isinstance(v, list) and name in v   # not a list: the type check's line


def names_of(p: dict, key: str) -> list[str] | None:
    """The names a key defines: a mapping's keys or a list's items (None when it is neither)."""
    v = value(p, key)
    return list(v) if isinstance(v, (dict, list)) else None


def ref_problems(p: dict, bad: set[str] = frozenset()) -> list[str]:
    """REFS: each name that is none of the names its target key defines; each pattern that matches none."""
    from fnmatch import fnmatchcase

    from tasks.core.errors import suggestion

    unknown: dict[tuple, list[str]] = {}   # (target, name, what) -> the keys naming it: one line per unknown name
    for key, target, when, what in REFS:
        valid = names_of(p, target)
        if valid is None or target in bad:
            continue
        for where, v in expand(p, key):
            if not isinstance(v, str) or where in bad or (when is not None and not when(p, v)):
                continue
            pattern = key in PATTERNS and any(c in v for c in "*?[")
            if (pattern and not any(fnmatchcase(str(n), v) for n in valid)) or (not pattern and v not in valid):
                unknown.setdefault((target, v, what), []).append(where)
    by_target: dict[str, list] = {}   # several unknown names in one target (its group left to its defaults): one line
    for (target, v, what), keys in unknown.items():
        by_target.setdefault(target, []).append((v, what, keys))
    out = []
    for target, found in by_target.items():
        valid = names_of(p, target)
        if len(found) > 1:
            keys = [k for *_, ks in found for k in ks]
            out.append(f"{_where(keys)}: {', '.join(repr(v) for v, *_ in found)} are not names {target} defines; "
                       f"valid: {_listed(valid)}")
            continue
        v, what, keys = found[0]
        if any(k.split("[")[0] + "[]" in PATTERNS for k in keys) and any(c in v for c in "*?["):
            out.append(f"{_where(keys)}: pattern '{v}' matches no name in {target} ({_listed(valid)}): {what}")
        else:
            out.append(f"{_where(keys)}: '{v}' is not {what}{suggestion(v, map(str, valid))}; valid: {_listed(valid)}")
    return out


def _where(keys: list[str]) -> str:
    return ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")


def _listed(names) -> str:
    names = sorted(str(n) for n in names)
    return ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "") if names else "none"
