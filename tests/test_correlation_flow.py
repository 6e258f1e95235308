"""The correlation flow under a real (test-harness) Prefect server: reads every RM's scores and
the BoN table from the project, writes its outputs, and is served from cache on a rerun."""
import pytest

from tasks.core import layout
from tests.stage_project import save_params, shipped_params
from tests.test_correlation_stage import P, write_bon, write_scores



@pytest.mark.slow
@pytest.mark.timeout(300)
def test_flow_runs_and_caches(tmp_path, monkeypatch, prefect_harness):
    from flows.common import main
    from flows.stage import flow_of
    correlation_flow = flow_of("correlation")

    write_scores(tmp_path / "data")      # data/scores/<rm>.parquet
    write_bon(tmp_path / "data")         # data/bon/per_question.parquet
    rms = {f.stem: {"kind": "random"} for f in (tmp_path / layout.SCORES_DIR).glob("*.parquet")}
    params = shipped_params(common={"seed": 2604, "cache_dir": str(tmp_path / "cache")},
                            scoring={"rms": rms, "generic_strategies": ["none"]},   # the strategy P ranks generic by
                            correlation={**P, "bootstrap": 50, "permutations": 99,
                                         "exclude_rms": ["(oracle)", "(random)"]})   # BoN's reference lines
    save_params(tmp_path, params)
    monkeypatch.chdir(tmp_path)

    assert main(correlation_flow) == 0
    # (no capsys: Prefect's console handler would keep the captured stream after the test closes it)
    assert (tmp_path / layout.CORRELATION["plot"]).exists()
    stamps = {k: (tmp_path / v).stat().st_mtime_ns for k, v in layout.CORRELATION.items()}
    assert main(correlation_flow) == 0   # same inputs: the cached result, no rewrite
    assert {k: (tmp_path / v).stat().st_mtime_ns for k, v in layout.CORRELATION.items()} == stamps
