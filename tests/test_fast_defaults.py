"""Issue 26: the default run's calls are not wasted. A reply cut by the token limit after the asked
length is cut at a sentence end instead of retried (a shorter cut-off one still is); the annotator
proxy's log-prob verdict always parses a small model's ratings (non-finite ones stay invalid); the
planner's per-domain limit; and the shipped budgets fit the lengths their prompts ask for."""
import math
from types import SimpleNamespace

import pytest
import yaml

from tasks.stages.human_eval import DIMENSIONS
from tasks.stages.human_eval.proxy import rate
from tasks.models.llm import GenParams
from tasks.stages.pairs import longer_than, parse_answer
from tasks.models.structured import generate_parsed
from tests.conftest import ROOT

LONG = "First point here. " * 8          # 24 words, sentence ends every 3
SHORT = "A cut off reply with"            # 5 words, no end


class CutOff:
    """Every reply stops on the token limit; `texts` maps a prompt to its reply."""

    def __init__(self, texts):
        self.texts, self.calls = texts, 0

    def generate_many(self, requests, progress=None):
        self.calls += len(requests)
        return [SimpleNamespace(text=self.texts[m[0]["content"]], finish_reason="length") for m, _, _ in requests]


def _prompt(text):
    return [{"role": "user", "content": text}]


def test_a_reply_cut_after_the_asked_length_is_kept_a_shorter_one_retried():
    llm = CutOff({"long": LONG, "short": SHORT})
    got = generate_parsed(llm, [_prompt("long"), _prompt("short")], parse_answer(10), GenParams(max_tokens=16),
                          retries=2, temperature_bump=0.3, accept_truncated=longer_than(10))
    assert got[0].valid and got[0].attempts == 1 and got[0].value == "First point here. First point here. First point here."
    assert not got[1].valid and got[1].attempts == 3 and "truncated" in got[1].error, "a cut-off short reply is no answer"
    assert llm.calls == 1 + 3
    strict = generate_parsed(CutOff({"long": LONG}), [_prompt("long")], parse_answer(10), GenParams(max_tokens=16),
                             retries=0, temperature_bump=0.3, accept_truncated=False)
    assert not strict[0].valid, "accept_truncated=False still refuses every cut-off reply"


class Digits:
    """Label log-probs: personal_fit 5 for the chosen answer, 1 otherwise; `nan_for` texts give NaN."""

    def __init__(self, chosen, nan_for=()):
        self.chosen, self.nan_for, self.calls = chosen, set(nan_for), 0
        self.backend = SimpleNamespace(identity=lambda: "digits")

    def choice_logprobs(self, messages, choices):
        self.calls += 1
        text = messages[0]["content"]
        if any(t in text for t in self.nan_for):
            return {c: math.nan for c in choices}
        best = "5" if ("personal rubric alignment" in text and self.chosen in text) else "1"
        return {c: (-0.1 if c == best else -3.0) for c in choices}


def _item(qid):
    return {"item_id": f"it-{qid}", "question_id": qid, "domain": "Art", "split": "test", "question": f"q {qid}?",
            "aspects": "- budget", "profile": "posts", "chosen": f"CHOSEN answer {qid}", "rejected": f"REJECTED answer {qid}"}


P = {"proxy_prompt": str(ROOT / "prompts/annotator_dimension.txt"), "proxy_verdict": "logprobs",
     "proxy_temperature": 0.0, "proxy_max_tokens": 40, "parse_retries": 2, "temperature_bump": 0.3}


def test_proxy_logprob_verdict_rates_every_dimension_and_never_defaults():
    llm = Digits("CHOSEN", nan_for={"REJECTED answer b"})
    ratings, replies = rate([_item("a"), _item("b")], llm, "smollm2", P, seed=1)
    assert llm.calls == 2 * 2 * len(DIMENSIONS), "one short prompt per answer and dimension, no retries"
    fit = {(r["question_id"], r["side"]): r["score"] for r in ratings if r["dimension"] == "personal_fit"}
    assert fit[("a", "chosen")] == 5 and fit[("a", "rejected")] == 1 and fit[("b", "chosen")] == 5
    assert fit[("b", "rejected")] is None, "non-finite log-probs: invalid, never a default rating"
    bad = [r for r in replies if not r["valid"]]
    assert len(bad) == 1 and "non-finite" in bad[0]["error"] and bad[0]["side"] == "rejected"
    with pytest.raises(Exception, match="proxy_verdict"):
        rate([_item("a")], llm, "smollm2", {**P, "proxy_verdict": "vibes"}, seed=1)


