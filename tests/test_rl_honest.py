"""RL judged honestly and trained with the release's knobs (tiny random Llama, fast): an empty answer
scores the judge's minimum, so a policy leaving questions blank gains less than one answering them,
and the counts reach metrics/rl.json; the gain has a paired CI; the learning figure's CI; mini-batches
(optimizer steps per update) and the LR schedule; per-domain policies, each answering its own domain."""
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.core import layout
from tasks.downstream.rl import evaluate
from tests.test_rl import ASPECTS, outputs, rl_params, tiny_policy, toy_project  # noqa: F401 - tiny_policy: fixture

ANSWERS = {"q0": "Keep to a budget: spend little money while you learn.",
           "q1": "As a beginner trying it for the first time, start small with little money.",
           "q2": "Start with a cheap option."}   # the weakest answer, yet it covers something


def _rows(name: str, answers: dict) -> list[dict]:
    from tasks.downstream.bon.sample import answer_hash

    return [{"rm": name, "baseline": name == evaluate.BASELINE, "question_id": q, "domain": "Lifestyle",
             "split": "test", "text": t, "valid": bool(t), "error": "" if t else "empty reply",
             "answer_hash": answer_hash(t) if t else None, "finish_reason": "stop", "judge_score": None,
             "score": None, "policy": name} for q, t in answers.items()]


@pytest.fixture(scope="module")
def judge():
    from tasks.models.encoders import Encoder
    from tasks.models.judge import EmbeddingJudge

    return EmbeddingJudge(Encoder("embedded:all-MiniLM-L6-v2"), 0.35, 0.5)


def test_a_policy_leaving_its_hardest_question_empty_gains_less(judge):
    """The release's rule (drop what has no score) rewarded the blank: gappy's mean over its scored
    questions beats the policy that answered everything. Counting every question, it gains less."""
    questions = {q: {"id": q, "rubric_aspects": ASPECTS} for q in ANSWERS}
    rows = _rows(evaluate.BASELINE, ANSWERS) + _rows("complete", ANSWERS) + _rows("gappy", {**ANSWERS, "q2": ""})
    evaluate.judge_answers(rows, questions, judge)
    weak = next(r["judge_score"] for r in rows if r["rm"] == "complete" and r["question_id"] == "q2")
    assert 0 < weak < min(r["judge_score"] for r in rows if r["rm"] == "complete" and r["question_id"] != "q2")
    dropped = lambda rm: [r["judge_score"] for r in rows if r["rm"] == rm and r["judge_score"] is not None]  # noqa: E731
    assert sum(dropped("gappy")) / 2 > sum(dropped("complete")) / 3, "dropping the blank would reward it"

    table = {r["rm"]: r for r in evaluate.summarise(rows, [evaluate.BASELINE, "complete", "gappy"], {}, 500, 0.95, 1)}
    assert table["gappy"]["gain_over_baseline"] < table["complete"]["gain_over_baseline"] == 0
    assert (table["gappy"]["invalid_answers"], table["gappy"]["scored"], table["gappy"]["questions"]) == (1, 2, 3)
    assert table["gappy"]["gain_ci_low"] < 0 and table["complete"]["gain_ci_low"] == table["complete"]["gain_ci_high"] == 0
    blank = next(r for r in rows if r["rm"] == "gappy" and r["question_id"] == "q2")
    assert (blank["judge_score"], blank["score"]) == (None, evaluate.MIN_SCORE)


def test_an_unparseable_verdict_counts_as_the_minimum_and_is_counted():
    from tasks.models.judge import Verdict

    class Mute:
        def judge(self, items):
            return [Verdict(None, "no digits") if "budget" in text.lower() else Verdict([2, 2]) for _, text in items]

    questions = {q: {"id": q, "rubric_aspects": ASPECTS} for q in ANSWERS}
    rows = _rows(evaluate.BASELINE, ANSWERS)
    evaluate.judge_answers(rows, questions, Mute())
    (row,) = evaluate.summarise(rows, [evaluate.BASELINE], {}, 100, 0.95, 1)
    assert (row["unparseable_verdicts"], row["invalid_answers"], row["scored"]) == (1, 0, 2)
    assert row["mean_score"] == pytest.approx(2 / 3)


def _checkpoint(folder: Path, params: dict, tiny: Path, splits=("train",)) -> str:
    """A 'trained' policy equal to the base (its final norm saved unchanged): it answers as the baseline does."""
    from transformers import AutoModelForCausalLM

    from tasks.downstream.rl.policy import base_identity, write_checkpoint

    norm = {n: p.detach().clone() for n, p in AutoModelForCausalLM.from_pretrained(tiny).named_parameters()
            if n == "model.norm.weight"}
    write_checkpoint(folder, {"status": "trained", "base": base_identity(params["rl"]["policy"]), "algorithm": "grpo",
                              "train": {"splits": list(splits)}, "reward_failures": 0}, {(None, 0): norm})
    return str(folder)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_invalid_answers_and_the_paired_gain_reach_metrics_rl_json(tmp_path, tiny_policy, monkeypatch):  # noqa: F811
    inputs = toy_project(tmp_path, n_test=6)
    params = rl_params(str(tiny_policy))
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    policies = {rm: _checkpoint(tmp_path / rm, params, tiny_policy) for rm in ("complete", "gappy")}
    real = evaluate.answer

    def answer(llm, name, questions, prompts, e, seed, trained_seed=None, fidelity="corrected"):   # "gappy": 2 empty
        rows = real(llm, name, questions, prompts, e, seed, trained_seed, fidelity)
        for r in rows[:2] if name == "gappy" else []:
            r.update(text="", valid=False, error="empty reply", answer_hash=None)
        return rows

    monkeypatch.setattr(evaluate, "answer", answer)
    out = {k: str(tmp_path / v) for k, v in layout.RL_EVAL.items()}
    evaluate.run(params, {"questions": inputs["questions"], "ranked_profile": inputs["ranked_profile"], "halves": inputs["halves"],
                          "policies": policies}, out)
    m = json.loads(Path(out["metrics"]).read_text())["policies"]
    assert (m["gappy"]["invalid_answers"], m["gappy"]["questions"], m["gappy"]["scored"]) == (2, 6, 4)
    assert m["complete"]["invalid_answers"] == 0 and m["complete"]["gain_over_baseline"] == 0
    assert m["gappy"]["gain_over_baseline"] <= m["complete"]["gain_over_baseline"]
    assert m["gappy"]["gain_ci_low"] <= m["gappy"]["gain_over_baseline"] <= m["gappy"]["gain_ci_high"]
    table = {r["rm"]: r for r in pq.read_table(out["eval"]).to_pylist()}
    assert table["gappy"]["unparseable_verdicts"] == 0 and table["gappy"]["invalid_answers"] == 2
    answers = [r for r in pq.read_table(out["answers"]).to_pylist() if r["rm"] == "gappy" and not r["valid"]]
    assert len(answers) == 2 and {r["score"] for r in answers} == {evaluate.MIN_SCORE}


