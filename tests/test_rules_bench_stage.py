"""The bench_score stage by hand, beyond tests/test_bench_stage.py: each refusal's one line; the tables it
leaves (one per listed RM, none for an RM taken off the list, a rerun into the same folder); the revision of a
`hf download --local-dir` copy recorded with its hub id (the entry's, else the importer's published one), and a
pin that copy does not hold refused with the command that fetches it."""
from __future__ import annotations

import copy
import shutil

import pytest

from tasks.core import layout
from tasks.core.errors import ConfigError
from tasks.stages.benchmarks import stage
from tests.conftest import ROOT
from tests.stage_project import shipped_params

SHA, OTHER = "a" * 40, "b" * 40


def _out(tmp_path, b="rb2-demo"):
    return {k: str(tmp_path / v) for k, v in layout.bench_scores(b).items()}


def _params(tmp_path, **entry):
    """rb2-demo on a copy of its fixture (so a test can add hub metadata beside it), with two cheap RMs."""
    params = copy.deepcopy(shipped_params())
    copy_dir = tmp_path / "rb2"
    copy_dir.mkdir(exist_ok=True)
    shutil.copy(ROOT / params["benchmarks"]["rb2-demo"]["path"], copy_dir / "rewardbench2.jsonl")
    params["benchmarks"]["rb2-demo"].update({"path": str(copy_dir / "rewardbench2.jsonl"),
                                             "rms": ["length-longer", "random"], **entry})
    return params


def _hf_copy(tmp_path, sha):
    meta = tmp_path / "rb2" / ".cache" / "huggingface" / "download"
    meta.mkdir(parents=True, exist_ok=True)
    (meta / "rewardbench2.jsonl.metadata").write_text(f"{sha}\netag\n1700000000.0\n")


def test_each_refusal_is_one_line_naming_the_key(tmp_path):
    params = _params(tmp_path)
    params["benchmarks"]["rb2 demo"] = params["benchmarks"]["rb2-demo"]
    with pytest.raises(ConfigError) as exc:
        stage.run(params, "rb2 demo", _out(tmp_path))
    assert str(exc.value) == "benchmarks.rb2 demo: a name of letters, digits, '-' and '_' only"
    params = _params(tmp_path, rms=[])
    with pytest.raises(ConfigError) as exc:
        stage.run(params, "rb2-demo", _out(tmp_path))
    assert str(exc.value) == "benchmarks.rb2-demo.rms: list the RMs to score (names under scoring.rms)"
    params = _params(tmp_path, path=None)
    with pytest.raises(ConfigError) as exc:
        stage.run(params, "rb2-demo", _out(tmp_path))
    assert str(exc.value) == (
        "benchmarks.rb2-demo.path: the pipeline scores a local copy (DVC tracks it); download the hub files first "
        "(`hf download <id> --repo-type dataset --revision <rev> --local-dir <path>`: the sha is then recorded), "
        "or use `prbench score --benchmark` for a hub id")
    params = _params(tmp_path, subset="Mathh")
    with pytest.raises(ConfigError) as exc:
        stage.run(params, "rb2-demo", _out(tmp_path))
    assert str(exc.value).startswith("benchmarks.rb2-demo.subset: no subset 'Mathh' in rewardbench2 (did you mean 'Math'?)")
    assert not (tmp_path / "data").exists(), "refused before any work"


def test_one_table_per_listed_rm_none_left_for_an_rm_taken_off_and_a_rerun_in_place(tmp_path):
    out = _out(tmp_path)
    m = stage.run(_params(tmp_path), "rb2-demo", out)
    folder = tmp_path / "data/bench_scores/rb2-demo"
    assert sorted(p.name for p in folder.iterdir()) == ["length-longer.parquet", "random.parquet"]
    assert (m["benchmark"], m["source"], m["items"], m["strategies"]) == ("rb2-demo", "rewardbench2", 6, ["none"])
    assert sorted(m["rms"]) == ["length-longer", "random"] and m["rms"]["random"]["kind"] == "random"
    assert "hub_id" not in m and "revision" not in m, "a copy made by hand records no revision"
    (folder / "notes.txt").write_text("mine")
    m = stage.run(_params(tmp_path, rms=["length-longer"]), "rb2-demo", out)
    assert sorted(p.name for p in folder.iterdir()) == ["length-longer.parquet", "notes.txt"]
    assert list(m["rms"]) == ["length-longer"]
    assert stage.stage_run(_params(tmp_path), "rb2-demo", {}, out)["rms"].keys() == {"length-longer", "random"}


def test_a_local_hub_copy_records_its_revision_and_a_pin_it_lacks_is_refused(tmp_path):
    _hf_copy(tmp_path, SHA)
    m = stage.run(_params(tmp_path), "rb2-demo", _out(tmp_path))
    assert (m["hub_id"], m["revision"]) == ("allenai/reward-bench-2", SHA), "the importer's published id"
    m = stage.run(_params(tmp_path, hub_id="me/rb2-fork", revision=SHA), "rb2-demo", _out(tmp_path))
    assert (m["hub_id"], m["revision"]) == ("me/rb2-fork", SHA)
    with pytest.raises(ConfigError) as exc:
        stage.run(_params(tmp_path, hub_id="me/rb2-fork", revision=OTHER), "rb2-demo", _out(tmp_path))
    path = tmp_path / "rb2" / "rewardbench2.jsonl"
    assert str(exc.value) == (f"benchmarks.rb2-demo.revision: pins {OTHER} but the local copy at {path} is revision "
                              f"{SHA}: run `hf download me/rb2-fork --repo-type dataset --revision {OTHER} "
                              f"--local-dir {path}`")


def test_each_rm_is_named_by_its_identity_and_the_runs_counters_stay_out_of_the_metrics(tmp_path):
    """The metrics name each RM's identity (what provenance compares across runs); the run's counters (an
    embedding RM's encodes and cache hits) go to the run record, outside DVC's hashes."""
    import json

    from tasks.core.runlog import read_counters
    from tasks.models.resources import Resources
    from tasks.models.rms.registry import make_rm

    params = _params(tmp_path, rms=["similarity", "random"])
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    out = _out(tmp_path)
    m = stage.run(params, "rb2-demo", out)
    for name in ("similarity", "random"):
        want = make_rm(name, params["scoring"]["rms"][name], Resources(params)).identity()
        assert m["rms"][name]["identity"] == want
    written = json.loads((tmp_path / layout.bench_scores("rb2-demo")["metrics"]).read_text())
    assert "run" not in written and written["rms"]["similarity"]["identity"] == m["rms"]["similarity"]["identity"]
    assert read_counters(out["metrics"])["embeddings"]["encoded"] > 0
