"""Rules across keys and the files a params file names, declared as tables: each broken rule is one line
naming the key, its value and the key it is held against. Run after the types (check.py); a rule whose
values are not numbers yet is left to the type check's line."""
from __future__ import annotations

from pathlib import Path

TOP_K = "only the top profiles.k posts are ranked"
COVERED = "an aspect is covered partly at a lower similarity than well"
EACH_READ = "each is read once"
STRATEGY_ONCE = "each strategy is one column of the leaderboard"
# (key, relation, other key(s): the first that is set, why)
CROSS = [
    ("profiles.context_k", "<=", ("profiles.k",), "the profile text RMs see: " + TOP_K),
    ("rubrics.profile_k", "<=", ("profiles.k",), "the planner's posts: " + TOP_K),
    ("pairs.profile_k", "<=", ("profiles.k",), "the writer's posts: " + TOP_K),
    ("bon.profile_k", "<=", ("profiles.k",), "the policy's posts: " + TOP_K),
    ("rl.profile_k", "<=", ("profiles.k",), "the policy's posts: " + TOP_K),
    ("rl.eval.profile_k", "<=", ("profiles.k",), "the policy's posts: " + TOP_K),
    ("rl.train.num_generations", "divides", ("rl.train.batch_size",),
     "grpo/rloo: each prompt's completions fill whole batches"),
    ("rl.train.mini_batch_size", "divides", ("rl.train.batch_size",), "optimizer steps split each batch evenly"),
    ("rl.train.micro_batch_size", "divides", ("rl.train.mini_batch_size", "rl.train.batch_size"),
     "forward/backward passes split each optimizer step evenly"),
    # ordered thresholds: the lower one below the upper one
    ("pairs.judge.partly", "<", ("pairs.judge.well",), COVERED), ("bon.judge.partly", "<", ("bon.judge.well",), COVERED),
]
# Lists that are sets: a name listed twice is a mistake, never a weight. `*`: every entry of a mapping.
UNIQUE = [("rl.rms", "one rl_train stage per name"), ("benchmarks.*.rms", "each RM is scored on it once"),
          ("ingest.configs", EACH_READ), ("ingest.splits", EACH_READ), ("ingest.rl_prompts.splits", EACH_READ),
          *((k, "a split is a set of questions: listed twice, it is still read once") for k in (
              "rubrics.splits", "pairs.splits", "pairs.generate_splits", "human_eval.splits", "generic_pairs.splits",
              "train_rm.splits", "scoring.splits", "bon.splits", "rl.train.splits", "rl.eval.splits")),
          ("scoring.benchmarks", "each benchmark is scored once"), ("bon.domains", "a filter: each domain once"),
          ("scoring.strategies", STRATEGY_ONCE), ("scoring.generic_strategies", STRATEGY_ONCE),
          ("correlation.benchmarks", "one ranking per benchmark"), ("correlation.downstream", "one ranking per method"),
          ("correlation.exclude_rms", "a filter: each RM once"), ("correlation.primary.rms", "a filter: each RM once"),
          ("correlation.baselines", "each file is read once"), ("correlation.downstream_tables", "each file is read once"),
          ("correlation.comparisons", "one paired test per pair of benchmarks")]
SKIP = {"rl.train.num_generations": lambda p: value(p, "rl.algorithm") == "ppo"}   # ppo takes no generations

