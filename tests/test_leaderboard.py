"""The leaderboard: tie policies, invalid rows as wrong, micro vs macro, bootstrap CIs that are
reproducible and per-RM stable, the oracle flagged, and schema-valid, byte-stable outputs."""
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tasks.core import layout
from tasks.stages import leaderboard
from tasks.core.artifacts import file_hash, read_table, write_table
from tasks.core.errors import ConfigError
from tests.figures import bars_by_tick
from tests.stage_project import save_params, shipped_params

P = {"tie_policy": "strict", "bootstrap": 500, "ci": 0.95, "split": "test", "heatmap_strategy": "raw_profile"}
SEED = 2604


def score(rm, qid, cs, cr, *, strategy="none", domain="Art", split="test", truncated=False, consistent=None):
    bad = cs is None or cr is None
    return {"rm": rm, "benchmark": "personalised", "rm_kind": "test", "rm_identity": f"test:{rm}",
            "strategy": strategy, "question_id": qid,
            "domain": domain, "split": split, "score_chosen": cs, "score_rejected": cr,
            "correct": not bad and cs > cr, "tie": not bad and cs == cr, "invalid": bad, "truncated": truncated,
            "order_consistent": consistent, "input_hash_chosen": "h", "input_hash_rejected": "h"}


def outcomes(rm, right=0, wrong=0, ties=0, invalid=0, **kw):
    kinds = [(1.0, 0.0)] * right + [(0.0, 1.0)] * wrong + [(0.5, 0.5)] * ties + [(None, 0.2)] * invalid
    return [score(rm, f"{rm}-{kw.get('domain', 'Art')}-{i}", cs, cr, **kw) for i, (cs, cr) in enumerate(kinds)]


def rows_for(scores, **p):
    return leaderboard.leaderboard_rows(scores, {**P, **p}, SEED)


def pick(rows, rm="a", strategy="none", domain="micro"):
    return next(r for r in rows if (r["rm"], r["strategy"], r["domain"]) == (rm, strategy, domain))


@pytest.mark.parametrize("policy, n, accuracy", [("strict", 7, 3 / 7), ("half", 7, 4 / 7), ("drop", 5, 3 / 5)])
def test_tie_policies_by_hand(policy, n, accuracy):
    # 3 right, 1 wrong, 2 ties, 1 invalid
    row = pick(rows_for(outcomes("a", right=3, wrong=1, ties=2, invalid=1), tie_policy=policy))
    assert (row["n"], row["accuracy"], row["ties"], row["invalid"]) == (n, round(accuracy, 4), 2, 1)
    assert row["tie_policy"] == policy


@pytest.mark.parametrize("policy", leaderboard.POLICIES)
def test_invalid_rows_are_wrong_and_counted_under_every_policy(policy):
    scores = outcomes("a", invalid=3)
    scores[0]["correct"] = True                     # an inconsistent flag does not make an invalid row right
    scores[1]["invalid"] = False                    # a null score is invalid even when the flag says otherwise
    scores.append(score("a", "trunc", 1.0, 0.0, truncated=True))
    row = pick(rows_for(scores, tie_policy=policy))
    assert (row["n"], row["accuracy"], row["invalid"], row["truncated"]) == (4, 0.25, 3, 1)


def test_macro_is_the_mean_of_domains_micro_of_pairs():
    scores = outcomes("a", right=8, domain="Art") + outcomes("a", wrong=2, domain="Society")
    rows = rows_for(scores)
    assert [r["domain"] for r in rows] == ["Art", "Society", "micro", "macro"]
    assert (pick(rows)["accuracy"], pick(rows)["n"]) == (0.8, 10)
    assert (pick(rows, domain="macro")["accuracy"], pick(rows, domain="macro")["n"]) == (0.5, 10)
    assert pick(rows, domain="Art")["accuracy"] == 1.0 and pick(rows, domain="Society")["accuracy"] == 0.0


def test_bootstrap_ci_contains_estimate_is_reproducible_and_per_rm_stable():
    a = outcomes("a", right=13, wrong=7, ties=3, domain="Art") + outcomes("a", right=5, wrong=6, domain="Society")
    first = rows_for(a, tie_policy="half")
    for r in first:
        assert r["ci_low"] <= r["accuracy"] <= r["ci_high"] and r["ci_low"] < r["ci_high"], r
    assert rows_for(a, tie_policy="half") == first
    with_b = rows_for(outcomes("b", right=4, wrong=9) + a, tie_policy="half")
    assert [r for r in with_b if r["rm"] == "a"] == first
    assert [r["rm"] for r in with_b] == ["a"] * 4 + ["b"] * 3
    other_seed = leaderboard.leaderboard_rows(a, {**P, "tie_policy": "half"}, SEED + 1)
    assert [r["ci_low"] for r in other_seed] != [r["ci_low"] for r in first]


