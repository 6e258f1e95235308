"""A published table through the correlation code: the RewardBench 2 paper's Table 8 (17 RMs' RB2 scores
and their PPO / BoN results, data/external/rb2_table8_*.csv) read as `correlation.baselines` and
`correlation.downstream_tables` gives the correlations the table implies."""
import copy

from tasks.core import layout
from tasks.downstream.correlation import stage
from tests.conftest import ROOT
from tests.stage_project import shipped_params

EXT = ROOT / "data" / "external"


def test_table8_gives_the_correlations_the_paper_reports(tmp_path):
    params = copy.deepcopy(shipped_params())
    params["correlation"].update(benchmarks=[], comparisons=[], downstream=[], bootstrap=50, permutations=99,
                                 baselines=[str(EXT / "rb2_table8_rbv2.csv")],
                                 downstream_tables=[str(EXT / "rb2_table8_downstream.csv")])
    out = {k: str(tmp_path / v) for k, v in layout.CORRELATION.items()}
    m = stage.run(params, {"scores": {}, "bench_scores": {}}, out)
    cells = m["correlations"]["rewardbench2-published"]
    assert cells["rb2-ppo"]["n_rms"] == cells["rb2-bon"]["n_rms"] == 17
    got = {(d, s): cells[d][s]["value"] for d in ("rb2-ppo", "rb2-bon") for s in ("pearson", "spearman")}
    want = {("rb2-ppo", "pearson"): 0.717, ("rb2-bon", "pearson"): 0.915, ("rb2-ppo", "spearman"): -0.039,
            ("rb2-bon", "spearman"): 0.793}
    assert {k: round(v, 3) for k, v in got.items()} == want