# Files and folders a run reads or writes: (key, when it is read, what it must be: tasks/core/paths.py's kinds).
# `*` is every entry of a mapping, `[]` every item of a list.
PATHS = [
    ("common.cache_dir", None, "new_folder"),
    ("ingest.path", lambda p: value(p, "ingest.source") == "files", "any"),
    ("ingest.rl_prompts.path", lambda p: value(p, "ingest.rl_prompts.source") == "files", "any"),
    ("rubrics.prompt", None, "file"), ("pairs.chosen_prompt", None, "file"), ("pairs.rejected_prompt", None, "file"),
    ("pairs.judge.prompt", None, "file"), ("generic_pairs.prompt", lambda p: value(p, "generic_pairs.mode") == "generate", "file"),
    ("human_eval.raw_dir", None, "new_folder"), ("human_eval.key", None, "new_file"),
    ("human_eval.proxy_prompt", lambda p: value(p, "human_eval.proxy") != "never", "file"),
    ("bon.prompt", None, "file"), ("bon.judge.prompt", None, "file"), ("rl.prompt", None, "file"),
    ("scoring.rms.*.prompt", None, "file"), ("scoring.rms.*.system_prompt_file", None, "file"),
    ("benchmarks.*.path", None, "any"), ("correlation.baselines[]", None, "file"),
    ("correlation.downstream_tables[]", None, "file"), ("report.reference_params.*", None, "file"),
]
# Names that must be one of the names another key defines (its mapping's keys, or its list's items): (key, that
# key, when (params, the name) it is read, why). A pattern (fnmatch, `*?[`) must match one of them. Checked after the types, and not
# against a key that has a problem of its own (an empty list says so once).
LLM = "a name under llms"
REFS = [
    *((k, "llms", None, LLM) for k in ("rubrics.llm", "pairs.llm", "generic_pairs.llm", "human_eval.proxy_llm",
                                        "bon.policy_llm", "pairs.judge.llm", "bon.judge.llm", "scoring.rms.*.llm")),
    ("rl.rms[]", "scoring.rms", None, "an RM under scoring.rms"),
    ("benchmarks.*.rms[]", "scoring.rms", None, "an RM under scoring.rms"),
    ("correlation.primary.rms[]", "scoring.rms", None, "an RM under scoring.rms"),
    ("leaderboard.heatmap_strategy", "scoring.strategies", None, "a strategy scoring.strategies scores"),
    ("releases.rank_strategy", "scoring.strategies", None, "a strategy scoring.strategies scores"),
    ("correlation.strategy", "scoring.strategies", lambda p, v: "personalised" in (value(p, "correlation.benchmarks") or ()),
     "a strategy scoring.strategies scores (correlation.benchmarks ranks personalised)"),
    ("correlation.strategy", "scoring.generic_strategies", lambda p, v: "generic" in (value(p, "correlation.benchmarks") or ()),
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


def value(p, key: str):
    for part in key.split("."):
        p = p.get(part) if isinstance(p, dict) else None
    return p


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def cross_problems(p: dict) -> list[str]:
    out = []
    for key, rel, others, why in CROSS:
        mine = value(p, key)
        other = next((o for o in others if value(p, o) is not None), others[-1])
        theirs = value(p, other)
        if not (_number(mine) and _number(theirs)) or (key in SKIP and SKIP[key](p)):
            continue
        if rel == "<=" and mine > theirs:
            out.append(f"{key}: {mine} is more than {other} ({theirs}): {why}")
        elif rel == "<" and mine >= theirs:
            out.append(f"{key}: {mine} is not below {other} ({theirs}): {why}")
        elif rel == "divides" and mine > 0 and theirs % mine:
            out.append(f"{key}: {mine} does not divide {other} ({theirs}): {why}")
    for pattern, why in UNIQUE:
        for key, names in expand(p, pattern):
            out += [f"{key}: {_name(n)} is listed twice: {why}" for n in twice(names)]
    return out + comparison_problems(p) + bon_k_problems(p)


def twice(names) -> list:
    """The items a list holds more than once, in first-seen order (lists compare by value: comparisons)."""
    if not isinstance(names, list):
        return []
    seen, out = [], []
    for n in names:
        if n in seen and n not in out:
            out.append(n)
        seen.append(n)
    return out


def _name(n) -> str:
    return f"'{n}'" if isinstance(n, str) else "[" + ", ".join(map(str, n)) + "]" if isinstance(n, list) else repr(n)


def comparison_problems(p: dict) -> list[str]:
    """A paired comparison of a benchmark with itself tests nothing."""
    pairs = value(p, "correlation.comparisons")
    return [f"correlation.comparisons[{i}]: compares '{pair[0]}' with itself: name two different benchmarks"
            for i, pair in enumerate(pairs if isinstance(pairs, list) else [])
            if isinstance(pair, list) and len(pair) == 2 and pair[0] == pair[1]]


def bon_k_problems(p: dict) -> list[str]:
    """correlation.bon_k is a k bon_report computes: 1, 2, 4, ... up to bon.max_k and bon.n (k draws of n)."""
    k, max_k, n = value(p, "correlation.bon_k"), value(p, "bon.max_k"), value(p, "bon.n")
    if not (_number(k) and _number(max_k) and _number(n)) or k < 1:
        return []   # a k below 1 is the range check's one line
    ks = [2 ** e for e in range(int(min(max_k, n)).bit_length()) if 2 ** e <= min(max_k, n)]
    if k in ks:
        return []
    return [f"correlation.bon_k: {k} is not a k bon_report computes: k = {', '.join(map(str, ks))} (powers of 2 up "
            f"to bon.max_k ({max_k}) and bon.n ({n}))"]


def expand(p, key: str) -> list[tuple[str, object]]:
    """(concrete key, value) of a PATHS key: `*` over a mapping's entries, `[]` over a list's items."""
    found = [("", p)]
    for part in key.split("."):
        nxt = []
        for where, node in found:
            name, many = part.removesuffix("[]"), part.endswith("[]")
            if name == "*":
                nxt += [(f"{where}.{k}".lstrip("."), v) for k, v in node.items()] if isinstance(node, dict) else []
                continue
            v = node.get(name) if isinstance(node, dict) else None
            here = f"{where}.{name}".lstrip(".")
            nxt += [(f"{here}[{i}]", x) for i, x in enumerate(v)] if many and isinstance(v, list) else [(here, v)]
        found = nxt
    return found


def path_problems(p: dict, root: Path, scope=True) -> list[str]:
    """A file or folder named in the params that is not there, or not what its key needs (a folder given for a
    file, a file for a folder), relative to `root`, where stages run; `scope`: True, or only the keys under these
    (what the stages that run read)."""
    from tasks.core.paths import problem

    out, rel = [], "" if Path(root).resolve() == Path.cwd().resolve() else f" (relative to {root})"
    for key, when, kind in PATHS:
        if when is not None and not when(p):
            continue
        for where, v in expand(p, key):
            if scope is not True and not any(where == s or where.startswith(s + ".") for s in scope):
                continue
            why = problem(v, kind, root) if isinstance(v, str) and v else None
            if why:
                out.append(f"{where}: {why}{rel if why.startswith('no such') else ''}")
    return out


def names_of(p: dict, key: str) -> list[str] | None:
    """The names a key defines: a mapping's keys or a list's items (None when it is neither)."""
    v = value(p, key)
    return list(v) if isinstance(v, (dict, list)) else None


def ref_problems(p: dict, bad: set[str] = frozenset()) -> list[str]:
    """REFS: each name that is none of the names its target key defines; each pattern that matches none."""
    from fnmatch import fnmatchcase

    from tasks.core.errors import suggestion

    out = []
    for key, target, when, what in REFS:
        valid = names_of(p, target)
        if valid is None or target in bad:
            continue
        for where, v in expand(p, key):
            if not isinstance(v, str) or where in bad or (when is not None and not when(p, v)):
                continue
            if any(c in v for c in "*?["):
                if not any(fnmatchcase(str(n), v) for n in valid):
                    out.append(f"{where}: pattern '{v}' matches no name in {target} ({_listed(valid)}): {what}")
            elif v not in valid:
                out.append(f"{where}: '{v}' is not {what}{suggestion(v, map(str, valid))}; valid: {_listed(valid)}")
    return out


def _listed(names) -> str:
    names = sorted(str(n) for n in names)
    return ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "") if names else "none"


def notices(p: dict) -> list[str]:
    """Settings that run but do less than they say: printed, never refused."""
    out = []
    n, max_k = value(p, "bon.n"), value(p, "bon.max_k")
    if _number(n) and _number(max_k) and max_k > n:
        skipped = [2 ** e for e in range(int(max_k).bit_length()) if n < 2 ** e <= max_k]
        out.append(f"bon.max_k: {max_k} is more than bon.n ({n}): best-of-k needs k samples, so k = "
                   f"{', '.join(map(str, skipped))} are skipped (listed in metrics/bon.json)")
    return out
