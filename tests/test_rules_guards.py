"""docs/params.md, "Shared LLMs and leakage guards": the gold rubric (`oracle`) is an upper bound for
scoring.strategies only; bon.strategy, rl.strategy, train_rm.strategy and correlation.strategy each refuse it
with one line naming the key, and train_rm.splits may not overlap scoring.splits. Each key on its own."""
import copy

import pytest
import yaml

from tasks.ops.params import check_params
from tests.conftest import ROOT

RAW = yaml.safe_load((ROOT / "params.yaml").read_text())


@pytest.mark.parametrize("group", ["bon", "rl", "train_rm", "correlation"])
def test_each_downstream_strategy_refuses_the_gold_rubric(group):
    raw = copy.deepcopy(RAW)
    raw[group]["strategy"] = "oracle"
    problems = check_params(raw)[1]
    said = [p for p in problems if p.startswith(f"{group}.strategy: ")]
    assert len(said) == 1 and "'oracle' is evaluation-only" in said[0], problems
    assert "oracle" in RAW["scoring"]["strategies"] and not check_params(copy.deepcopy(RAW))[1], \
        "the leaderboard's own strategies may hold it"


@pytest.mark.parametrize("split", ["test", "validation"])
def test_a_trained_rm_may_not_train_on_a_scored_split(split):
    raw = copy.deepcopy(RAW)
    raw["scoring"]["splits"] = sorted({*raw["scoring"]["splits"], split})
    raw["train_rm"]["splits"] = sorted({*raw["train_rm"]["splits"], split})
    problems = check_params(raw)[1]
    assert [p for p in problems if p.startswith("train_rm.splits: ")] == [
        f"train_rm.splits: '{split}' is also a scored split (scoring.splits); train on questions the benchmark does "
        "not test"]


def test_rl_eval_refuses_a_checkpoint_trained_from_another_base_model_and_names_it():
    """A policy trained from one base and judged as another's says nothing about the RM: refused before any answer."""
    from tasks.core.errors import ConfigError
    from tasks.downstream.rl import NOT_CAPABLE, TRAINED
    from tasks.downstream.rl.evaluate import _trained

    train = {"splits": ["train"]}
    manifests = {"a": {"status": TRAINED, "base": "base@1", "train": train},
                 "b": {"status": TRAINED, "base": "other@2", "train": train},
                 "c": {"status": NOT_CAPABLE, "base": "other@2", "train": train}}
    with pytest.raises(ConfigError, match=r"checkpoint of 'b' was trained from other@2, not base@1"):
        _trained(manifests, "base@1", ["test"])
    del manifests["b"]
    assert _trained(manifests, "base@1", ["test"]) == ["a"]   # an RM that trained nothing has no base to check
