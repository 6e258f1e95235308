"""The correlation stage on hand-made scores and BoN tables: per-question accuracies, pseudo-RMs
left out, every metric with CI and p-value, the points table, too few RMs, external baseline and
downstream tables (and their one-line validation errors), byte-stable outputs."""
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.core.artifacts import file_hash, write_table
from tasks.downstream.correlation import metrics as M
from tasks.downstream.correlation import stage
from tasks.downstream.correlation.methods import load_bon
from tasks.core.errors import ConfigError, DataErrors

RMS = ["a", "b", "c", "d", "e", "f"]
ACC = dict(zip(RMS, [9, 8, 7, 6, 5, 4]))   # personalised: right answers out of 10
BON = dict(zip(RMS, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]))
P = {"strategy": "none", "split": "test", "benchmarks": ["personalised", "generic"], "tie_policy": "strict",
     "downstream": ["bon"], "bon_method": "expected", "bon_k": None, "exclude_rms": ["oracle", "random"],
     "rbo_p": 0.9, "bootstrap": 200, "permutations": 999, "ci": 0.95, "baselines": [], "downstream_tables": [],
     "min_rms": 5, "comparisons": [["personalised", "generic"]]}


def score(rm, qid, outcome, benchmark="personalised", strategy="none", split="test"):
    cs, cr = {"right": (1.0, 0.0), "wrong": (0.0, 1.0), "tie": (0.5, 0.5)}[outcome]
    return {"rm": rm, "benchmark": benchmark, "rm_kind": "test", "rm_identity": f"test:{rm}", "strategy": strategy,
            "question_id": qid, "domain": "Art", "split": split, "score_chosen": cs, "score_rejected": cr,
            "correct": cs > cr, "tie": cs == cr, "invalid": False, "truncated": False, "order_consistent": None,
            "input_hash_chosen": "h", "input_hash_rejected": "h"}


def write_scores(root, rms=RMS, extra=()):
    paths = {}
    for rm in [*rms, *extra]:
        right = ACC.get(rm, 5)
        rows = [score(rm, f"q{i}", "right" if i < right else "wrong") for i in range(10)]
        rows += [score(rm, f"q{i}", "right" if i < 13 - right else "wrong", benchmark="generic") for i in range(10)]
        rows += [score(rm, f"q{i}", "wrong", strategy="raw_profile") for i in range(10)]    # another strategy: ignored
        rows += [score(rm, "t0", "wrong", split="train")]                                   # another split: ignored
        paths[rm] = str(write_table(rows, root / "scores" / f"{rm}.parquet", "scores"))
    return paths


def write_bon(root, rms=RMS):
    rows = []
    for rm in [*rms, "oracle", "random"]:
        for i in range(10):
            for k, method in ((1, "expected"), (4, "first_k"), (4, "expected")):
                base = BON.get(rm, 0.99 if rm == "oracle" else 0.3)
                rows.append({"rm": rm, "question_id": f"q{i}", "domain": "Art", "k": k, "method": method,
                             "judge_score": base + (i % 3 - 1) * 0.01 if (k, method) == (4, "expected") else 0.0})
    path = root / "bon" / "per_question.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows).cast(pa.schema([
        ("rm", pa.string()), ("question_id", pa.string()), ("domain", pa.string()), ("k", pa.int32()),
        ("method", pa.string()), ("judge_score", pa.float64())])), path)
    return str(path)


def outs(root):
    return {"correlation": str(root / "out/correlation.parquet"), "points": str(root / "out/points.parquet"),
            "metrics": str(root / "out/correlation.json"), "plot": str(root / "out/correlation.png")}


def run(root, p=None, rms=RMS, extra=("random",)):
    inputs = {"scores": write_scores(root, rms, extra), "bon": write_bon(root, rms)}
    return stage.run({"common": {"seed": 2604}, "correlation": {**P, **(p or {})}}, inputs, outs(root))


