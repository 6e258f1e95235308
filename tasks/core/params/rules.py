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
    ("releases.watch[].path", None, "new_folder"),   # a local rule's folder of checkpoints (empty until one lands)
]

# The $fields each stage gives a prompt file (tasks/core/prompts.render refuses any other) under common.fidelity
# corrected; under release the release's {field} replacement refuses none. (key, fields, or fields from the params
# and the key's own place: a judge's mode, an RM's kind.)
POLICY = ("question", "max_words", "profile")   # tasks/downstream/bon/sample.py policy_prompts
JUDGE = {"per_aspect": ("question", "answer", "aspect", "evidence"), "all": ("question", "answer", "n", "aspect_list")}
RM_JUDGE = {"judge-pairwise": ("user", "answer_a", "answer_b"), "judge-pointwise": ("user", "answer")}
PROMPT_FIELDS = [
    ("rubrics.prompt", ("question", "max_aspects", "profile")),                   # tasks/stages/rubrics.py
    ("pairs.chosen_prompt", ("question", "aspects", "max_words", "profile")),     # tasks/stages/pairs.py
    ("pairs.rejected_prompt", ("question", "aspects", "max_words", "profile")),
    ("generic_pairs.prompt", ("question", "max_words")),                          # tasks/stages/generic_pairs.py
    ("human_eval.proxy_prompt", ("dimension", "five", "dimensions", "question", "aspects", "profile", "answer")),
    ("bon.prompt", POLICY), ("rl.prompt", POLICY),
    ("pairs.judge.prompt", lambda p, where: _by(p, "pairs.judge.mode", JUDGE, "per_aspect")
     if value(p, "pairs.judge.kind") == "llm" else None),                        # tasks/models/judge.py
    ("bon.judge.prompt", lambda p, where: _by(p, "bon.judge.mode", JUDGE, "per_aspect")
     if value(p, "bon.judge.kind") == "llm" else None),
    ("scoring.rms.*.prompt", lambda p, where: _by(p, where.rsplit(".", 1)[0] + ".kind", RM_JUDGE)),
]


def _by(p: dict, key: str, table: dict, default=None):
    """(the fields, the key that chose them and its value) where a key's value picks them (a judge's mode)."""
    name = value(p, key) or default
    fields = table.get(name) if isinstance(name, str) else None   # a wrong type is the type check's line
    return (fields, f"{key} {name}") if fields else None


def prompt_problems(p: dict, root: Path) -> list[str]:
    """A prompt file that asks for a $field its stage does not give it: one line now, not a failure after the
    stage loaded its LLM (naming another stage's prompt file is the usual way)."""
    from string import Template

    if value(p, "common.fidelity") != "corrected":
        return []
    out = []
    for key, fields in PROMPT_FIELDS:
        for where, v in expand(p, key):
            given, chosen = (fields(p, where) or (None, None)) if callable(fields) else (fields, None)
            path = Path(root) / str(v)
            if not given or not isinstance(v, str) or not path.is_file():
                continue
            try:
                asks = Template(path.read_text(encoding="utf-8")).get_identifiers()
            except (OSError, UnicodeDecodeError) as exc:
                out.append(f"{where}: cannot read '{v}': {exc}")
                continue
            extra = [f for f in dict.fromkeys(asks) if f not in given]
            if extra:
                under = f" under {chosen}" if chosen else ""
                out.append(f"{where}: '{v}' asks for ${extra[0]}, which this stage does not give a prompt{under} (it "
                           f"gives {', '.join('$' + f for f in given)}): is it another stage's prompt file?")
    return out


def value(p, key: str):
    for part in key.split("."):
        p = p.get(part) if isinstance(p, dict) else None
    return p


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


FORMATS = [("releases.reproduce_cron", "cron"), ("releases.watch_cron", "cron")]   # strings of a form: its checker


def format_problems(p: dict) -> list[str]:
    from tasks.core import cron

    check = {"cron": cron.problem}
    return [f"{key}: {why}" for key, form in FORMATS if isinstance(value(p, key), str)
            for why in [check[form](value(p, key))] if why]


def cross_problems(p: dict, bad=frozenset()) -> list[str]:
    """CROSS, UNIQUE and the comparisons; a rule against a key with a problem of its own (`bad`) is left out. Keys
    broken against one other key by one relation are one line (profiles.k lowered: every profile_k above it)."""
    broken: dict[tuple, list] = {}
    for key, rel, others, why in CROSS:
        mine = value(p, key)
        other = next((o for o in others if value(p, o) is not None), others[-1])
        theirs = value(p, other)
        if not (_number(mine) and _number(theirs)) or (key in SKIP and SKIP[key](p)) or {key, other} & set(bad):
            continue
        if (rel == "<=" and mine > theirs) or (rel == "<" and mine >= theirs) or (
                rel == "divides" and mine > 0 and theirs % mine):
            broken.setdefault((rel, other, theirs), []).append((key, mine, why))
    out = [_broken_line(rel, other, theirs, keys) for (rel, other, theirs), keys in broken.items()]
    for pattern, why in UNIQUE:
        for key, names in expand(p, pattern):
            out += [f"{key}: {_name(n)} is listed twice: {why}" for n in twice(names)]
    return out + comparison_problems(p) + bon_k_problems(p) + format_problems(p)


VERB = {"<=": "is more than", "<": "is not below", "divides": "does not divide"}


def _broken_line(rel: str, other: str, theirs, keys: list) -> str:
    if len(keys) == 1:
        key, mine, why = keys[0]
        return f"{key}: {mine} {VERB[rel]} {other} ({theirs}): {why}"
    named = ", ".join(f"{k} ({v})" for k, v, _ in keys[:-1]) + f" and {keys[-1][0]} ({keys[-1][1]})"
    verb = {"is more than": "are more than", "is not below": "are not below", "does not divide": "do not divide"}
    return f"{named}: {verb[VERB[rel]]} {other} ({theirs}): {keys[0][2].split(': ')[-1]}"


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
            why = problem(v, kind, root) if isinstance(v, str) else None
            if why:
                out.append(f"{where}: {why}{rel if why.startswith('no such') else ''}")
    return out + prompt_problems(p, root)


def notices(p: dict) -> list[str]:
    """Settings that run but do less than they say: printed, never refused."""
    out = []
    n, max_k = value(p, "bon.n"), value(p, "bon.max_k")
    if _number(n) and _number(max_k) and max_k > n:
        skipped = [2 ** e for e in range(int(max_k).bit_length()) if n < 2 ** e <= max_k]
        out.append(f"bon.max_k: {max_k} is more than bon.n ({n}): best-of-k needs k samples, so k = "
                   f"{', '.join(map(str, skipped))} are skipped (listed in metrics/bon.json)")
    return out
