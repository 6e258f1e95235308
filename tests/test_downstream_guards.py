"""Guards around the downstream validation: the gold rubric (oracle) refused wherever it would feed a
result rather than be scored, planner rubrics required for every split BoN or RL reads with them and
their failures counted, and a trained RM never trained on the scored split. Each refusal comes before
any model loads or file is written."""
import json
from pathlib import Path

import pytest
import yaml

from tasks.core import layout
from tasks.core.artifacts import write_table
from tasks.core.errors import ConfigError
from tests.conftest import ROOT


def _params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def test_oracle_is_refused_outside_scoring_with_one_line(tmp_path):
    from tasks.downstream.bon import select
    from tasks.downstream.correlation.stage import check_params
    from tasks.downstream.rl import train
    from tasks.stages.train_rm import run as train_rm

    p = _params()
    msg = r"'oracle' is evaluation-only \(the gold rubric"
    with pytest.raises(ConfigError, match="bon.strategy: " + msg):
        select.run({**p, "bon": {**p["bon"], "strategy": "oracle"}}, "random", {}, {})
    with pytest.raises(ConfigError, match="rl.strategy: " + msg):
        train.run({**p, "rl": {**p["rl"], "strategy": "oracle", "rms": ["random"]}}, "random", {}, {})
    with pytest.raises(ConfigError, match="correlation.strategy: " + msg):
        check_params({**p["correlation"], "strategy": "oracle"})
    with pytest.raises(ConfigError, match="train_rm.strategy: " + msg) as exc:
        train_rm({**p, "train_rm": {**p["train_rm"], "strategy": "oracle"}}, {}, {"model": str(tmp_path / "m")})
    assert len(str(exc.value).splitlines()) == 1 and not (tmp_path / "m").exists()


def test_train_rm_refuses_to_train_on_the_scored_split(tmp_path):
    from tasks.stages.train_rm import run as train_rm

    p = _params()
    with pytest.raises(ConfigError, match=r"train_rm.splits: 'test' is also a scored split \(scoring.splits\)"):
        train_rm({**p, "train_rm": {**p["train_rm"], "splits": ["train", "test"]}}, {}, {"model": str(tmp_path / "m")})
    assert not (tmp_path / "m").exists()


def test_planner_needs_rubrics_for_every_split_it_reads():
    from tasks.downstream.bon import select
    from tasks.downstream.rl import train

    p = _params()   # rubrics.splits: [test]; RL trains on train
    with pytest.raises(ConfigError, match=r"rl.strategy: 'planner' needs planner rubrics for split 'train', "
                                          r"but rubrics.splits is \['test'\]"):
        train.run({**p, "rl": {**p["rl"], "strategy": "planner", "rms": ["random"]}}, "random", {}, {})
    with pytest.raises(ConfigError, match="bon.strategy: 'planner' needs planner rubrics for split 'dev'"):
        select.run({**p, "bon": {**p["bon"], "strategy": "planner", "splits": ["test", "dev"]}}, "random", {}, {})


def test_bon_counts_the_questions_whose_plan_failed(tmp_path):
    """Two test questions, the planner parsed one: the other is scored with the question only, and counted."""
    from tasks.downstream.bon import select

    qs = [{"id": q, "domain": "Art", "split": "test", "category": "c", "question": f"How to {q}?", "narrative": "n",
           "rubric_aspects": [{"aspect": "a", "evidence": "e", "reason": "r"}]} for q in ("q1", "q2")]
    ctx = [{"question_id": q["id"], "retriever": "bm25", "k": 1, "item_ids": ["x"], "profile_text": "[1] post"}
           for q in qs]
    plans = [{"question_id": "q1", "domain": "Art", "split": "test", "aspects": ["cheap"], "valid": True, "attempts": 1,
              "error": "", "raw_text": "cheap", "generator": "g"},
             {"question_id": "q2", "domain": "Art", "split": "test", "aspects": None, "valid": False, "attempts": 3,
              "error": "no list", "raw_text": "??", "generator": "g"}]
    samples = [{"question_id": q["id"], "domain": "Art", "split": "test", "sample_index": i, "text": f"answer {i}",
                "valid": True, "error": "", "generator": "g", "answer_hash": f"{q['id']}-{i}", "finish_reason": "stop"}
               for q in qs for i in range(2)]
    inputs = {"questions": str(write_table(qs, tmp_path / "q.parquet", "questions")),
              "profile_context": str(write_table(ctx, tmp_path / "c.parquet", "profile_context")),
              "inferred_rubrics": str(write_table(plans, tmp_path / "r.parquet", "inferred_rubrics")),
              "samples": str(write_table(samples, tmp_path / "s.parquet", "bon_samples"))}
    p = _params()
    p["common"]["cache_dir"] = str(tmp_path / "cache")
    p["bon"]["strategy"] = "planner"
    out = {k: str(tmp_path / v) for k, v in layout.bon_scores("length-longer").items()}
    m = select.run(p, "length-longer", inputs, out)
    assert m["planner_failed_questions"] == 1 and m["scored"] == 4
    assert json.loads(Path(out["metrics"]).read_text())["planner_failed_questions"] == 1


@pytest.mark.parametrize("group", ["bon", "rl", "train_rm", "correlation"])
def test_params_validation_refuses_oracle_as_an_input_before_any_stage_runs(group):
    """`prbench params` / the pipeline's gate, not only the stage that would read it: an oracle
    bon.strategy must be refused before bon_sample and bon_judge spend their LLM calls."""
    from tasks.ops.params import validate

    p = _params()
    p[group] = {**p[group], "strategy": "oracle"}
    with pytest.raises(ConfigError, match=rf"{group}.strategy: 'oracle' is evaluation-only \(the gold rubric"):
        validate(p, "params.yaml")