def test_agreeing_and_reversed_benchmarks(tmp_path, figures):
    metrics = run(tmp_path)
    assert metrics["status"] == "ok"
    assert metrics["benchmarks"]["personalised"]["accuracy"] == {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.5,
                                                                 "f": 0.4, "random": 0.5}
    pers, gen = metrics["correlations"]["personalised"]["bon"], metrics["correlations"]["generic"]["bon"]
    assert pers["rms"] == RMS and pers["n_rms"] == 6, "oracle and random are pseudo-RMs, never correlated"
    assert pers["spearman"]["value"] == 1.0 and pers["ndcg"]["value"] == 1.0 and pers["rbo"]["value"] == 1.0
    assert pers["spearman"]["p_value"] == round(1 / 720, 4)   # exact: the only permutation as good as the data
    assert gen["spearman"]["value"] == -1.0 and gen["kendall_tau_b"]["value"] == -1.0
    rows = pq.read_table(tmp_path / "out/correlation.parquet").to_pylist()
    assert len(rows) == 2 * len(M.METRICS) and {r["status"] for r in rows} == {"ok"}
    cells = [c for by_down in metrics["comparisons"].values() for cell in by_down.values() for c in cell.values()
             if isinstance(c, dict) and c.get("p_value") is not None]
    family = [r["p_value"] for r in rows] + [c["p_value"] for c in cells]   # exploratory: one Holm family
    assert metrics["exploratory"] and len(family) > len(rows)
    assert min([r["p_holm"] for r in rows] + [c["p_holm"] for c in cells]) == pytest.approx(len(family) * min(family))
    assert all(r["p_value"] <= r["p_holm"] <= 1 for r in rows)
    assert {r["predictor"] for r in rows} == {"accuracy"}, "one domain: no worst-domain predictor"
    for r in rows:
        assert r["ci_low"] <= r["value"] + 1e-9 and r["value"] <= r["ci_high"] + 1e-9
    points = pq.read_table(tmp_path / "out/points.parquet").to_pylist()
    a = next(p for p in points if p["rm"] == "a" and p["benchmark"] == "personalised")
    assert a == {"rm": "a", "benchmark": "personalised", "predictor": "accuracy", "accuracy": 0.9, "benchmark_rank": 1,
                 "downstream": "bon", "downstream_score": pytest.approx(0.899), "downstream_rank": 1,
                 "shares_llm_with": "", "shares_encoder_with": "", "in_distribution": False}
    assert {p["rm"] for p in points} == set(RMS)
    panels = {ax["title"].split(" (")[0]: ax for ax in figures["correlation.png"]}
    assert set(panels) == {"personalised vs bon", "generic vs bon"}
    for bench, ax in panels.items():
        mine = [p for p in points if f"{p['benchmark']} vs {p['downstream']}" == bench]
        np.testing.assert_allclose(sorted(ax["points"]), sorted([p["accuracy"], p["downstream_score"]] for p in mine))
        assert sorted(ax["texts"]) == sorted(p["rm"] for p in mine), "every point named by its RM"
    assert panels["personalised vs bon"]["title"] == ("personalised vs bon (6 RMs): r 1.00 [0.714, 1.000], rho 1.00\n"
                                                      "NDCG 1.000 (random 0.914, reversed 0.829)")
    assert json.loads((tmp_path / "out/correlation.json").read_text())["conventions"]["ndcg_gain"].startswith("gain =")


def test_bon_uses_expected_at_the_largest_k_and_ignores_missing_scores(tmp_path):
    side = load_bon(write_bon(tmp_path), P)
    assert side.source.endswith("expected at k=4")
    assert side.value("a") == pytest.approx(0.899)   # offsets -1, 0, 1, ... over 10 questions sum to -1 × 0.01
    with pytest.raises(ConfigError, match="run the bon_report stage first"):
        load_bon(str(tmp_path / "nothing.parquet"), P)


