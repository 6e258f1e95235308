"""The stage flows under a real (test-harness) Prefect server: outputs, cross-run caching, and
recomputation when a cached output was removed."""
import os
from pathlib import Path

import pytest
import yaml

from tasks.artifacts import file_hash
from tests.conftest import ROOT, ingest_params, make_row, write_json_rows
from tests.stage_project import DUMMY, use_test_llm


@pytest.fixture
def project(tmp_path, monkeypatch):
    data = tmp_path / "raw"
    write_json_rows(data / "Lifestyle_and_Personal_Development_test.json", [make_row(i, prefix="2_0") for i in range(3)])
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["ingest"] = ingest_params(data)
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    params["profiles"]["k"] = 4
    use_test_llm(params, DUMMY)
    params["pairs"]["source"] = "generate"   # these rows carry no reference pairs
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pipeline_flow_runs_caches_and_repairs(project, prefect_harness):
    from flows.common import main
    from flows.pipeline import pipeline

    assert main(pipeline, until="pairs") == 0
    outputs = [Path(p) for p in ("data/ingest/questions.parquet", "data/ingest/profiles.parquet",
                                 "data/profiles/ranked.parquet", "data/profiles/context.parquet",
                                 "data/rubrics/inferred.parquet", "data/pairs/generated.parquet",
                                 "metrics/ingest.json", "metrics/profiles.json", "metrics/pairs.json")]
    assert all(p.exists() for p in outputs)
    stamps = {p: p.stat().st_mtime_ns for p in outputs}
    hashes = {p: file_hash(p) for p in outputs if p.suffix == ".parquet"}

    assert main(pipeline, until="pairs") == 0       # same inputs: Prefect serves the cached results
    assert {p: p.stat().st_mtime_ns for p in outputs} == stamps

    os.remove("data/profiles/ranked.parquet")         # a cached result whose file is gone is recomputed
    assert main(pipeline, until="pairs") == 0
    assert {p: file_hash(p) for p in hashes} == hashes


def test_flow_failure_is_reported_not_raised(project, prefect_harness, capsys):
    from flows.common import main
    from flows.ingest import ingest_flow

    write_json_rows(project / "raw" / "Lifestyle_and_Personal_Development_test.json", [make_row(0, question="")])
    assert main(ingest_flow) == 1
    assert "row 0 (id=1_0_0): field 'question': empty" in capsys.readouterr().err
