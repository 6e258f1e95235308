"""`prbench score --benchmark / --data` by hand: which publisher's layout a file is in (from its first row's
fields), and what the results JSON records of a run (the versioned schema a user diffs across RMs): the
config it ran with, the data and revision read, the params' source; a --strategy the benchmark lacks refused
naming it; a hub dataset read at the sha its revision resolved to, said first. Local fixtures in the
publishers' layouts (tests/fixtures); the hub's three calls replaced by those rows (the real client against a
fake Hub runs in the slow tests/test_hub_benchmarks.py)."""
from __future__ import annotations

import json

import pytest

from tasks.core.errors import ConfigError
from tasks.ops.params import load_params
from tasks.stages.benchmarks import cli as C
from tests.test_benchmarks import PATHS


@pytest.mark.parametrize("keys, layout", [
    ({"winner": "model_a", "response_1": "a", "response_2": "b"}, "ppe-human"),
    ({"winner": "model_a", "response_1": "a", "prompt": "p", "chosen": "c", "rejected": "r"}, "generic"),
    ({"num_correct": 1, "chosen": "c"}, "rewardbench2"),
    ({"subset": "Math", "chosen": ["c"]}, "rewardbench2"),
    ({"subset": "Math", "chosen": "c", "prompt": "p", "rejected": "r"}, "generic"),
    ({"domain": "chat", "chosen": ["c"]}, "rm-bench"),
    ({"domain": "chat", "chosen": "c"}, None),
    ({"user_id": "u", "chosen": "c", "rejected": "r"}, "personal-rewardbench"),
    ({"user_id": "u", "chosen": "c"}, None),
    ({"question": "q", "profile": [], "chosen": "c", "rejected": "r"}, "personalised"),
    ({"question": "q", "chosen": "c", "rejected": "r"}, None),
    ({"prompt": "p", "chosen": "c", "rejected": "r"}, "generic"),
    ({"prompt": "p", "chosen": "c"}, None)])
def test_a_layout_by_its_first_rows_fields(keys, layout):
    assert C._layout(keys) == layout


def test_detect_reads_the_first_row_of_the_first_file_that_has_one(tmp_path):
    assert C.detect(None) is None and C.detect("") is None and C.detect(str(tmp_path / "absent")) is None
    assert C.detect(str(tmp_path)) is None, "an empty folder"
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "b.jsonl").write_text(json.dumps({"prompt": "p", "chosen": "c", "rejected": "r"}) + "\n")
    assert C.detect(str(tmp_path)) == "generic"
    (tmp_path / "a.jsonl").write_text("[1, 2]\n")   # a row that is not an object decides nothing
    assert C.detect(str(tmp_path)) == "generic"
    (tmp_path / "a.jsonl").write_text("{not json\n")   # a row that does not parse decides nothing either
    assert C.detect(str(tmp_path)) == "generic"
    (tmp_path / "a.json").write_text("{not json")      # a file that cannot be read: the importer names it
    assert C.detect(str(tmp_path)) is None
    prism = tmp_path / "prism"
    prism.mkdir()
    for stem in ("survey", "conversations"):
        (prism / f"{stem}.jsonl").write_text(json.dumps({"prompt": "p", "chosen": "c", "rejected": "r"}) + "\n")
    assert C.detect(str(prism)) == "prism", "PRISM is its two files, whatever their rows"
    (prism / "survey.jsonl").unlink()
    assert C.detect(str(prism)) == "generic"
    (prism / "survey-00000-of-00001.jsonl").write_text("")   # the hub's sharded file names
    assert C.detect(str(prism)) == "prism"


def _score(tmp_path, **kw):
    args = dict(entry={"kind": "length-longer"}, name="longer", benchmark="rewardbench2",
                data=str(PATHS["rewardbench2"]), out=tmp_path)
    text = C.score_benchmark(load_params(), **{**args, **kw})
    return text, json.loads((tmp_path / "results.json").read_text())


def test_the_results_json_records_what_ran(tmp_path):
    params = load_params()
    text, doc = _score(tmp_path, subset="Math", limit=5, source="my-params.yaml")
    lb = params["leaderboard"]
    assert doc["config"] == {"strategies": ["none"], "limit": 5, "subset": "Math", "tie_policy": lb["tie_policy"],
                             "bootstrap": lb["bootstrap"], "ci": lb["ci"], "seed": params["common"]["seed"]}
    assert (doc["benchmark"], doc["data"], doc["params"], doc["n"]) == ("rewardbench2", str(PATHS["rewardbench2"]),
                                                                         "my-params.yaml", 2)
    assert doc["model"]["name"] == "longer" and doc["model"]["entry"] == {"kind": "length-longer"}
    assert doc["dataset"] == {}, "a local copy records no hub revision"
    assert doc["numerics"] and doc["results"]["strategies"]["none"]["n"] == 2
    assert text.startswith("rewardbench2 / longer"), "no revision line for a local copy"
    _, default = _score(tmp_path)
    assert default["params"] == "params.yaml" and default["config"]["subset"] is None and default["n"] == 6


