"""The LLM proxy annotator and the stage around it: the dummy backend's replies never parse
(invalid, counted, no invented rating); a scripted LLM's do; proxy and humans side by side;
the Prefect flow."""
import json
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest


from tasks.core.artifacts import file_hash
from tasks.stages.human_eval import DIMENSIONS, PERSONAL
from tasks.stages.human_eval.proxy import parse_form
from tests.test_human_eval_export import (LAYOUT, export, fill_csv, fill_labelstudio, he_project, outputs,
                                          run_stage, truth)

FORM = "factuality: 4\nrelevance: 5\nhelpfulness: 4\npersonal_fit: {fit}"


def test_parse_form_accepts_the_form_and_nothing_else():
    assert parse_form(FORM.format(fit=2)) == {"factuality": 4, "relevance": 5, "helpfulness": 4, "personal_fit": 2}
    assert parse_form("- **Factuality**: 5/5\n- Relevance: 4\n- Helpfulness = 3\n- Personal fit: 1")["personal_fit"] == 1
    for bad, why in [("factuality: N\nrelevance: N\nhelpfulness: N\npersonal_fit: N", "no rating for"),
                     ("factuality: 1-5\nrelevance: 4\nhelpfulness: 4\npersonal_fit: 4", "no rating for factuality"),
                     (FORM.format(fit=7), "personal_fit: '7' is outside 1-5"),
                     (FORM.format(fit=3.5), "not a whole number"),
                     ("I would rate it highly.", "no rating for factuality, relevance, helpfulness, personal_fit")]:
        with pytest.raises(ValueError, match=why):
            parse_form(bad)


class ScriptedLLM:
    """Rates like an annotator who knows which answer fits: personal_fit 5 for chosen, 1 for
    rejected. Attempt 0 of `stubborn` answers is chatter, so it needs a retry."""

    def __init__(self, chosen_texts, stubborn=(), hopeless=()):
        self.chosen, self.stubborn, self.hopeless = set(chosen_texts), set(stubborn), set(hopeless)
        self.backend = SimpleNamespace(identity=lambda: "scripted:rater")
        self.requests = 0

    def generate_many(self, requests, progress=None):
        out = []
        for messages, _, attempt in requests:
            self.requests += 1
            answer = messages[-1]["content"].split("Answer:\n", 1)[1].split("\n\nReply with", 1)[0]
            if answer in self.hopeless or (answer in self.stubborn and attempt == 0):
                out.append(SimpleNamespace(text="This answer seems quite good overall."))
            else:
                out.append(SimpleNamespace(text=FORM.format(fit=5 if answer in self.chosen else 1)))
        return out


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("he_proxy")
    return root, he_project(root, proxy_limit=5)


def chosen_texts(root):
    return [t for t, side in truth(root).items() if side == "chosen"]


def use_llm(monkeypatch, llm):
    from tasks.models.resources import Resources

    monkeypatch.setattr(Resources, "llm", lambda self, name: llm)


def test_dummy_proxy_replies_are_invalid_and_counted_never_defaulted(tmp_path):
    root, params = tmp_path, he_project(tmp_path, proxy_limit=5)   # its own LLM cache: the call count below is exact
    m = run_stage(root, params)   # no annotations yet: the proxy (the dummy backend) rates
    assert m["source"] == "llm-proxy" and m["human"] is None
    proxy = m["llm-proxy"]
    assert proxy["forms"] == 10 and proxy["invalid_forms"] == 10
    assert proxy["ratings"] == 0 and proxy["invalid_ratings"] == 40
    ratings = pq.read_table(root / LAYOUT["ratings"]).to_pylist()
    assert len(ratings) == 40 and all(r["score"] is None and r["annotator_kind"] == "llm-proxy" for r in ratings)
    replies = pq.read_table(root / LAYOUT["proxy_replies"]).to_pylist()
    assert all(not r["valid"] and r["raw_text"] and r["error"].startswith("parse:") and r["attempts"] == 3
               for r in replies)
    assert proxy["parity"]["verdict"] == "insufficient data"
    assert (m["run"]["llm:test-llm"]["calls"], m["run"]["llm:test-llm"]["cache_hits"]) == (30, 0)   # 10 forms × (1 + 2 retries)
    assert (root / LAYOUT["plot"]).exists()
    again = run_stage(root, params)["run"]["llm:test-llm"]   # a rerun asks the cache, not the backend
    assert (again["calls"], again["cache_hits"]) == (0, 30)


