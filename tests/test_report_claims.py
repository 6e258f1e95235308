"""What the report may claim (issue 33 item 8), in headless Chromium: a correlation of -0.105 with p = 0.6
is "not significant", gets no star and no "best"; the top RM of a 2-pair board is not called best when its
paired test against the runner-up does not hold; a zero-width CI says why ([100, 100]: n = 2, all correct);
the similarity RM, which embeds with the BoN judge's encoder, is flagged beside it. Built by the real
leaderboard stage and report code from hand-made scores and correlation metrics (fast)."""
import json
import re
from pathlib import Path

import pytest
import yaml

from tasks.core import layout
from tasks.core.artifacts import write_table
from tests.browser import browser_page, screenshot
from tests.conftest import ROOT
from tests.test_correlation_stage import score

RIGHT = {"similarity": 2, "bradley-terry": 1, "length-longer": 1, "length-shorter": 0, "random": 1,
         "smollm2-pairwise": 0}   # of 2 pairs
DOWN = {"similarity": 0.41, "bradley-terry": 0.37, "length-longer": 0.40, "length-shorter": 0.36, "random": 0.39,
        "smollm2-pairwise": 0.38}
CORR = {"personalised": (-0.105, 0.6), "generic": (-0.3, 0.8)}   # spearman value, p (= p Holm)


def _cell(value, p, n):
    return {"value": value, "ci_low": -0.8, "ci_high": 0.7, "ci_low_questions": -0.5, "ci_high_questions": 0.3,
            "p_value": p, "p_holm": p, "null_random": 0.0, "null_reversed": -1.0}


def _correlation(root: Path, out: dict) -> None:
    rms = sorted(DOWN)
    rows = [{"benchmark": b, "predictor": "accuracy", "downstream": "bon", "metric": "spearman", **_cell(v, p, 6),
             "n_rms": 6, "status": "ok"} for b, (v, p) in CORR.items()]
    write_table(rows, out["correlation"], "correlation")
    points = [{"rm": rm, "benchmark": b, "predictor": "accuracy", "accuracy": RIGHT[rm] / 2, "benchmark_rank": 1,
               "downstream": "bon", "downstream_score": DOWN[rm], "downstream_rank": 1, "shares_llm_with": "",
               "shares_encoder_with": "bon.judge" if rm == "similarity" else "", "in_distribution": False}
              for b in CORR for rm in rms]
    write_table(points, out["points"], "correlation_points")
    metrics = {"status": "ok", "strategy": "raw_profile", "min_rms": 5, "alpha": 0.05, "ci_method": "two-level",
               "benchmarks": {b: {"source": "scores"} for b in CORR},
               "correlations": {b: {"bon": {"status": "ok", "n_rms": 6, "rms": rms, "spearman": _cell(v, p, 6)}}
                                for b, (v, p) in CORR.items()},
               "comparisons": {"personalised vs generic": {"bon": {"status": "ok", "n_rms": 6, "spearman": {
                   "difference": 0.195, "ci_low": -0.9, "ci_high": 1.1, "p_value": 0.4, "p_holm": 0.4}}}},
               "shares_encoder_with": {"similarity": ["bon.judge"]}}
    Path(out["metrics"]).write_text(json.dumps(metrics))


def _inputs(root: Path, params: dict) -> dict:
    from tasks.stages import leaderboard

    out = lambda d: {k: str(root / v) for k, v in d.items()}  # noqa: E731
    scores = {rm: str(write_table([score(rm, f"q{i}", "right" if i < right else "wrong", strategy="raw_profile")
                                   for i in range(2)], root / layout.scores(rm)["scores"], "scores"))
              for rm, right in RIGHT.items()}
    leaderboard.run(params, scores, out(layout.LEADERBOARD))
    Path(root / layout.CORRELATION["metrics"]).parent.mkdir(parents=True, exist_ok=True)
    _correlation(root, out(layout.CORRELATION))
    return {"leaderboard": out(layout.LEADERBOARD)["leaderboard"], "leaderboard_metrics": out(layout.LEADERBOARD)["metrics"],
            "correlation": out(layout.CORRELATION)["correlation"], "correlation_points": out(layout.CORRELATION)["points"],
            "correlation_metrics": out(layout.CORRELATION)["metrics"]}


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_non_significant_correlation_gets_no_star_and_no_best(tmp_path, monkeypatch):
    from tasks.ops.report import build

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["scoring"]["rms"] = {rm: params["scoring"]["rms"][rm] for rm in RIGHT}
    monkeypatch.chdir(tmp_path)
    build.run(params, _inputs(tmp_path, params), "0" * 64, {"page": str(tmp_path / "page.html")})
    with browser_page(width=1600) as (page, errors):
        page.goto((tmp_path / "page.html").as_uri())
        text = page.locator("body").inner_text()
        assert "\u2605" not in text and page.locator(".best").count() == 0, "no star, nothing marked best"
        assert re.findall(r"(?i)\bbest\b(?![- ]of)", text) == [], "no 'best' claimed anywhere (Best-of-N aside)"

        row = page.locator("#correlation-table tr[data-benchmark=personalised][data-metric=spearman]")
        assert row.locator("[data-key=value]").inner_text().startswith("-0.105")
        assert row.locator("[data-key=p]").inner_text() == "0.600"
        assert row.locator("[data-key=status]").inner_text() == "not significant"
        assert "0 of 2" in page.locator("#corr-significant").inner_text()
        cell = page.locator("#benchmark-matrix tr[data-benchmark=personalised] td.num").inner_text()
        assert cell.startswith("-0.105") and "not significant" in cell
        assert page.locator("#comparison-table tbody tr").inner_text().strip().endswith("not significant")

        card = page.locator("#headline .card.top[data-strategy=raw_profile]")
        assert card.locator(".k").inner_text() == "top RM · raw_profile" and "similarity" in card.inner_text()
        assert "not significantly above" in card.locator(".why").inner_text()
        sim = page.locator("#leaderboard-table tr[data-rm=similarity]")
        assert sim.locator("[data-key=micro]").inner_text() == "100.0% [100.0, 100.0] (n = 2, all correct)"
        assert "(not significant)" in sim.locator("[data-key=vs_next]").inner_text()
        assert sim.locator("[data-key=shares_encoder_with]").inner_text() == "bon.judge"
        assert "similarity shares encoder with bon.judge" in page.locator("#shared-judge").locator("..").inner_text()
        screenshot(page, "report-claims")
        assert errors == []
