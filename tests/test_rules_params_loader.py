"""docs/params.md, "Params are checked before any work": the loader's rules at their edges. A key given twice in a
mapping at any depth is refused naming both 1-based lines; an empty file is refused and `{}` takes every default;
a `profile_k` EQUAL to profiles.k is fine (at most), a judge's `partly` EQUAL to `well` is not (below); the
micro batch divides the mini batch, or the batch when that is null; every problem at once, a range problem and
a misspelt name together; a `*_limit` of null means all and is not range-checked."""
import copy

import pytest
import yaml

from tasks.core.errors import ConfigError
from tasks.core.params.rules import cross_problems
from tasks.core.params.yaml_load import duplicate_keys, parse, read_yaml
from tasks.ops.params import check_params
from tests.conftest import ROOT

RAW = yaml.safe_load((ROOT / "params.yaml").read_text())


def test_a_key_twice_at_any_depth_names_both_lines_one_based():
    text = "a:\n  b:\n    c: 1\n    d: 2\n    c: 3\ne: 4\ne: 5\n"
    assert duplicate_keys(yaml.compose(text)) == [("a.b.c", 3, "5:5"), ("e", 6, "7:1")]
    with pytest.raises(ConfigError) as err:
        parse(text, "p.yaml")
    assert str(err.value).splitlines() == [
        "p.yaml:5:5: a.b.c: duplicate key (first at line 3); YAML keeps only the last: rename or remove one",
        "p.yaml:7:1: e: duplicate key (first at line 6); YAML keeps only the last: rename or remove one"]
    assert duplicate_keys(yaml.compose("l:\n- {x: 1, x: 2}\n")) == [("l[0].x", 2, "2:10")]


def test_an_empty_file_is_refused_and_an_empty_mapping_takes_the_defaults(tmp_path):
    (tmp_path / "empty.yaml").write_text("# only a comment\n")
    with pytest.raises(ConfigError, match="empty.yaml: empty: no params groups"):
        read_yaml(tmp_path / "empty.yaml")
    (tmp_path / "braces.yaml").write_text("{}\n")
    assert read_yaml(tmp_path / "braces.yaml") == {}
    params, problems = check_params({})
    assert problems == [] and params["leaderboard"]["ci"] == 0.95


def _full(**edits) -> dict:
    raw = copy.deepcopy(RAW)
    for key, value in edits.items():
        *path, last = key.split(".")
        node = raw
        for part in path:
            node = node[part]
        node[last] = value
    return check_params(raw)[1]


def test_a_profile_k_equal_to_profiles_k_is_allowed_and_one_more_refused():
    k = RAW["profiles"]["k"]
    for key in ("profiles.context_k", "rubrics.profile_k", "bon.profile_k", "rl.profile_k", "rl.eval.profile_k"):
        assert not [p for p in _full(**{key: k}) if p.startswith(key)], f"{key} = profiles.k is at most k"
        said = [p for p in _full(**{key: k + 1}) if p.startswith(key)]
        assert len(said) == 1 and said[0].startswith(f"{key}: {k + 1} is more than profiles.k ({k}): ")


def test_partly_equal_to_well_is_refused_and_just_below_allowed():
    well = RAW["pairs"]["judge"]["well"]
    assert any(p.startswith("pairs.judge.partly: ") for p in _full(**{"pairs.judge.partly": well}))
    assert not any(p.startswith("pairs.judge.partly") for p in _full(**{"pairs.judge.partly": well - 0.01}))


def test_the_micro_batch_is_held_to_the_mini_batch_else_the_batch():
    p = {"rl": {"algorithm": "ppo", "train": {"batch_size": 12, "mini_batch_size": 4, "micro_batch_size": 3}}}
    assert cross_problems(p) == ["rl.train.micro_batch_size: 3 does not divide rl.train.mini_batch_size (4): "
                                 "forward/backward passes split each optimizer step evenly"]
    p["rl"]["train"]["mini_batch_size"] = None
    assert cross_problems(p) == [], "3 divides the batch of 12"
    p["rl"]["train"]["micro_batch_size"] = 5
    assert cross_problems(p)[0].startswith("rl.train.micro_batch_size: 5 does not divide rl.train.batch_size (12)")


def test_a_range_problem_and_a_misspelt_name_are_both_said():
    problems = _full(**{"leaderboard.ci": 1.5, "rl.rms": ["length-shortr"]})
    assert "leaderboard.ci: 1.5 is out of range: must be > 0 and < 1" in problems
    assert any(p.startswith("rl.rms[0]: 'length-shortr' is not an RM under scoring.rms") for p in problems)


def test_a_limit_of_null_means_all_and_zero_is_refused():
    assert not [p for p in _full(**{"scoring.per_domain_limit": None}) if "per_domain_limit" in p]
    assert [p for p in _full(**{"scoring.per_domain_limit": 0}) if p.startswith("scoring.per_domain_limit")] == [
        "scoring.per_domain_limit: 0 is out of range: must be >= 1"]


def test_a_params_file_edited_in_place_is_read_again_even_at_the_same_size(tmp_path):
    """load_params remembers a checked file by path, modification time and size: an edit that keeps the size
    (0.95 -> 0.90) is still read, never the remembered values."""
    import os

    from tasks.ops.params import load_params

    path = tmp_path / "params.yaml"
    path.write_text("leaderboard:\n  ci: 0.95\n")
    st = path.stat()
    assert load_params(path)["leaderboard"]["ci"] == 0.95
    path.write_text("leaderboard:\n  ci: 0.90\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))   # another mtime, the same size
    assert path.stat().st_size == st.st_size
    assert load_params(path)["leaderboard"]["ci"] == 0.90


def test_a_stage_run_refuses_only_its_own_missing_keys_not_a_longer_names(tmp_path):
    from tasks.core.params import load_params

    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    del raw["rubrics"]["temperature_bump"]
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert load_params(path, complete=["rubrics.temperature"])["rubrics"]["temperature_bump"] is not None, \
        "rubrics.temperature_bump is not under rubrics.temperature"
    with pytest.raises(ConfigError, match=r"rubrics\.temperature_bump: missing \(its default"):
        load_params(path, complete=["rubrics.temperature_bump"])
