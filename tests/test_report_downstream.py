"""What a person sees of the downstream validation, in headless Chromium: the RL table with scored /
invalid / gain [CI] per policy, the correlation table with its new columns and null values (a reversed
benchmark's NDCG shown beside what a reversed and a random ranking get), "too few RMs" with no number,
the paired comparison, and the in-distribution label on the headline card (a top RM, not shown "best") and the
correlation points.
Built by the real leaderboard, correlation and report code from hand-made stage outputs (fast)."""
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tasks.core import layout
from tasks.core.artifacts import write_table
from tasks.downstream.rl import evaluate
from tests.browser import browser_page, screenshot
from tests.conftest import ROOT
from tests.test_correlation_stage import score
from tests.test_rl_honest import ANSWERS, ASPECTS, _rows

RIGHT = {"bradley-terry": 10, "similarity": 8, "length-longer": 7, "length-shorter": 6, "random": 5,
         "smollm2-pointwise": 4}
BON = {"bradley-terry": 0.40, "similarity": 0.38, "length-longer": 0.36, "length-shorter": 0.35, "random": 0.34,
       "smollm2-pointwise": 0.33}


def _project(root: Path, params: dict) -> dict:
    from tasks.stages import leaderboard
    from tasks.downstream.correlation import stage
    from tasks.models.encoders import Encoder
    from tasks.models.judge import EmbeddingJudge

    scores = {}
    for rm, right in RIGHT.items():
        rows = [{**score(rm, f"q{i}", "right" if i < right else "wrong", strategy="raw_profile"),
                 "domain": "Art" if i % 2 else "Society", "rm_kind": params["scoring"]["rms"][rm]["kind"]}
                for i in range(12)]
        rows += [{**score(rm, f"q{i}", "right" if i < 13 - right else "wrong", benchmark="generic",
                          strategy="raw_profile"), "domain": "Art" if i % 2 else "Society", "rm_kind": params["scoring"]["rms"][rm]["kind"]} for i in range(12)]
        scores[rm] = str(write_table(rows, root / layout.scores(rm)["scores"], "scores"))
    out = lambda d: {k: str(root / v) for k, v in d.items()}  # noqa: E731
    leaderboard.run(params, scores, out(layout.LEADERBOARD))
    bon = [{"rm": rm, "question_id": f"q{i}", "domain": "Art", "k": 4, "method": "expected",
            "judge_score": BON[rm] + 0.001 * i} for rm in BON for i in range(12)]
    Path(root / layout.BON_REPORT["per_question"]).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(bon), root / layout.BON_REPORT["per_question"])
    judge = EmbeddingJudge(Encoder("embedded:all-MiniLM-L6-v2"), 0.35, 0.5)
    rows = _rows(evaluate.BASELINE, ANSWERS) + _rows("similarity", ANSWERS) + _rows("length-shorter",
                                                                                   {**ANSWERS, "q2": ""})
    evaluate.judge_answers(rows, {q: {"id": q, "rubric_aspects": ASPECTS} for q in ANSWERS}, judge)
    table = evaluate.summarise(rows, [evaluate.BASELINE, "similarity", "length-shorter"], {}, 200, 0.95, 1)
    write_table(rows, root / layout.RL_EVAL["answers"], "rl_answers")
    evaluate.write_eval_table(table, root / layout.RL_EVAL["eval"])
    (root / layout.RL_EVAL["metrics"]).write_text(json.dumps({"decoding": "greedy", "judge": judge.identity(),
                                                              "invalid_score": evaluate.MIN_SCORE}))
    stage.run(params, {"scores": scores, "bon": str(root / layout.BON_REPORT["per_question"]),
                       "rl": str(root / layout.RL_EVAL["answers"])}, out(layout.CORRELATION))
    return {"leaderboard": out(layout.LEADERBOARD)["leaderboard"], "leaderboard_metrics": out(layout.LEADERBOARD)["metrics"],
            "correlation": out(layout.CORRELATION)["correlation"], "correlation_points": out(layout.CORRELATION)["points"],
            "correlation_metrics": out(layout.CORRELATION)["metrics"], "rl_eval": str(root / layout.RL_EVAL["eval"]),
            "rl_metrics": str(root / layout.RL_EVAL["metrics"])}