def test_planner_per_domain_limit_covers_the_scored_pairs(tmp_path):
    from tasks.core import layout
    from tasks.stages import rubrics
    from tests.stage_project import make_project

    params = make_project(tmp_path, configs=("Art_and_Entertainment", "Society_and_Culture"), limit=3)
    params["rubrics"]["per_domain_limit"] = 2
    out = {k: str(tmp_path / v) for k, v in layout.RUBRICS.items()}
    rubrics.run(params, {"questions": str(tmp_path / layout.INGEST["questions"]),
                         "halves": str(tmp_path / layout.INGEST["halves"]),
                         "ranked_profile": str(tmp_path / layout.PROFILES["ranked_profile"])}, out)
    from tasks.core.artifacts import read_table

    from tasks.core import halves
    from tasks.stages.ingest import first_per_domain

    planned = {r["question_id"] for r in read_table(out["inferred_rubrics"], "inferred_rubrics").to_pylist()}
    questions = read_table(tmp_path / layout.INGEST["questions"], "questions").to_pylist()
    half = halves.read(str(tmp_path / layout.INGEST["halves"]))
    first = {h: {q["id"] for q in first_per_domain(halves.keep(questions, half, h), 2)}
             for h in (halves.BENCHMARK, halves.DOWNSTREAM)}
    assert len(first[halves.BENCHMARK]) == 4, "2 of each domain's benchmark half: what scoring reads"
    assert planned == first[halves.BENCHMARK] | first[halves.DOWNSTREAM], "and the first BoN / RL questions"
    shipped = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert shipped["rubrics"]["per_domain_limit"] == shipped["scoring"]["per_domain_limit"], \
        "the planner strategy scores the first scoring.per_domain_limit pairs: plan exactly those"


@pytest.mark.parametrize("group", ["pairs", "generic_pairs", "bon"])
def test_shipped_budgets_fit_the_asked_length(group):
    """~1.3 SmolLM2 tokens per English word: a budget under that cuts nearly every reply (a retry each)."""
    p = yaml.safe_load((ROOT / "params.yaml").read_text())[group]
    assert p["max_tokens"] >= 1.5 * p["max_words"], f"{group}: max_tokens {p['max_tokens']} for {p['max_words']} words"


def test_the_report_page_is_tracked_in_git_not_the_dvc_cache():
    from tasks.core import dag, stage_table as stages

    lines = dag.render_stage(stages.get("report"))
    at = lines.index("      - report/index.html:")
    assert lines[at + 1].strip() == "cache: false", "a clone must open the committed report with no DVC remote"
    assert not (ROOT / "report" / ".gitignore").exists()
    assert "      - data/ingest/questions.parquet" in dag.render_stage(stages.get("ingest")), "other outs stay cached"


def test_a_run_with_nothing_to_do_starts_no_server(monkeypatch, capsys):
    """`prbench run` asks `dvc status -q` first (while the warm stage server imports): up to date, it stops
    that server and returns before a Prefect server starts."""
    import flows.cli as cli
    from flows import run_dvc, server, warm_run

    calls, started = [], []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd, **kw: calls.append(cmd) or 0)
    monkeypatch.setattr(server, "start", lambda *a, **k: pytest.fail("a server started for a no-op run"))

    class Server:   # what flows.server.start returns; a real one would cost ~10 s
        ui_url = "http://127.0.0.1:1"

        def stop(self):
            started.append("stopped")

    class Warm:
        def __init__(self, env, log):
            started.append("warm")

        def wait_ready(self):
            return {}

        def stop(self):
            started.append("warm stopped")
            return "prbench: warm server stopped"
    monkeypatch.setattr(warm_run, "Warm", Warm)
    assert cli.main(["run"]) == 0
    assert calls == [["dvc", "status", "-q"]] and "nothing to run" in capsys.readouterr().out
    assert started == ["warm", "warm stopped"], "the warm server it started while asking is stopped"
    started.clear()
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd, **kw: calls.append(cmd) or 1)   # dvc status: stale

    class Dvc:   # never a real `dvc repro`: this test runs in the checkout itself
        pid = None

        def __init__(self, cmd, **kw):
            calls.append(cmd)
            assert kw.get("start_new_session"), "dvc runs in its own session: Ctrl-C reaches prbench run alone"

        def wait(self):
            return 0
    monkeypatch.setattr(server, "start", lambda *a, **k: started.append(1) or Server())
    monkeypatch.setattr(run_dvc.subprocess, "Popen", Dvc)
    assert cli.main(["run"]) == 0 and started == ["warm", 1, "stopped", "warm stopped"] and calls[-1][1:] == ["-m", "tasks.ops.dvc_cli", "repro"], "stale: dvc repro runs"
