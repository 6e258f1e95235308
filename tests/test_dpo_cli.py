"""`prbench score --kind dpo` on two tiny random Llama causal LMs (tests/tiny_lm.py), on the default benchmark (the
bundled released-layout sample) and on the RewardBench 2 fixture: a model against itself scores 0 everywhere (every
pair a tie, under each tie policy); swapping model and reference negates every score; reference-free(A) minus
reference-free(B) is A against B (normalize: sum), bit for bit; the outputs say it is an implicit reward and name
the reference."""
import json

import pyarrow.parquet as pq
import pytest

from flows.cli import main as cli
from tasks.stages import leaderboard
from tests.conftest import ROOT, SAMPLE
from tests.tiny_lm import tiny_causal_lm

DATA = {"personalised": str(SAMPLE / "rewardbench"), "rewardbench2": str(ROOT / "data/benchmarks/fixtures/rewardbench2.jsonl")}
RUNS = {"A-vs-A": ("A", "A"), "A-vs-B": ("A", "B"), "B-vs-A": ("B", "A"), "A": ("A", None), "B": ("B", None)}


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """Every run of RUNS on both benchmarks: {benchmark: {run: (scores rows, results.json, printed)}}."""
    tmp = tmp_path_factory.mktemp("dpo-cli")
    lms = {"A": tiny_causal_lm(tmp / "A", seed=0)}
    lms["B"] = tiny_causal_lm(tmp / "B", seed=1, like=lms["A"])
    mp = pytest.MonkeyPatch()
    mp.chdir(ROOT)
    out = {}
    try:
        for bench, data in DATA.items():
            out[bench] = {}
            for run, (model, ref) in RUNS.items():
                folder = tmp / bench / run
                args = ["score", "--kind", "dpo", "--model", str(lms[model]), "--name", run, "--data", data,
                        "--out", str(folder)] + (["--option", f"ref_model={lms[ref]}"] if ref else [])
                args += ["--strategy", "none,raw_profile"] if bench == "personalised" else []
                assert cli(args) == 0, (bench, run)
                out[bench][run] = (pq.read_table(folder / "scores.parquet").to_pylist(),
                                   json.loads((folder / "results.json").read_text()))
    finally:
        mp.undo()
    return {"runs": out, "lms": lms}


def _scores(rows: list[dict], bench: str) -> list[float]:
    """Every answer's score in file order: chosen, rejected (ours); correct then incorrect (RewardBench 2)."""
    if bench == "personalised":
        return [x for r in rows for x in (r["score_chosen"], r["score_rejected"])]
    return [x for r in rows for x in r["scores_correct"] + r["scores_incorrect"]]


@pytest.mark.parametrize("bench", list(DATA))
def test_a_model_against_itself_scores_zero_and_every_pair_ties(scored, bench):
    rows, _ = scored["runs"][bench]["A-vs-A"]
    assert rows and _scores(rows, bench) == [0.0] * len(_scores(rows, bench))
    assert all(r["tie"] and not r["correct"] and not r["invalid"] for r in rows)
    if bench == "rewardbench2":   # every answer tied at the top: `half` credits what a random order gets, the chance
        assert all(r["tie_credit"] == pytest.approx(r["chance"], abs=1e-6) for r in rows) and {r["n_correct"] for r in rows} > {1}
        return
    for policy, accuracy, counted in (("strict", 0.0, len(rows)), ("half", 0.5, len(rows)), ("drop", None, 0)):
        board = leaderboard.leaderboard_rows(rows, {"tie_policy": policy, "bootstrap": 20, "ci": 0.95}, 1)
        micro = [b for b in board if b["domain"] == "micro"]
        assert {b["ties"] for b in micro} == {len(rows) // 2}, policy   # per strategy: every pair
        assert {b["accuracy"] for b in micro} == {accuracy} and sum(b["n"] for b in micro) == counted, policy


@pytest.mark.parametrize("bench", list(DATA))
def test_swapping_model_and_reference_negates_every_score(scored, bench):
    runs = scored["runs"][bench]
    ab, ba = _scores(runs["A-vs-B"][0], bench), _scores(runs["B-vs-A"][0], bench)
    assert ab == [-x for x in ba] and len(set(ab)) > len(ab) // 2, "distinct, nonzero scores"


@pytest.mark.parametrize("bench", list(DATA))
def test_reference_free_difference_is_the_score_against_that_reference(scored, bench):
    runs = scored["runs"][bench]
    a, b, ab = (_scores(runs[r][0], bench) for r in ("A", "B", "A-vs-B"))
    assert [x - y for x, y in zip(a, b)] == ab
    assert all(x < 0 for x in a), "a log-probability alone is negative"


@pytest.mark.parametrize("bench", list(DATA))
def test_results_say_implicit_reward_and_which_reference(scored, bench):
    runs, lms = scored["runs"][bench], scored["lms"]
    doc = runs["A-vs-B"][1]
    assert doc["model"]["entry"] == {"kind": "dpo", "model": str(lms["A"]), "ref_model": str(lms["B"])}
    assert doc["model"]["scoring"] | {"reward": "implicit (DPO)", "reference": str(lms["B"]), "normalize": "sum"} == \
        doc["model"]["scoring"]
    assert f"|reference:{lms['B']}@default:" in doc["model"]["identity"]
    assert runs["A"][1]["model"]["scoring"]["reference"] == "none (reference-free)"
    assert "|reference:none|" in runs["A"][0][0]["rm_identity"], "every score row names what it was scored against"


def test_the_table_title_names_the_reward_and_a_missing_reference_is_named_as_the_flag(scored, tmp_path, monkeypatch,
                                                                                      capsys):
    monkeypatch.chdir(ROOT)
    lms = scored["lms"]
    assert cli(["score", "--kind", "dpo", "--model", str(lms["A"]), "--option", f"ref_model={lms['B']}", "--data",
                DATA["personalised"], "--strategy", "none", "--limit", "1", "--out", str(tmp_path / "one")]) == 0
    assert f"implicit (DPO) reward vs {lms['B']}, sum over the answer's tokens" in capsys.readouterr().out
    assert cli(["score", "--kind", "dpo", "--model", str(lms["A"]), "--option", "ref_model=./no-such-ref",
                "--data", DATA["personalised"], "--out", str(tmp_path / "bad")]) == 1
    assert capsys.readouterr().err.startswith("--option ref_model: no such folder './no-such-ref'")
    assert not (tmp_path / "bad").exists(), "refused before any work"
