"""Every range of a params key holds at its edge, for every key of every group (the schema's and those stages
bring): the value just outside is refused in one line naming the key and the range, the edge itself (or just
inside an open edge) is accepted. The ranges are the ones docs/params.md states ("CI levels and rbo_p in
(0, 1), top_p in (0, 1], counts >= 1, retries, temperatures >= 0, ..."), written here as rules by key name;
a key the rules do not cover must be listed, so a bound moved by one (>= to >, 1 to 0) fails here."""
from __future__ import annotations

import copy
import re
import typing

import pytest
import yaml

from tasks.core.params.check import LIMITS, _is_model, _optional_model, fields_of, root_model
from tasks.core.stage_table import GROUP_SCHEMAS
from tasks.ops.params import check_params
from tests.conftest import ROOT

RAW = yaml.safe_load((ROOT / "params.yaml").read_text())


def _ranged(model, prefix=()):
    """(path, field) for every ranged key, descending into nested groups."""
    for name, f in fields_of(model).items():
        sub = f.annotation if _is_model(f.annotation) else _optional_model(f.annotation)
        if sub is not None:
            yield from _ranged(sub, (*prefix, name))
        elif any(hasattr(m, k) for m in f.metadata for k, _ in LIMITS):
            yield (*prefix, name), f


CASES = list(_ranged(root_model(GROUP_SCHEMAS)))

# docs/params.md's ranges, by key name (first match wins); every other ranged key is a count: >= 1
RULES = (
    (r"(^|\.)ci$|\.rbo_p$|\.alpha$", "> 0 and < 1"),                 # levels and persistences
    (r"\.top_p$", "> 0 and <= 1"),
    (r"^common\.seed$", ">= 0"),
    (r"temperature(_bump)?$", ">= 0"),
    (r"(parse_retries|max_reward_failures|proxy_limit)$", ">= 0"),     # retries and budgets of failures
    (r"profile_k$", ">= 0"),                                           # 0 posts: the question alone
    (r"(learning_rate|_lr|cliprange_value)$", "> 0"),
    (r"\.kl_coef$", ">= 0"),
    (r"\.(lam)$", ">= 0 and <= 1"),
    (r"^correlation\.min_rms$", ">= 3"),                               # two RMs always correlate +-1
    (r"^explain\.min_n$", ">= 2"),                                     # one pair has no interval
    (r"^ingest\.downstream_share$", ">= 0 and < 1"),                   # 1 would leave nothing to score
    (r"^rubrics\.match_threshold$", ">= -1 and <= 1"),                 # a cosine
    (r"^human_eval\.(general_gap_max|personal_gap_min)$", ">= 0 and <= 4"),   # a gap on a 1-5 scale
    (r"^correlation\.power\.effect$", "> 0.5 and < 1"),               # 0.5 = no effect
    (r"^correlation\.power\.pairs$", ">= 2"),
    (r"^correlation\.power\.simulations$", ">= 50"),
    (r"^correlation\.power\.flips$", ">= 19"),                        # p can reach 0.05
    (r"^releases\.port$", ">= 1 and <= 65535"),
)


def documented(key: str) -> str:
    return next((text for pattern, text in RULES if re.search(pattern, key)), ">= 1")


def _bounds(text: str) -> list[tuple[str, float]]:
    ops = {">=": "ge", ">": "gt", "<=": "le", "<": "lt"}
    return [(ops[op], float(x)) for op, x in (part.split() for part in text.split(" and "))]


def _is_int(f) -> bool:
    args = set(typing.get_args(f.annotation)) or {f.annotation}
    return int in args and float not in args


def _with(path, value) -> dict:
    raw = copy.deepcopy(RAW)
    node = raw
    for part in path[:-1]:
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
    node[path[-1]] = value
    return raw


def _edges(key: str, f):
    """[(value, refused?)] at each documented bound of the key."""
    step = 1 if _is_int(f) else 1e-6
    out = []
    for k, x in _bounds(documented(key)):
        x = int(x) if _is_int(f) else x
        out += {"ge": [(x - step, True), (x, False)], "gt": [(x, True), (x + step, False)],
                "le": [(x + step, True), (x, False)], "lt": [(x, True), (x - step, False)]}[k]
    return out


def test_the_schema_has_ranged_keys_in_every_group_that_counts():
    groups = {path[0] for path, _ in CASES}
    assert {"common", "leaderboard", "correlation", "bon", "rl", "ingest", "profiles"} <= groups, groups
    assert len(CASES) > 60


@pytest.mark.parametrize("path, f", CASES, ids=[".".join(p) for p, _ in CASES])
def test_each_range_is_the_documented_one(path, f):
    key = ".".join(path)
    assert _limits_text(f) == documented(key).replace(".0 ", " ").removesuffix(".0") or \
        _bounds(_limits_text(f)) == _bounds(documented(key)), f"{key}: schema {_limits_text(f)}, docs {documented(key)}"


@pytest.mark.parametrize("path, f", CASES, ids=[".".join(p) for p, _ in CASES])
def test_each_range_is_enforced_at_its_edge(path, f):
    key = ".".join(path)
    for value, refused in _edges(key, f):
        _, problems = check_params(_with(path, value))
        said = [p for p in problems if p.startswith(f"{key}: ") and "out of range" in p]
        if refused:
            assert said, f"{key} = {value!r} accepted; the schema says {[str(m) for m in f.metadata]}"
            assert said[0] == f"{key}: {value!r} is out of range: must be {_limits_text(f)}", said
            assert len([p for p in problems if p.startswith(f"{key}: ")]) == 1, "one line for the key"
        else:
            assert not said, f"{key} = {value!r} refused: {said}"


def _limits_text(f) -> str:
    return " and ".join(f"{op} {getattr(m, k)}" for m in f.metadata for k, op in LIMITS if hasattr(m, k))


def test_a_name_listed_three_times_is_reported_once():
    from tasks.core.params.rules import twice

    assert twice(["a", "b", "a", "a", "b", "c"]) == ["a", "b"], "each once, in first-seen order"
    assert twice("a") == [] and twice(["a", "b"]) == []


@pytest.mark.parametrize("path", [("correlation", "exclude_rms"), ("scoring", "strategies")])
def test_every_listed_set_refuses_a_name_twice(path):
    names = yaml.safe_load((ROOT / "params.yaml").read_text())[path[0]][path[1]]
    _, problems = check_params(_with(path, names + names[:1]))
    assert [p for p in problems if p.startswith(f"{'.'.join(path)}: {names[0]!r} is listed twice")], problems


def test_bon_k_above_bon_n_is_refused_though_within_max_k():
    raw = _with(("bon", "n"), 2)
    raw["bon"]["max_k"], raw["correlation"]["bon_k"] = 4, 4
    _, problems = check_params(raw)
    assert [p for p in problems if p.startswith("correlation.bon_k: 4 is not a k bon_report computes: k = 1, 2 ")], problems


@pytest.mark.parametrize("algorithm, refused", [("ppo", False), ("grpo", True)])
def test_num_generations_must_divide_the_batch_only_where_the_algorithm_generates(algorithm, refused):
    raw = _with(("rl", "algorithm"), algorithm)
    raw["rl"]["train"]["batch_size"], raw["rl"]["train"]["num_generations"] = 4, 3
    _, problems = check_params(raw)
    assert bool([p for p in problems if p.startswith("rl.train.num_generations: 3 does not divide")]) is refused, problems