def test_the_learning_figure_has_a_ci_over_rollouts():
    import numpy as np

    from tasks.downstream.rl.reward import Step, reward_change

    def steps(means):
        return [Step(4, 0, m, 0.1, [], [m - 0.1, m, m, m + 0.1]) for m in means]

    rising = reward_change(steps([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]), np.random.default_rng(0))
    assert rising["window_updates"] == 2 and rising["rollouts"] == [8, 8]
    assert rising["change"] == pytest.approx(0.6) and rising["ci_low"] > 0 and rising["excludes_zero"]
    flat = reward_change(steps([0.3, 0.1, 0.3, 0.2, 0.1, 0.3, 0.2, 0.2]), np.random.default_rng(0))
    assert flat["ci_low"] < 0 < flat["ci_high"] and not flat["excludes_zero"]
    assert reward_change(steps([0.3]), np.random.default_rng(0)) is None


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_mini_batches_and_the_lr_schedule(tmp_path, tiny_policy):  # noqa: F811
    """batch 4 in mini-batches of 2: two optimizer steps per update (verl's ppo_mini_batch_size); a constant
    schedule keeps the learning rate, linear decays it."""
    from tasks.downstream.rl import train

    inputs = toy_project(tmp_path)
    for algorithm, schedule in (("grpo", "constant"), ("ppo", "linear")):
        params = rl_params(str(tiny_policy), mini_batch_size=2, micro_batch_size=1, updates=3, lr_schedule=schedule,
                           kl_coef=0.0)
        params["rl"]["algorithm"] = algorithm
        params["common"]["cache_dir"] = str(tmp_path / "cache")
        m = train.run(params, "length-longer", inputs, outputs(tmp_path / algorithm, "length-longer"))
        assert m["updates"] == 3 and m["optimizer_steps"] == 3 * 2, (algorithm, m["optimizer_steps"])
        lr = m["learning_rate"]["all"]
        if schedule == "constant":
            assert lr["first"] == lr["last"] == 0.01
        else:
            assert lr["last"] < lr["first"] <= 0.01
    from tasks.core.errors import ConfigError

    with pytest.raises(ConfigError, match="rl.train.lr_schedule: unknown 'cosine'"):
        train.run(rl_params(str(tiny_policy), lr_schedule="cosine"), "length-longer", inputs,
                  outputs(tmp_path / "bad", "length-longer"))
    with pytest.raises(ConfigError, match=r"micro_batch_size \(2\) \| mini_batch_size \(3\)"):
        train.run(rl_params(str(tiny_policy), mini_batch_size=3), "length-longer", inputs,
                  outputs(tmp_path / "bad", "length-longer"))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_per_domain_policies_answer_their_own_domain(tmp_path, tiny_policy):  # noqa: F811
    from tasks.downstream.rl import train

    inputs = toy_project(tmp_path, n_train=8, n_test=4, domains=("Art", "Society"))
    params = rl_params(str(tiny_policy), per_domain=True, updates=1, kl_coef=0.0)
    params["rl"]["algorithm"] = "grpo"
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    m = train.run(params, "length-longer", inputs, outputs(tmp_path, "length-longer"))
    folder = Path(outputs(tmp_path, "length-longer")["policy"])
    assert sorted(p.name for p in folder.iterdir()) == ["policy.Art.safetensors", "policy.Society.safetensors",
                                                         "policy.json"]
    assert m["per_domain"] and m["domains"] == {"Art": 4, "Society": 4} and m["updates"] == 2
    assert set(m["reward_change"]) == {"Art", "Society"}
    steps = Path(outputs(tmp_path, "length-longer")["plot_data"]).read_text().splitlines()
    assert steps[0].startswith("domain,step") and {s.split(",")[0] for s in steps[1:]} == {"Art", "Society"}
    out = {k: str(tmp_path / v) for k, v in layout.RL_EVAL.items()}
    em = evaluate.run(params, {"questions": inputs["questions"], "ranked_profile": inputs["ranked_profile"], "halves": inputs["halves"],
                               "policies": {"length-longer": str(folder)}}, out)
    assert {"llm:length-longer:Art", "llm:length-longer:Society"} <= set(em["run"])
    rows = [r for r in pq.read_table(out["answers"]).to_pylist() if r["rm"] == "length-longer"]
    assert len(rows) == 4 and len({r["policy"] for r in rows}) == 2, "each domain's own weights answer it"