def test_a_strategy_the_benchmark_lacks_is_refused_naming_it(tmp_path):
    with pytest.raises(ConfigError) as exc:
        _score(tmp_path, strategies=["none", "raw_profile", "oracle"])
    assert str(exc.value) == "--strategy raw_profile: rewardbench2 is scored with none only"
    assert not (tmp_path / "results.json").exists()
    with pytest.raises(ConfigError, match=r"^--benchmark: .*rewardbench3"):
        _score(tmp_path, benchmark="rewardbench3")
    _, doc = _score(tmp_path, benchmark="generic", data=str(PATHS["generic"]), strategies=["none"])
    assert doc["config"]["strategies"] == ["none"]
    with pytest.raises(ConfigError) as exc:
        _score(tmp_path, benchmark="prism", data=str(PATHS["prism"]), strategies=["oracle"])
    assert str(exc.value) == "--strategy oracle: prism is scored with none, raw_profile only"


def test_a_hub_dataset_is_read_at_the_sha_its_revision_resolved_to(tmp_path, monkeypatch):
    from tasks.stages import hub

    rows = [json.loads(line) for line in PATHS["rewardbench2"].read_text().splitlines() if line.strip()]
    seen = []
    monkeypatch.setattr(hub, "resolve", lambda where, hub_id, asked, config, split: seen.append((hub_id, asked))
                        or "abc123")
    monkeypatch.setattr(hub, "label", lambda hub_id, sha, config, split: f"hf://{hub_id}@{sha}")
    monkeypatch.setattr(hub, "rows", lambda where, hub_id, config, split, sha: iter(rows))
    text, doc = _score(tmp_path, data="someone/rb2-copy", revision="v2")
    assert seen == [("someone/rb2-copy", "v2")], "the id asked, not the importer's published one"
    assert text.startswith("read at revision abc123\nrewardbench2 / longer")
    assert doc["dataset"] == {"revision_asked": "v2", "revision": "abc123"} and doc["data"] == "someone/rb2-copy"
    _, doc = _score(tmp_path, data=None)
    assert seen[-1][0] == "allenai/reward-bench-2" and doc["dataset"]["revision_asked"] == "main"
    assert doc["data"] == "allenai/reward-bench-2", "no --data: the published id is what was read"
    rows.clear()   # the published dataset without a row: named by the flag that asked for it
    with pytest.raises(ConfigError) as exc:
        _score(tmp_path, data=None)
    assert str(exc.value) == "--benchmark rewardbench2: no items to score"


def test_the_results_json_counts_the_runs_encoder_work_and_a_rerun_reads_its_cache(tmp_path):
    """An RM that embeds (similarity) runs on the run's resources: its cache under common.cache_dir, its counts
    in the results JSON's `run` (outside any DVC hash): all encoded cold, none encoded warm."""
    params = load_params()
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    entry = params["scoring"]["rms"]["similarity"]
    args = dict(entry=entry, name="similarity", benchmark="rewardbench2", data=str(PATHS["rewardbench2"]))
    C.score_benchmark(params, out=tmp_path / "cold", **args)
    C.score_benchmark(params, out=tmp_path / "warm", **args)
    cold, warm = (json.loads((tmp_path / d / "results.json").read_text())["run"]["embeddings"] for d in ("cold", "warm"))
    assert cold["encoded"] > 0 and warm["encoded"] == 0
    assert warm["cache_hits"] == cold["cache_hits"] + cold["encoded"]


def test_a_subset_the_data_lacks_or_data_without_items_names_the_flag(tmp_path):
    with pytest.raises(ConfigError) as exc:
        _score(tmp_path, benchmark="generic", data=str(PATHS["generic"]), subset="chatt")
    assert str(exc.value) == "--subset: no subset 'chatt' in generic (did you mean 'chat'?); valid: chat, code"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ConfigError) as exc:
        _score(tmp_path, benchmark="generic", data=str(empty))
    assert str(exc.value) == f"--data {empty}: no items to score"
    assert not (tmp_path / "results.json").exists()


def test_only_the_strategies_asked_are_scored(tmp_path):
    import pyarrow.parquet as pq

    _, doc = _score(tmp_path, benchmark="prism", data=str(PATHS["prism"]), strategies=["raw_profile"])
    assert doc["config"]["strategies"] == ["raw_profile"] and list(doc["results"]["strategies"]) == ["raw_profile"]
    assert set(pq.read_table(tmp_path / "scores.parquet").column("strategy").to_pylist()) == {"raw_profile"}
    _, doc = _score(tmp_path, benchmark="prism", data=str(PATHS["prism"]))
    assert doc["config"]["strategies"] == ["none", "raw_profile"], "by default every strategy it has"
