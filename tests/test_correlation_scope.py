"""Which RMs a correlation ranks (issue 11 items 8, 9 and 2): null baselines (by kind) are left
out unless asked for, `split: null` means every split, each correlation says how many RMs it is
over, the RMs without BoN scores are named, and RMs sharing their LLM with a judge are flagged."""
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.core.artifacts import read_table, write_table
from tasks.downstream.correlation import stage

KINDS = {"a": "seq-cls", "b": "seq-cls", "c": "seq-cls", "d": "seq-cls", "e": "similarity", "f": "seq-cls",
         "len": "length-longer", "coin": "random", "pairwise": "judge-pairwise"}
RIGHT = {"a": 9, "b": 8, "c": 7, "d": 6, "e": 5, "f": 4, "len": 2, "coin": 5, "pairwise": 6}
P = {"strategy": "none", "split": "test", "benchmarks": ["personalised"], "tie_policy": "strict",
     "downstream": ["bon"], "bon_method": "expected", "bon_k": None, "exclude_rms": ["(oracle)", "(random)"],
     "rbo_p": 0.9, "bootstrap": 20, "permutations": 99, "ci": 0.95, "baselines": [], "downstream_tables": [],
     "min_rms": 5}


def _row(rm, qid, right, split):
    return {"rm": rm, "benchmark": "personalised", "rm_kind": KINDS[rm], "rm_identity": rm, "strategy": "none",
            "question_id": qid, "domain": "Art", "split": split, "score_chosen": 1.0 if right else 0.0,
            "score_rejected": 0.0 if right else 1.0, "correct": right, "tie": False, "invalid": False,
            "truncated": False, "order_consistent": None, "input_hash_chosen": "h", "input_hash_rejected": "h"}


def _inputs(root, dev_split=False):
    scores = {}
    for rm in KINDS:
        rows = [_row(rm, f"q{i}", i < RIGHT[rm], "test") for i in range(10)]
        if dev_split:   # 10 more questions in another split, all right
            rows += [_row(rm, f"d{i}", True, "dev") for i in range(10)]
        scores[rm] = str(write_table(rows, root / "scores" / f"{rm}.parquet", "scores"))
    bon = [{"rm": rm, "question_id": f"q{i}", "domain": "Art", "k": 4, "method": "expected",
            "judge_score": RIGHT[rm] / 10 + i * 0.001} for rm in KINDS if rm != "pairwise" for i in range(10)]
    path = root / "bon.parquet"
    pq.write_table(pa.Table.from_pylist(bon), path)
    return {"scores": scores, "bon": str(path)}


def _run(root, p=None, dev_split=False, **params):
    out = {k: str(root / "out" / f"{k}.{ext}") for k, ext in
           (("correlation", "parquet"), ("points", "parquet"), ("metrics", "json"), ("plot", "png"))}
    metrics = stage.run({"common": {"seed": 1}, "correlation": {**P, **(p or {})}, **params},
                        _inputs(root, dev_split), out)
    return metrics, read_table(out["points"], "correlation_points").to_pylist()


def test_null_baselines_are_left_out_by_kind_unless_included(tmp_path):
    metrics, points = _run(tmp_path)
    cell = metrics["correlations"]["personalised"]["bon"]
    assert cell["n_rms"] == 6 and "len" not in cell["rms"] and "coin" not in cell["rms"]
    assert metrics["null_baselines"] == ["coin", "len"] and not metrics["include_null_baselines"]
    assert {pt["rm"] for pt in points} == {"a", "b", "c", "d", "e", "f"}
    metrics, _ = _run(tmp_path / "with", {"include_null_baselines": True})
    assert metrics["correlations"]["personalised"]["bon"]["n_rms"] == 8


def test_rms_without_bon_scores_are_named(tmp_path):
    metrics, _ = _run(tmp_path)
    assert metrics["not_bon_capable"] == ["pairwise"]


def test_split_null_means_every_split(tmp_path):
    metrics, _ = _run(tmp_path, {"split": None}, dev_split=True)
    cell = metrics["correlations"]["personalised"]["bon"]
    assert cell["status"] == "ok" and cell["n_rms"] == 6
    assert metrics["benchmarks"]["personalised"]["accuracy"]["a"] == 0.95   # (9 + 10) / 20


def test_an_rm_sharing_the_bon_judges_llm_is_flagged(tmp_path):
    params = {"llms": {"big": {"backend": "openai", "model": "Qwen/Qwen2.5-32B-Instruct"},
                       "big-again": {"backend": "openai", "model": "Qwen/Qwen2.5-32B-Instruct"}},
              "scoring": {"rms": {**{rm: {"kind": k} for rm, k in KINDS.items()},
                                  "a": {"kind": "judge-pointwise", "llm": "big-again"}}},
              "pairs": {"judge": {"kind": "embedding"}, "keep_invalid": True, "source": "reference", "llm": "big"},
              "bon": {"judge": {"kind": "llm", "llm": "big", "mode": "all"}}}
    metrics, points = _run(tmp_path, **params)
    assert metrics["shares_llm_with"] == {"a": ["bon.judge"]}
    assert {pt["rm"]: pt["shares_llm_with"] for pt in points}["a"] == "bon.judge"
    assert {pt["shares_llm_with"] for pt in points if pt["rm"] != "a"} == {""}