def test_outputs_are_byte_stable(tmp_path):
    quick = {"permutations": 99, "bootstrap": 50}   # randomised permutations: seeded, so still stable
    run(tmp_path, quick)
    first = {k: file_hash(v) for k, v in outs(tmp_path).items() if v.endswith(".parquet") or v.endswith(".json")}
    run(tmp_path, quick)
    assert {k: file_hash(v) for k, v in outs(tmp_path).items() if k in first} == first


def test_too_few_rms_says_so(tmp_path, figures):
    metrics = run(tmp_path, rms=["a", "b", "c"])
    assert metrics["status"] == "too few RMs (n=3 < 5)"
    pers = metrics["correlations"]["personalised"]["bon"]
    assert pers["status"] == "too few RMs (n=3 < 5)" == pers["spearman"].pop("verdict")
    assert set(pers["spearman"].values()) == {None}, "no CI claimed"
    rows = pq.read_table(tmp_path / "out/correlation.parquet").to_pylist()
    assert all(r["value"] is None and r["ci_low"] is None and r["status"] == "too few RMs (n=3 < 5)" for r in rows)
    assert "too few RMs (n=3 < 5)" in stage.format_table(rows)
    assert metrics["comparisons"]["personalised vs generic"]["bon"]["status"] == "too few RMs (n=3 < 5)"
    assert [ax["title"] for ax in figures["correlation.png"]] == [
        f"{b} vs bon (3 RMs): too few RMs (n=3 < 5)" for b in ("personalised", "generic")], "no rho on the plot"


def test_tie_policy_credits_ties(tmp_path):
    rows = [score("a", "q0", "tie"), score("a", "q1", "right")]
    path = str(write_table(rows, tmp_path / "a.parquet", "scores"))
    assert stage.load_benchmarks({"a": path}, P)["personalised"].value("a") == 0.5
    assert stage.load_benchmarks({"a": path}, {**P, "tie_policy": "half"})["personalised"].value("a") == 0.75


def test_external_baselines_and_downstream_tables(tmp_path):
    prism = tmp_path / "prism.csv"
    prism.write_text("rm,benchmark,accuracy\n" + "".join(f"{rm},prism,{v}\n" for rm, v in
                                                           zip(RMS, [0.1, 0.3, 0.2, 0.5, 0.4, 0.6])))
    ppo = tmp_path / "ppo.parquet"
    pq.write_table(pa.table({"rm": RMS, "method": ["ppo"] * 6, "score": [0.6, 0.5, 0.4, 0.3, 0.2, 0.1]}), ppo)
    metrics = run(tmp_path, {"baselines": [str(prism)], "downstream_tables": [str(ppo)], "permutations": 99,
                             "bootstrap": 50})
    assert set(metrics["correlations"]) == {"personalised", "generic", "prism"}
    assert set(metrics["correlations"]["prism"]) == {"bon", "ppo"}
    assert metrics["correlations"]["personalised"]["ppo"]["spearman"]["value"] == 1.0
    prism_ppo = metrics["correlations"]["prism"]["ppo"]
    assert prism_ppo["spearman"]["value"] < 0 and prism_ppo["spearman"]["ci_low_questions"] is None, \
        "two fixed tables: no questions to resample"
    assert prism_ppo["spearman"]["ci_low"] is not None, "the RMs are still resampled"
    assert metrics["correlations"]["prism"]["bon"]["spearman"]["ci_low"] is not None
    table = stage.format_table(pq.read_table(tmp_path / "out/correlation.parquet").to_pylist())
    assert "prism" in table.splitlines()[-1] and "benchmark" in table.splitlines()[0]