def _cells(page, selector: str) -> list[dict]:
    return page.evaluate(f"""() => Array.from(document.querySelectorAll('{selector} tbody tr')).map(tr => ({{
        data: Object.assign({{}}, tr.dataset),
        cells: Object.fromEntries(Array.from(tr.cells).filter(td => td.dataset.key).map(td => [td.dataset.key,
            td.innerText.trim()]))}}))""")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_downstream_sections_show_counts_nulls_and_labels(tmp_path, monkeypatch):
    from tasks.ops.report import build

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["scoring"]["rms"] = {k: v for k, v in params["scoring"]["rms"].items() if v.get("kind") != "mixture"}   # real RMs only
    params["scoring"]["rms"].setdefault("smollm2-pointwise", {"kind": "judge-pointwise", "llm": "smollm2",
                                                              "verdict": "logprobs"})   # a BoN-capable LLM judge
    params["correlation"].update(bootstrap=100, permutations=999, bon_k=None)   # this project's BoN: k 1 and 4
    monkeypatch.chdir(tmp_path)
    inputs = _project(tmp_path, params)
    build.run(params, inputs, "0" * 64, {"page": str(tmp_path / "page.html")})
    with browser_page(width=1600) as (page, errors):
        page.goto((tmp_path / "page.html").as_uri())
        top = page.locator("#headline .card.top .rms").all_inner_texts()   # 10 of 12 against 8: p 0.5, not "best"
        assert top and all(t == "bradley-terry (in-distribution)" for t in top), top
        assert page.locator("#headline .card.best").count() == 0

        rl = {r["data"]["rm"]: r["cells"] for r in _cells(page, "#rl-table")}
        assert rl["length-shorter"]["invalid"] == "1" and rl["length-shorter"]["scored"] == "2 / 3"
        assert rl["similarity"]["invalid"] == "0" and rl["similarity"]["gain"] == \
            "+0.000 [0.000, 0.000] (n = 3; zero width: every resample gave the same value)"
        gain = rl["length-shorter"]["gain"]
        assert gain.startswith("-") and "[" in gain, "a blank answer lowers the gain; its paired CI beside it"
        assert rl[evaluate.BASELINE]["gain"].startswith("–")

        corr = {(r["data"]["benchmark"], r["data"]["predictor"], r["data"]["downstream"], r["data"]["metric"]):
                r["cells"] for r in _cells(page, "#correlation-table")}
        assert len(corr) == len(pq.read_table(inputs["correlation"]))
        ndcg = corr[("generic", "accuracy", "bon", "ndcg")]   # generic ranks the RMs in reverse
        assert ndcg["value"].split()[0] == ndcg["reversed"] and float(ndcg["value"].split()[0]) > 0.9
        assert float(ndcg["random"]) > float(ndcg["reversed"]), "its random-ranking value is shown beside it"
        pearson = corr[("personalised", "accuracy", "bon", "pearson")]
        assert "[" in pearson["value"] and "[" in pearson["ci_questions"] and pearson["p_holm"] != "–"
        assert ("personalised", "worst_domain", "bon", "spearman") in corr
        few = corr[("personalised", "accuracy", "rl", "spearman")]
        assert few["status"] == "too few RMs (n=2 < 5)" and few["value"] == "–" and few["p"] == "–"

        pairs = page.locator("#comparison-table tbody tr[data-pair='personalised vs generic'][data-downstream=bon]")
        assert pairs.count() == 6 and "[" in pairs.first.inner_text()
        labels = page.locator("#correlation svg.scatter text").all_text_contents()
        assert "bradley-terry (in-distribution)" in labels
        assert "in-distribution" in page.locator("#correlation p.note").first.inner_text()
        screenshot(page, "report-downstream")
        assert errors == []
