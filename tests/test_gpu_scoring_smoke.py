"""benchmarks/gpu_scoring.py on CPU (its smoke config): it runs in seconds, so it cannot rot between lent GPUs."""
import importlib.util
import json

from tests.conftest import ROOT


def test_gpu_scoring_runs_on_cpu_and_finds_the_invariant_mode_bitwise_equal(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("gpu_scoring", ROOT / "benchmarks" / "gpu_scoring.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--smoke", "--out", str(tmp_path / "out.json")])
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["smoke"] and doc["repeat_identical"] and doc["batches"]["invariant"]["bitwise_equal"]
    assert set(doc["ratios"]) == {"ours/bare", "invariant/ours", "ours/peers"} and all(v > 0 for v in doc["ratios"].values())
    assert set(doc["dtypes"]["within_resolution"]) == {"float32", "bfloat16"}
    assert "ours/bare = " in capsys.readouterr().out