def test_scripted_proxy_ratings_parse_with_bounded_retries(project, monkeypatch):
    from tasks.stages.human_eval.export import load_items, seeded_order
    from tests.test_human_eval_export import inputs

    root, params = project
    p = params["human_eval"]
    first = seeded_order(load_items(inputs(root), p["splits"], p["profile_max_words"]), params["common"]["seed"])[0]
    chosen = chosen_texts(root)
    use_llm(monkeypatch, ScriptedLLM(chosen, stubborn=chosen, hopeless=[first["rejected"]]))
    m = run_stage(root, params)

    ratings = pq.read_table(root / LAYOUT["ratings"]).to_pylist()
    fit = [r for r in ratings if r["dimension"] == PERSONAL and r["score"] is not None]
    assert len(fit) == 9 and all(r["score"] == (5 if r["side"] == "chosen" else 1) for r in fit)
    replies = {(r["item_id"], r["side"]): r for r in pq.read_table(root / LAYOUT["proxy_replies"]).to_pylist()}
    assert all(r["valid"] and r["attempts"] == 2 for (_, side), r in replies.items() if side == "chosen")
    hopeless = replies[(first["item_id"], "rejected")]   # never parses: invalid after 1 + 2 retries, raw kept
    assert not hopeless["valid"] and hopeless["attempts"] == 3 and hopeless["raw_text"].startswith("This answer")
    assert [r["score"] for r in ratings if r["item_id"] == first["item_id"] and r["side"] == "rejected"] == [None] * 4
    proxy = m["llm-proxy"]
    assert proxy["invalid_forms"] == 1 and proxy["invalid_ratings"] == 4
    assert proxy["parity"]["holds"] is True and proxy["annotators"] == 1
    assert m["human"] is None and m["proxy_vs_human"] is None


def test_humans_and_proxy_side_by_side_never_pooled(tmp_path, monkeypatch):
    params = he_project(tmp_path, proxy_limit=4)
    export(tmp_path, params, tmp_path / "for_annotators", limit=6)
    raw, seen = Path(params["human_eval"]["raw_dir"]), truth(tmp_path)
    fill_csv(tmp_path / "for_annotators", raw / "alice.csv", seen)
    fill_labelstudio(tmp_path / "for_annotators", raw / "ls.json", seen, {"id": 9, "email": "bob@example.org"})
    use_llm(monkeypatch, ScriptedLLM(chosen_texts(tmp_path)))
    m = run_stage(tmp_path, params)
    assert m["source"] == "human+llm-proxy"
    assert m["human"]["annotators"] == 2 and m["human"]["items"] == 6
    assert m["llm-proxy"]["items"] == 4 and m["llm-proxy"]["annotators"] == 1
    ratings = pq.read_table(tmp_path / LAYOUT["ratings"]).to_pylist()
    human_items = {r["item_id"] for r in ratings if r["annotator_kind"] == "human"}
    assert {r["item_id"] for r in ratings if r["annotator_kind"] == "llm-proxy"} <= human_items
    agree = m["proxy_vs_human"]
    assert set(agree) == set(DIMENSIONS) and agree[PERSONAL]["units"] == 8
    assert agree[PERSONAL]["spearman"] > 0.8   # both rate chosen high, rejected low

    m = run_stage(tmp_path, {**params, "human_eval": {**params["human_eval"], "proxy": "auto"}})
    assert m["source"] == "human" and m["llm-proxy"] is None   # auto: the proxy only stands in for humans


def test_quarantine_is_written_and_counted(tmp_path):
    params = he_project(tmp_path, limit=2, proxy="never", on_error="quarantine")
    items = export(tmp_path, params, tmp_path / "for_annotators")
    raw = Path(params["human_eval"]["raw_dir"])
    bad = {"count": 0}

    def spoil(row):   # two rows get a score out of range
        if bad["count"] < 2:
            bad["count"] += 1
            row["b_helpfulness"] = "6"
    fill_csv(tmp_path / "for_annotators", raw / "alice.csv", truth(tmp_path), change=spoil)
    m = run_stage(tmp_path, params)
    assert m["annotations"]["quarantined_rows"] == 2
    assert m["annotations"]["quarantine_reasons"] == {"b_helpfulness": 2}
    assert m["human"]["items"] == len(items) - 2
    quarantined = pq.read_table(tmp_path / LAYOUT["quarantine"]).to_pylist()
    assert [q["reason"] for q in quarantined] == ["'6' is outside 1-5"] * 2


def test_stage_outputs_are_deterministic(project, tmp_path):
    root, params = project
    run_stage(root, params)
    first = {k: file_hash(v) for k, v in outputs(root).items()}
    run_stage(root, params)
    assert {k: file_hash(v) for k, v in outputs(root).items()} == first


def test_unknown_proxy_mode_is_a_config_error(project):
    from tasks.core.errors import ConfigError

    root, params = project
    with pytest.raises(ConfigError, match="human_eval.proxy: unknown value 'sometimes'"):
        run_stage(root, {**params, "human_eval": {**params["human_eval"], "proxy": "sometimes"}})


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_flow_runs_under_prefect(project, prefect_harness, monkeypatch):
    from flows.common import main

    root, _ = project
    monkeypatch.chdir(root)
    from flows.stage import flow_of
    human_eval_flow = flow_of("human_eval")

    for f in outputs(root).values():
        Path(f).unlink(missing_ok=True)
    assert main(human_eval_flow) == 0
    assert json.loads((root / LAYOUT["metrics"]).read_text())["source"] == "llm-proxy"
    assert all(Path(f).exists() for f in outputs(root).values())