def test_bootstrap_matches_resampling_pairs():
    import numpy as np

    values = np.array([1.0] * 60 + [0.0] * 40)
    means = leaderboard.boot_means(values, leaderboard.stable_rng(SEED, "x"), 20_000)
    assert abs(means.mean() - 0.6) < 0.005 and abs(means.std() - (0.6 * 0.4 / 100) ** 0.5) < 0.003


def test_all_correct_rm_has_ci_one_one():
    rows = rows_for(outcomes("a", right=12, domain="Art") + outcomes("a", right=3, domain="Society"))
    assert all((r["accuracy"], r["ci_low"], r["ci_high"]) == (1.0, 1.0, 1.0) for r in rows)


def test_no_counted_pair_gives_no_accuracy_not_a_crash():
    rows = rows_for(outcomes("a", ties=2, domain="Art") + outcomes("a", right=1, domain="Society"), tie_policy="drop")
    art = pick(rows, domain="Art")
    assert (art["n"], art["accuracy"], art["ci_low"], art["ties"]) == (0, None, None, 2)
    assert pick(rows, domain="macro")["accuracy"] == 1.0    # the empty domain is not averaged in as 0


def test_oracle_is_flagged_and_labelled_and_strategies_ordered():
    scores = outcomes("a", right=2, strategy="oracle") + outcomes("a", right=1, wrong=1, strategy="none")
    rows = rows_for(scores)
    assert [r["strategy"] for r in rows if r["domain"] == "micro"] == ["none", "oracle"]
    assert {r["strategy"]: r["evaluation_only"] for r in rows} == {"none": False, "oracle": True}
    table = leaderboard.format_table(rows)
    assert "oracle (upper bound)" in table and "0.500 [" in table and "tie policy: strict" in table


def test_position_bias_only_for_pairwise_judges():
    judged = [score("j", f"q{i}", 1.0, 0.0, consistent=c) for i, c in enumerate([True, False, False, None])]
    scores = judged + outcomes("p", right=2)
    rows = rows_for(scores)
    m = leaderboard.leaderboard_metrics(rows, scores, P)["rms"]
    assert m["j"]["none"]["position_bias"] == round(2 / 3, 4) and m["p"]["none"]["position_bias"] is None


@pytest.mark.parametrize("bad", [{"tie_policy": "lenient"}, {"bootstrap": 0}, {"ci": 95}])
def test_bad_params_name_the_key(bad):
    key = next(iter(bad))
    with pytest.raises(ConfigError, match=f"leaderboard.{key}"):
        leaderboard.check_params({**P, **bad})


def test_missing_params_are_named():
    with pytest.raises(ConfigError, match="missing heatmap_strategy"):
        leaderboard.check_params({k: v for k, v in P.items() if k != "heatmap_strategy"})


def _stage(root: Path, scores_by_rm: dict, **p) -> tuple[dict, dict]:
    inputs = {}
    for rm, rows in scores_by_rm.items():
        inputs[rm] = str(write_table(rows, root / layout.scores(rm)["scores"], "scores"))
    out = {k: str(root / v) for k, v in layout.LEADERBOARD.items()}
    return leaderboard.run({"common": {"seed": SEED}, "leaderboard": {**P, **p}}, inputs, out), out


def _scores():
    return {"bm25-rm": outcomes("bm25-rm", right=6, wrong=3, ties=1, domain="Art")
            + outcomes("bm25-rm", right=2, wrong=2, invalid=1, domain="Society")
            + outcomes("bm25-rm", right=9, wrong=1, strategy="oracle", domain="Art")
            + outcomes("bm25-rm", right=1, split="train"),
            "judge": outcomes("judge", right=5, wrong=5, strategy="raw_profile", domain="Art", consistent=False)
            + outcomes("judge", right=3, strategy="raw_profile", domain="Society", consistent=True)}


EXACT_B = 20001   # (B - 1) * 0.025 is whole: np.quantile lands on one resample, no interpolation


