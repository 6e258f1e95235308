"""`prbench run`'s refusals before a server starts (flows/cli.py refuse_run_mistakes), fast: each mistake one line,
several joined one per line, and DVC's lock consulted only when nothing else is wrong and DVC will run. Also the
did-you-mean of a misspelt option key (tasks/core/errors.typo_of), which the params and release-rule checks use."""
from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from flows.cli import build_parser, cmd_run, refuse_run_mistakes
from tasks.core.errors import ConfigError, typo_of
from tasks.core.stage_table import ORDER
from tasks.ops.params import load_params
from tests.conftest import ROOT

PARAMS = load_params(str(ROOT / "params.yaml"))


def _args(*argv: str):
    return build_parser().parse_args(["run", *argv])


def _refusal(args, params=PARAMS) -> str:
    with pytest.raises(ConfigError) as err:
        refuse_run_mistakes(args, params)
    return str(err.value)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with a dvc.yaml (what `prbench run` needs to find), as the working directory."""
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def held(project):
    """DVC's project lock held, as another `dvc repro` holds it (an flock on .dvc/tmp/lock)."""
    lock = project / ".dvc" / "tmp" / "lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield lock


def test_good_targets_and_until_pass(project):
    refuse_run_mistakes(_args("score@bradley-terry", "profiles", "--until", ORDER[1]), PARAMS)   # no error


def test_a_misspelt_per_rm_target_names_the_rm_with_did_you_mean(project):
    said = _refusal(_args("score@bradley-terr"))
    assert said.startswith("score@bradley-terr: ") and "(did you mean 'bradley-terry'?)" in said
    assert "\n" not in said


def test_cmd_run_refuses_before_any_work_with_the_params_it_loaded(monkeypatch):
    monkeypatch.chdir(ROOT)   # the project's own params.yaml and dvc.yaml: the refusal comes first
    with pytest.raises(ConfigError) as err:
        cmd_run(_args("score@bradley-terr"))
    assert "(did you mean 'bradley-terry'?)" in str(err.value)


def test_an_unknown_until_is_one_line_with_did_you_mean(project):
    assert _refusal(_args("--no-dvc", "--until", "profils")).startswith(
        "--until: unknown name 'profils' (did you mean 'profiles'?); valid: ")


def test_no_dvc_yaml_is_refused_for_dvc_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _refusal(_args()) == (f"dvc.yaml: not in {tmp_path}: run `prbench run` from the project's root folder")
    refuse_run_mistakes(_args("--no-dvc"), PARAMS)   # the in-process pipeline needs no dvc.yaml


def test_several_mistakes_one_line_each(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = _refusal(_args("--until", "nope")).split("\n")
    assert len(lines) == 2 and lines[0].startswith("--until: ") and lines[1].startswith("dvc.yaml: not in ")


def test_dvcs_lock_is_told_when_nothing_else_is_wrong(held):
    said = _refusal(_args())
    assert said.startswith(".dvc/tmp/lock: another dvc process") and "\n" not in said
    refuse_run_mistakes(_args("--no-dvc"), PARAMS)   # no DVC in this run: its lock is not in the way


def test_with_another_mistake_the_lock_is_not_consulted(held):
    said = _refusal(_args("nonsense"))
    assert said.startswith("nonsense: not a stage of dvc.yaml") and ".dvc/tmp/lock" not in said


def test_typo_of_picks_the_misspelt_key_not_a_known_option():
    assert typo_of("kind", {"kidn": 1, "model": 2}, known={"model"}) == "kidn"
    assert typo_of("kind", {"kinds": 1}, known={"kinds"}) is None, "a known option is no typo"
    assert typo_of("kind", {1: "x", "model": 2}, known={"model"}) is None, "a non-text key is skipped"


def test_typo_of_prefers_the_same_name_in_another_case_over_the_closest_spelling():
    assert typo_of("source", {"sourc": 1, "SOURCE": 2}) == "SOURCE"
    assert typo_of("SOURCE", {"sourc": 1, "source": 2}) == "source"
    assert typo_of("kind", {"model": 1}) is None


# --- the misspelt `kind` of a plug-in entry and `source` of a watch rule (tasks/core/registry.py, tasks/ops/releases.py)

def _rule_refusal(rule) -> str:
    from tasks.ops.releases import check_rules

    with pytest.raises(ConfigError) as err:
        check_rules([rule])
    return str(err.value)


def test_a_misspelt_kind_is_named_as_the_typo_it_is():
    from tasks.core.registry import check_entry
    from tasks.models.rms.registry import KINDS

    said = "not an option (did you mean 'kind'?): the entry names its kind with 'kind'"
    assert check_entry({"kidn": "seq-cls", "model": "m"}, KINDS, "scoring.rms.a") == [f"scoring.rms.a.kidn: {said}"]
    assert check_entry({"KIND": "seq-cls"}, KINDS, "scoring.rms.a") == [f"scoring.rms.a.KIND: {said}"]
    assert check_entry({"model": "m"}, KINDS, "scoring.rms.a")[0].startswith("scoring.rms.a.kind: missing; valid: "), \
        "a known option is no typo of kind"


def test_a_misspelt_source_is_named_as_the_typo_it_is():
    said = "not an option (did you mean 'source'?): a rule names its source with 'source'"
    assert _rule_refusal({"sourc": "hub", "author": "x"}) == f"releases.watch[0].sourc: {said}"
    assert _rule_refusal({"SOURCE": "hub", "author": "x"}) == f"releases.watch[0].SOURCE: {said}"
    assert _rule_refusal({"search": "x"}) == "releases.watch[0].source: unknown name 'None'; valid: hub, local", \
        "search is an option of a hub rule, not a misspelt source"


def test_with_its_source_given_a_rules_other_keys_are_checked_against_that_source():
    assert _rule_refusal({"source": "hub", "author": "x", "sources": 1}).startswith(
        "releases.watch[0].sources: not an option of a hub rule: unknown name 'sources' (did you mean 'source'?)")


def test_a_bare_source_name_is_one_line_not_a_traceback():
    assert _rule_refusal("hub") == "releases.watch[0]: a mapping like {source: hub, ...}, got 'hub'"
    assert _rule_refusal("hbu").startswith("releases.watch[0].source: unknown name 'hbu' (did you mean 'hub'?)")


def test_an_option_that_looks_like_the_kind_field_is_no_typo_of_it():
    from tasks.core.registry import Registry, check_entry

    reg = Registry("widget")

    @reg.register("dial")
    class Dial:
        OPTIONS = {"kinds": list}   # an option spelt close to the field

    assert check_entry({"kinds": []}, reg, "w")[0] == "w.kind: missing; valid: dial"
    assert check_entry({"kidn": "dial"}, reg, "w") == ["w.kidn: not an option (did you mean 'kind'?): the entry names "
                                                        "its widget with 'kind'"]