def test_external_table_errors_name_file_row_and_field(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("rm,benchmark,accuracy\nx,prism,abc\n,prism,0.5\ny,personalised,0.5\nz,prism,0.3\nz,prism,0.4\n"
                   "w,prism,inf\n")
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("rm,accuracy\nx,0.5\n")
    with pytest.raises(DataErrors) as exc:
        stage.load_external("baselines", [str(bad), str(nocol), str(tmp_path / "gone.csv"), str(tmp_path / "x.txt")],
                            {"personalised", "generic"})
    lines = str(exc.value).splitlines()
    assert lines == [
        f"{bad}: row 0 (id=x): field 'accuracy': not a finite number: 'abc'",
        f"{bad}: row 1: field 'rm': empty",
        f"{bad}: row 2 (id=y): field 'benchmark': 'personalised' is computed by the pipeline; give the external one another name",
        f"{bad}: row 4 (id=z): field 'rm': duplicate (z, prism); first at {bad} row 3",
        f"{bad}: row 5 (id=w): field 'accuracy': not a finite number: 'inf'",
        f"{nocol}: field 'benchmark': missing column",
        f"{tmp_path / 'gone.csv'}: file not found (listed in correlation.baselines)",
        f"{tmp_path / 'x.txt'}: file not found (listed in correlation.baselines)",
    ]
    txt = tmp_path / "y.txt"
    txt.write_text("rm\n")
    neg = tmp_path / "neg.csv"
    neg.write_text("rm,method,score\nx,ppo,-0.5\n")
    with pytest.raises(DataErrors) as exc:
        stage.load_external("downstream_tables", [str(txt), str(neg)], {"bon"})
    assert str(exc.value).splitlines() == [f"{txt}: unsupported format '.txt'; use .csv or .parquet",
                                           f"{neg}: row 0 (id=x): field 'score': must be >= 0 (it is an NDCG gain), got -0.5"]


def test_bad_params_fail_with_the_key(tmp_path):
    for key, value, match in (("rbo_p", 1.0, "correlation.rbo_p"), ("tie_policy", "drop", "correlation.tie_policy"),
                              ("downstream", ["dpo"], "unknown downstream 'dpo'"), ("strategy", "nope", "strateg")):
        with pytest.raises(ConfigError, match=match):
            stage.check_params({**P, key: value})
    with pytest.raises(ConfigError, match="nothing downstream"):
        stage.run({"common": {"seed": 1}, "correlation": {**P, "downstream": []}}, {"scores": {}}, outs(tmp_path))


def _independent_bootstrap(bench: np.ndarray, down: np.ndarray, resamples: int, seed: int) -> dict:
    """Percentile bootstrap over questions written here with numpy alone: bench and down are RMs ×
    questions (RMs in name order); each resample draws questions with replacement (the same ones on
    both sides), re-averages every RM and recomputes Spearman ρ and NDCG. -> metric: draws."""
    rng = np.random.default_rng(seed)
    n_rms, n_q = bench.shape
    idx = rng.integers(0, n_q, size=(resamples, n_q))
    b, d = bench[:, idx].mean(axis=2).T, down[:, idx].mean(axis=2).T          # resamples × RMs
    from scipy.stats import rankdata

    rb, rd = rankdata(b, axis=1), rankdata(d, axis=1)                          # average ranks for ties
    rb, rd = rb - rb.mean(axis=1, keepdims=True), rd - rd.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        rho = (rb * rd).sum(axis=1) / np.sqrt((rb ** 2).sum(axis=1) * (rd ** 2).sum(axis=1))
    order = np.argsort(-b, axis=1, kind="stable")                              # ties: the first name first
    discount = 1 / np.log2(np.arange(2, n_rms + 2))
    dcg = (np.take_along_axis(d, order, axis=1) * discount).sum(axis=1)
    ideal = (-np.sort(-d, axis=1) * discount).sum(axis=1)
    return {"spearman": rho[np.isfinite(rho)], "ndcg": dcg / ideal}


def test_the_correlation_ci_is_the_95_percent_bootstrap_interval_of_the_data(tmp_path):
    """The stage's CI against an independent bootstrap of the same per-question data: each end must
    lie nearer the independent 95% end than the 97.5% one (a CI computed at another level and
    labelled 95% fails), and the interval must hold the value."""
    rng = np.random.default_rng(7)
    rms, n_q = [f"rm{i:02d}" for i in range(12)], 60   # 12 RMs: ρ's steps are fine enough to tell the levels apart
    skill = np.linspace(0.35, 0.8, len(rms))
    credit = (rng.random((len(rms), n_q)) < skill[:, None]).astype(float)          # right (1) or wrong (0) per pair
    level = 0.2 + 0.3 * skill + 0.15 * rng.random(len(rms))                       # related to skill, not in its order
    judge = np.clip(level[:, None] + rng.normal(0, 0.25, (len(rms), n_q)), 0.01, 1.0).round(6)   # BoN score per question
    scores = {}
    for i, rm in enumerate(rms):
        rows = [score(rm, f"q{j}", "right" if credit[i, j] else "wrong") for j in range(n_q)]
        scores[rm] = str(write_table(rows, tmp_path / "scores" / f"{rm}.parquet", "scores"))
    bon = [{"rm": rm, "question_id": f"q{j}", "domain": "Art", "k": 4, "method": "expected",
            "judge_score": float(judge[i, j])} for i, rm in enumerate(rms) for j in range(n_q)]
    path = tmp_path / "bon.parquet"
    pq.write_table(pa.Table.from_pylist(bon).cast(pa.schema([
        ("rm", pa.string()), ("question_id", pa.string()), ("domain", pa.string()), ("k", pa.int32()),
        ("method", pa.string()), ("judge_score", pa.float64())])), path)
    p = {**P, "benchmarks": ["personalised"], "exclude_rms": [], "bootstrap": 2000, "permutations": 99}
    stage.run({"common": {"seed": 2604}, "correlation": p}, {"scores": scores, "bon": str(path)}, outs(tmp_path))
    got = {r["metric"]: r for r in pq.read_table(tmp_path / "out/correlation.parquet").to_pylist()}

    draws = _independent_bootstrap(credit, judge, 40_000, seed=11)
    checked = 0
    for metric, vs in draws.items():
        r = got[metric]
        # the questions-only interval (the stage also reports one that resamples the RMs, wider)
        assert r["ci_low_questions"] <= r["value"] <= r["ci_high_questions"]
        assert r["ci_low"] <= r["ci_low_questions"] and r["ci_high_questions"] <= r["ci_high"] + 1e-9
        lo95, hi95 = np.quantile(vs, [0.025, 0.975])
        lo975, hi975 = np.quantile(vs, [0.0125, 0.9875])
        for end, at95, at975 in (("ci_low_questions", lo95, lo975), ("ci_high_questions", hi95, hi975)):
            gap = abs(at95 - at975)
            if gap < 0.003:   # the levels nearly agree here (NDCG near its bound of 1): resampling noise would decide
                continue
            checked += 1
            assert abs(r[end] - at95) < gap / 2, (metric, end, r[end], {"95%": at95, "97.5%": at975})
    assert checked >= 3, "the data leaves enough spread to tell a 95% interval from a 97.5% one"


def test_pairings_in_forked_workers_give_the_serial_bytes(tmp_path, monkeypatch):
    """Each benchmark × predictor × downstream pairing runs in a forked worker when there are CPUs to spare
    (tasks/core/parallel.py): the same bytes as one after another in this process, in the same order."""
    import os

    from tasks.core import parallel

    pids = tmp_path / "pids"
    pids.mkdir()
    pairing = stage.pairing

    def recorded(*args, **kwargs):
        (pids / str(os.getpid())).touch()
        return pairing(*args, **kwargs)
    monkeypatch.setattr(stage, "pairing", recorded)
    quick = {"permutations": 99, "bootstrap": 50}
    got = {}
    for cpus in (1, 3):
        monkeypatch.setattr(parallel, "cpus", lambda: cpus)
        run(tmp_path, quick)   # the same folder: the metrics name their input files
        got[cpus] = {k: file_hash(v) for k, v in outs(tmp_path).items() if not v.endswith(".png")}
        seen = {int(p.name) for p in pids.iterdir()}
        assert (seen == {os.getpid()}) == (cpus == 1), (cpus, seen)
        for p in pids.iterdir():
            p.unlink()
    assert got[3] == got[1]