def exact_ci(domains: list[tuple[int, int]], level: float = 0.95) -> list[float]:
    """The percentile-bootstrap CI without resampling: resampling n 0/1 credits of which k are 1 gives
    Binomial(n, k/n) ones, so the bootstrap mean has that law over n (macro: the mean of independent
    per-domain ones). domains: [(credits, pairs)]. Each quantile must sit clear of a jump of the CDF,
    so EXACT_B seeded resamples land on it (sd of an empirical CDF there: ~0.0011)."""
    from scipy.stats import binom

    dist = {Fraction(0): 1.0}
    for k, n in domains:
        pmf = binom.pmf(range(n + 1), n, k / n)
        new: dict = {}
        for a, pa in dist.items():
            for j, pj in enumerate(pmf):
                new[a + Fraction(j, n)] = new.get(a + Fraction(j, n), 0.0) + pa * pj
        dist = new
    values, cdf, total = sorted(dist), [], 0.0
    for v in values:
        total += dist[v]
        cdf.append(total)
    out = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        i = next(i for i, c in enumerate(cdf) if c >= q)
        assert min(cdf[i] - q, q - (cdf[i - 1] if i else 0.0)) > 0.004, (domains, q)
        out.append(round(float(values[i] / len(domains)), 4))
    return out


def test_run_writes_schema_valid_outputs_with_stable_bytes(tmp_path, figures):
    metrics, out = _stage(tmp_path / "one", _scores(), bootstrap=EXACT_B)
    table = read_table(out["leaderboard"], "leaderboard")          # validates against the schema
    assert pq.read_schema(out["leaderboard"]).metadata[b"prbench.schema"] == b"leaderboard"
    assert table.num_rows == 4 + 3 + 4   # domains + micro + macro per (rm, strategy)
    assert json.loads(Path(out["metrics"]).read_text()) == metrics
    rm = metrics["rms"]["bm25-rm"]["none"]
    assert set(rm) == {"evaluation_only", "micro", "macro", "per_domain", "pairs", "ties", "invalid",
                       "truncated", "position_bias", "position_a_rate", "planner_failed_rows", "score_dtype",
                       "within_resolution"}
    # CIs as computed independently: Art 6 of 10 (the tie is wrong under strict), Society 2 of 5 (invalid is wrong)
    assert rm["micro"] == {"accuracy": round(8 / 15, 4), "ci": exact_ci([(8, 15)]), "n": 15} and rm["pairs"] == 15
    assert rm["macro"] == {"accuracy": 0.5, "ci": exact_ci([(6, 10), (2, 5)]), "n": 15}
    assert rm["per_domain"] == {"Art": {"accuracy": 0.6, "ci": exact_ci([(6, 10)]), "n": 10},
                                "Society": {"accuracy": 0.4, "ci": exact_ci([(2, 5)]), "n": 5}}
    assert metrics["rms"]["bm25-rm"]["oracle"]["micro"]["ci"] == exact_ci([(9, 10)])
    assert metrics["rms"]["judge"]["raw_profile"]["macro"]["ci"] == exact_ci([(5, 10), (3, 3)])
    board = {(r["rm"], r["strategy"], r["domain"]): [r["ci_low"], r["ci_high"]] for r in table.to_pylist()}
    assert board[("bm25-rm", "none", "micro")] == exact_ci([(8, 15)])
    assert (rm["ties"], rm["invalid"], rm["position_bias"]) == (1, 1, None)
    assert metrics["rms"]["bm25-rm"]["oracle"]["evaluation_only"] is True
    assert metrics["rms"]["judge"]["raw_profile"]["position_bias"] == round(10 / 13, 4)
    assert {k: metrics[k] for k in ("tie_policy", "ci", "bootstrap", "split")} == \
        {"tie_policy": "strict", "ci": 0.95, "bootstrap": EXACT_B, "split": "test"}
    csv = Path(out["plot_data"]).read_text().splitlines()
    assert csv[0] == "rm,strategy,evaluation_only,accuracy,ci_low,ci_high" and len(csv) == 4
    assert csv[2].startswith("bm25-rm,oracle,true,0.9000,")
    for key in ("plot_accuracy", "plot_heatmap"):
        assert Path(out[key]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = table.to_pylist()
    (bars,) = figures[Path(out["plot_accuracy"]).name]
    micro = {(r["rm"], r["strategy"]): r["accuracy"] for r in rows if r["domain"] == "micro"}
    shown = {(rm, s): v for s, lab in (("none", "none"), ("oracle", "oracle (upper bound)"), ("raw_profile", "raw_profile"))
             for rm, v in bars_by_tick(bars, lab).items()}
    assert shown == pytest.approx(micro), "one bar per RM × strategy at its micro accuracy"
    assert bars["lines"]["chance"][1] == [0.5, 0.5], "chance drawn at 0.5"
    (heat,) = figures[Path(out["plot_heatmap"]).name]
    assert heat["xticks"] == {0.0: "judge"} and heat["yticks"] == {0.0: "Art", 1.0: "Society"}   # raw_profile: judge only
    np.testing.assert_array_equal(heat["images"][0], [[0.5], [1.0]])
    assert heat["texts"] == ["0.50", "1.00"]

    _, again = _stage(tmp_path / "two", _scores(), bootstrap=EXACT_B)
    assert {k: file_hash(v) for k, v in out.items()} == {k: file_hash(v) for k, v in again.items()}


def test_run_fails_with_one_line_without_scores_or_pairs_in_the_split(tmp_path):
    with pytest.raises(ConfigError, match="no scores"):
        _stage(tmp_path, {})
    with pytest.raises(ConfigError, match="split 'dev'"):
        _stage(tmp_path, _scores(), split="dev")


def test_heatmap_without_the_strategy_says_so_instead_of_an_empty_grid(tmp_path, figures):
    _, out = _stage(tmp_path, {"a": outcomes("a", right=1)}, heatmap_strategy="planner")
    (heat,) = figures[Path(out["plot_heatmap"]).name]
    assert heat["images"] == [] and heat["texts"] == ["no scores for strategy 'planner'"]
    assert Path(out["plot_heatmap"]).exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_flow_runs_and_caches(tmp_path, monkeypatch, prefect_harness):
    from flows.common import main
    from flows.stage import flow_of
    leaderboard_flow = flow_of("leaderboard")

    monkeypatch.chdir(tmp_path)
    rms = {rm: {"kind": "random"} for rm in _scores()}
    save_params(tmp_path, shipped_params(common={"seed": SEED}, leaderboard=P, scoring={"rms": rms}))
    for rm, rows in _scores().items():
        write_table(rows, layout.scores(rm)["scores"], "scores")
    assert main(leaderboard_flow) == 0
    assert read_table(layout.LEADERBOARD["leaderboard"], "leaderboard").num_rows == 11
    stamp = Path(layout.LEADERBOARD["leaderboard"]).stat().st_mtime_ns
    assert main(leaderboard_flow) == 0                           # same scores: served from the cache
    assert Path(layout.LEADERBOARD["leaderboard"]).stat().st_mtime_ns == stamp


def _on_pairs(rm, rights, strategy="none"):
    """One score row per shared pair q0..q(n-1): right where `rights` says 1."""
    return [score(rm, f"q{i}", 1.0 if r else 0.0, 1.0 - r, strategy=strategy) for i, r in enumerate(rights)]


def test_adjacent_rms_get_an_exact_paired_test_holm_corrected():
    """Board order a > b > c: a is right on 10 pairs b gets wrong, b on one a gets wrong (exact two-sided sign
    test p 0.012); b and c differ on one pair only (p 1): after Holm a is above b, b is not shown above c."""
    a = [1] * 10 + [0, 0]
    b = [0] * 10 + [1, 0]
    c = [0] * 12
    scores = _on_pairs("a", a) + _on_pairs("b", b) + _on_pairs("c", c)
    rows = rows_for(scores)
    tests = leaderboard.leaderboard_metrics(rows, scores, P)["adjacent"]
    assert tests["alpha"] == pytest.approx(0.05)
    first, second = tests["tests"]["none"]
    assert (first["rm"], first["next"], first["discordant"], first["pairs"]) == ("a", "b", [10, 1], 12)
    from scipy.stats import binomtest
    assert first["p"] == pytest.approx(binomtest(10, 11).pvalue, abs=1e-6)
    assert first["p_holm"] == pytest.approx(min(1, 2 * first["p"]), abs=1e-6) and first["significant"]
    assert (second["rm"], second["next"], second["discordant"]) == ("b", "c", [1, 0])
    assert second["p"] == 1.0 and not second["significant"]
    assert first["difference"] == pytest.approx(10 / 12 - 1 / 12, abs=1e-4)


def test_an_adjacent_test_needs_discordant_pairs_not_a_gap_in_accuracy():
    """Two RMs 2 pairs apart out of 4 differ on 2 pairs only: p 0.5, not significant, whatever the gap says."""
    scores = _on_pairs("a", [1, 1, 1, 0]) + _on_pairs("b", [1, 0, 0, 0])
    (only,) = leaderboard.leaderboard_metrics(rows_for(scores), scores, P)["adjacent"]["tests"]["none"]
    assert only["discordant"] == [2, 0] and only["p"] == 0.5 and not only["significant"]
