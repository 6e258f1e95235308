"""Downstream RL on a tiny random Llama (fast): the reward adapter gives exactly the leaderboard
scorer's score, failed or NaN rewards are counted as the worst of their step (never a default, never dropped), two-update PPO /
GRPO / RLOO runs change the policy, the same seed gives the same checkpoint bytes, RMs left out or
pairwise-only get a record, rl_eval judges every policy against the untrained baseline (its calls
cached), and the correlation reads the RL column."""
import csv
import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tasks.core import halves, layout
from tasks.core.artifacts import file_hash, write_table
from tasks.models.rms.base import AnswerScore, RewardModel
from tests.conftest import BYTECODE, ROOT, flow_log_lines
from tests.figures import bars_by_tick
from tests.stage_project import fit_to_rms

TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")
SPECIALS = ["<unk>", "<|im_start|>", "<|im_end|>"]
TOPICS = ["budget travel", "the guitar", "cooking", "a marathon", "painting", "saving money"]
ASPECTS = [{"aspect": "Budget", "evidence": "little money to spend", "reason": "r"},
           {"aspect": "Beginner", "evidence": "first time trying it", "reason": "r"}]
ANSWER_WORDS = "start small and keep a notebook of progress with friends every week".split()


def rl_params(model: str, **train) -> dict:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["scoring"]["rms"] = {"length-longer": {"kind": "length-longer"}, "random": {"kind": "random"},
                                "pairwise": {"kind": "judge-pairwise", "llm": "test-llm"}}
    params["llms"]["test-llm"] = {"backend": "dummy", "model": "dummy"}
    rl = params["rl"]
    rl.update(rms=["length-longer", "random"], policy={"model": model, "revision": None}, algorithm="ppo",
              prompt=str(ROOT / "prompts" / "bon_policy.txt"), max_reward_failures=100)
    rl["train"].update({"updates": 2, "batch_size": 4, "mini_batch_size": 4, "micro_batch_size": 2,
                        "num_generations": 2, "response_length": 6, "actor_lr": 0.01, "critic_lr": 0.01,
                        "train_layers": None, "kl_coef": 0.05, **train})   # > 0: the reference model and KL are exercised
    rl["eval"].update(questions_limit=None, max_tokens=6, bootstrap=200)
    params["bon"]["judge"] = {"kind": "embedding", "encoder": "embedded:all-MiniLM-L6-v2", "partly": 0.35, "well": 0.5}
    return params


def toy_project(root: Path, n_train=6, n_test=3, domains=("Lifestyle",)) -> dict:
    qs, ranked, ctx = [], [], []
    for i in range(n_train + n_test):
        qid, topic = f"q{i}", TOPICS[i % len(TOPICS)]
        qs.append({"id": qid, "domain": domains[i % len(domains)], "split": "train" if i < n_train else "test",
                   "category": "c",
                   "question": f"How do I start with {topic} ?", "narrative": "secret narrative",
                   "rubric_aspects": ASPECTS})
        ranked.append({"question_id": qid, "rank": 1, "item_id": f"{qid}_0", "position": 0, "category": "hobby",
                       "text": f"I posted about {topic} last year", "score": 1.0})
        ctx.append({"question_id": qid, "retriever": "bm25", "k": 1, "item_ids": [f"{qid}_0"],
                    "profile_text": f"[1] (hobby) I posted about {topic} last year"})
    write_table(qs, root / layout.INGEST["questions"], "questions")
    write_table(ranked, root / layout.PROFILES["ranked_profile"], "ranked_profile")
    write_table(ctx, root / layout.PROFILES["profile_context"], "profile_context")
    write_table(halves.assign(qs, 0, 0), root / layout.INGEST["halves"], "halves")   # unsplit: every question
    return {"questions": str(root / layout.INGEST["questions"]), "halves": str(root / layout.INGEST["halves"]),
            "ranked_profile": str(root / layout.PROFILES["ranked_profile"]),
            "profile_context": str(root / layout.PROFILES["profile_context"]),
            "inferred_rubrics": str(root / layout.RUBRICS["inferred_rubrics"])}


def build_tiny_policy(folder: Path, texts: list[str]) -> Path:
    """A random 2-layer Llama whose word vocabulary covers `texts`: its pad is its end-of-turn token, as in
    SmolLM2, so training must pick another pad (its unknown-word token, which no covered text uses)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    pre = pre_tokenizers.Whitespace()
    words = {w for t in texts for w, _ in pre.pre_tokenize_str(t)} | set(ANSWER_WORDS) | {"user", "assistant"}
    vocab = {w: i for i, w in enumerate(SPECIALS + sorted(words - set(SPECIALS)))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre
    core.add_special_tokens(SPECIALS)
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", bos_token="<|im_start|>",
                                  eos_token="<|im_end|>", pad_token="<|im_end|>")
    tok.chat_template = TEMPLATE
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048,
                         bos_token_id=1, eos_token_id=2, pad_token_id=2, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory) -> Path:
    from tasks.core.artifacts import read_table
    from tasks.downstream.bon.sample import policy_prompts

    root = tmp_path_factory.mktemp("toy")
    inputs = toy_project(root)
    params = rl_params("unused")
    qs = read_table(inputs["questions"], "questions").to_pylist()
    prompts = policy_prompts(qs, read_table(inputs["ranked_profile"], "ranked_profile").to_pylist(), params["rl"])
    return build_tiny_policy(root / "tiny-policy", [m[0]["content"] for m in prompts])


def outputs(root: Path, rm: str) -> dict:
    return {k: str(root / v) for k, v in layout.rl_train(rm).items()}


class Flaky(RewardModel):
    """Scores by length, but NaN for every second answer of a call and raises on a marker word."""
    kind = "flaky-test"

    def identity(self) -> str:
        return self.kind

    def score_answers(self, items):
        if any("explode" in a for _, _, a in items):
            raise RuntimeError("RM server down")
        return [AnswerScore(math.nan if i % 2 else float(len(a.split()))) for i, (_, _, a) in enumerate(items)]


def test_adapter_gives_the_leaderboard_scorers_score(tmp_path, tiny_policy):
    """Through RMReward and through the PPO module (token ids -> text), the same number score_rows gives."""
    import torch
    from transformers import AutoTokenizer
    from trl.experimental.utils import get_reward

    from tasks.models.resources import Resources
    from tasks.downstream.rl.reward import RMReward
    from tasks.downstream.rl.trainers import PPOReward, _Rows
    from tasks.models.rms.registry import make_rm
    from tasks.stages.score import score_rows
    from tasks.models.strategies import load_contexts

    inputs = toy_project(tmp_path)
    params = rl_params(str(tiny_policy))
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    questions = {q["id"]: q for q in pq.read_table(inputs["questions"]).to_pylist()}
    context = load_contexts("raw_profile", inputs["questions"], inputs["profile_context"], None)
    answers = ["start small and keep a notebook", "keep a notebook of progress with friends every week"]
    res = Resources(params)
    for entry in ({"kind": "length-longer"}, {"kind": "random"}, {"kind": "similarity"}):
        rm = make_rm(entry["kind"], entry, res)
        pairs = [{"question_id": q, "domain": "d", "split": "test", "chosen": a, "rejected": "x"}
                 for q, a in zip(("q0", "q1"), answers)]
        board = [r["score_chosen"] for r in score_rows(rm, "personalised", "raw_profile", pairs, questions, context)]
        reward = RMReward(rm, {q: questions[q]["question"] for q in questions}, context, 0)
        assert reward(["q0", "q1"], answers) == board, entry

        tok = AutoTokenizer.from_pretrained(tiny_policy)
        prompt_ids = [[1, 5, 6], [1, 7, 8]]   # stand-ins: the module maps rows back by prompt ids
        rows = [[0] * (3 - len(p)) + p + tok.encode(a, add_special_tokens=False) + [2] for p, a in zip(prompt_ids, answers)]
        width = max(map(len, rows))
        batch = torch.tensor([r + [0] * (width - len(r)) for r in rows])
        module = PPOReward(RMReward(rm, {q: questions[q]["question"] for q in questions}, context, 0), tok,
                           _Rows(prompt_ids, ["q0", "q1"], pad_id=0))
        _, score, _ = get_reward(module, batch, 0, 3)
        assert score.tolist() == pytest.approx(board, abs=1e-6), entry   # float32 on the way through torch


def test_failed_and_nan_rewards_are_counted_as_the_worst_never_defaulted_or_skipped():
    from tasks.downstream.rl.reward import RewardFailures, RMReward

    rm = Flaky("flaky", {})
    first = RMReward(rm, {"q": "question"}, {"q": "ctx"}, max_failures=3)
    with pytest.raises(RewardFailures, match="no finite reward yet"):
        first(["q"], ["explode now"])   # nothing scored yet: no worst to count it as
    reward = RMReward(rm, {"q": "question", "r": "other"}, {"q": "ctx", "r": "ctx"}, max_failures=3)
    assert reward(["q", "q"], ["a b", "c d e"]) == [2.0, 2.0], "NaN: the worst of its question in the step"
    assert reward(["q"], ["explode now"]) == [2.0], "a failed call: the run's worst so far"
    assert [(s.rollouts, s.failures) for s in reward.steps] == [(2, 1), (1, 1)]
    assert "RM server down" in reward.steps[1].errors[0]
    assert reward.steps[0].mean == 2.0, "the step's mean is over the RM's own finite rewards"
    with pytest.raises(RewardFailures, match="rl.max_reward_failures=3"):
        reward(["q", "r", "r", "q"], ["a b c d", "b b b", "c c", "d"])


def test_a_failed_reward_is_the_worst_of_its_question_else_of_its_step():
    from tasks.downstream.rl.reward import RMReward

    reward = RMReward(Flaky("flaky", {}), {"q": "question", "r": "other"}, {"q": "c", "r": "c"}, max_failures=9)
    # Flaky: NaN at odd positions; q has a finite 4 in the step, r has none (its finite 2 is at position 2)
    assert reward(["q", "r", "r", "q"], ["a b c d", "b b b", "c c", "d"]) == [4.0, 2.0, 2.0, 4.0]
    assert reward(["r", "q"], ["e f g", "h"]) == [3.0, 3.0], "no finite reward for q in the step: the step's worst"


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("algorithm", ["ppo", "grpo", "rloo"])
def test_two_updates_train_the_policy_and_reruns_give_the_same_bytes(tmp_path, tiny_policy, algorithm, figures):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from tasks.downstream.rl import train

    inputs = toy_project(tmp_path)
    params = rl_params(str(tiny_policy))
    params["rl"]["algorithm"] = algorithm
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    first = train.run(params, "length-longer", inputs, outputs(tmp_path / "a", "length-longer"))
    assert first["status"] == "trained" and first["updates"] == 2 and first["reward_failures"] == 0
    folder = Path(outputs(tmp_path / "a", "length-longer")["policy"])
    state = load_file(str(folder / "policy.safetensors"))
    base = dict(AutoModelForCausalLM.from_pretrained(tiny_policy).named_parameters())
    assert sum(not torch.equal(base[k], v) for k, v in state.items()) > len(state) // 2, "the updates moved the weights"
    assert str(tmp_path) not in (folder / "policy.json").read_text(), "no path in the checkpoint"
    steps = list(csv.DictReader(open(outputs(tmp_path / "a", "length-longer")["plot_data"])))
    assert [s["step"] for s in steps] == ["1", "2"] and all(s["reward_mean"] and s["entropy"] and s["kl"] for s in steps)
    panels = figures[Path(outputs(tmp_path / "a", "length-longer")["plot"]).name]
    assert [ax["title"] for ax in panels] == ["reward (mean ± std)", "KL", "entropy"]
    for ax, key in zip(panels, ("reward_mean", "kl", "entropy")):
        assert ax["series"] == [([1.0, 2.0], pytest.approx([float(s[key]) for s in steps], abs=1e-6))], key

    train.run(params, "length-longer", inputs, outputs(tmp_path / "b", "length-longer"))
    again = Path(outputs(tmp_path / "b", "length-longer")["policy"])
    assert [file_hash(folder / f) for f in ("policy.safetensors", "policy.json")] == \
        [file_hash(again / f) for f in ("policy.safetensors", "policy.json")], "same seed, same checkpoint bytes"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ppo_counts_failed_rollouts_as_the_worst_and_stops_above_the_budget(tmp_path, tiny_policy, monkeypatch):
    """Half the rewards are NaN: they are counted per update, the run still trains (finite weights), and
    each failed rollout's reward is the worst the RM gave in its step — never a constant like the release's 0.5,
    never left out of the update."""
    import torch
    from safetensors.torch import load_file

    from tasks.downstream.rl import train, trainers
    from tasks.downstream.rl.reward import RewardFailures
    from tasks.models.rms.registry import KINDS

    monkeypatch.setitem(KINDS, Flaky.kind, Flaky)
    inputs = toy_project(tmp_path)
    params = rl_params(str(tiny_policy), micro_batch_size=1)
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    params["scoring"]["rms"]["flaky"] = {"kind": Flaky.kind}
    params["rl"]["rms"] = ["flaky"]
    screened, given = [], []   # what each step's screen returned; the rewards trl got
    screen, forward = trainers.PPOReward.screen, trainers.PPOReward.forward_rows
    monkeypatch.setattr(trainers.PPOReward, "screen", lambda self, rows: screened.append(v := screen(self, rows)) or v)
    monkeypatch.setattr(trainers.PPOReward, "forward_rows",
                        lambda self, ids, mask: given.append(v := forward(self, ids, mask)) or v)
    m = train.run(params, "flaky", inputs, outputs(tmp_path, "flaky"))
    assert m["reward_failures"] == 4 and m["reward_failures_per_step"] == [2, 2]
    state = load_file(str(Path(outputs(tmp_path, "flaky")["policy"]) / "policy.safetensors"))
    assert all(torch.isfinite(v).all() for v in state.values())
    assert len(screened) == 2 and all(len(step) == 4 and None not in step for step in screened)
    for step in screened:   # Flaky's NaNs sit at odd positions; each got at most the step's lowest finite reward
        assert all(step[i] <= min(step[0::2]) for i in (1, 3)), step
    rewards = sorted(float(x) for v in given for x in v[:, 0, 0])
    assert rewards == sorted(r for step in screened for r in step), "every rollout's reward reached PPO"
    steps = list(csv.DictReader(open(outputs(tmp_path, "flaky")["plot_data"])))
    assert [s["reward_failures"] for s in steps] == ["2", "2"]

    params["rl"]["max_reward_failures"] = 1
    with pytest.raises(RewardFailures, match="more than rl.max_reward_failures=1"):
        train.run(params, "flaky", inputs, outputs(tmp_path / "stopped", "flaky"))
    assert not Path(outputs(tmp_path / "stopped", "flaky")["policy"]).exists(), "nothing saved from a stopped run"
    from tasks.core.runlog import read_counters

    assert read_counters(outputs(tmp_path / "stopped", "flaky")["metrics"])["reward_failures"] == 2


def test_a_pairwise_only_rm_gets_a_record_and_an_unlisted_one_is_refused(tmp_path, tiny_policy, figures):
    from tasks.core.errors import ConfigError
    from tasks.downstream.rl import train

    inputs = toy_project(tmp_path)
    params = rl_params(str(tiny_policy))
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    params["rl"]["rms"] = ["random", "pairwise"]
    pairwise = train.run(params, "pairwise", inputs, outputs(tmp_path, "pairwise"))
    assert pairwise["status"] == "not RL-capable"
    out = outputs(tmp_path, "pairwise")
    assert sorted(p.name for p in Path(out["policy"]).iterdir()) == ["policy.json"]
    assert Path(out["plot"]).exists() and open(out["plot_data"]).read().startswith("domain,step,")
    panels = figures[Path(out["plot"]).name]
    assert [ax["texts"] for ax in panels] == [["no training"]] * 3 and not any(ax["series"] for ax in panels)


def test_rl_train_runs_only_for_the_names_rl_rms_lists():
    """rl_train is a DVC foreach over rl.rms; a stage command for another RM is refused before any work."""
    from flows.common import preflight
    from tasks.core.errors import ConfigError

    shipped = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert "random" in shipped["scoring"]["rms"] and "random" not in shipped["rl"]["rms"]
    with pytest.raises(ConfigError, match=r"rl.rms: unknown name 'random'"):
        preflight(str(ROOT / "params.yaml"), "random", "rl_train")
    assert preflight(str(ROOT / "params.yaml"), shipped["rl"]["rms"][0], "rl_train")["rl"]["rms"] == shipped["rl"]["rms"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_rl_eval_judges_each_policy_against_the_untrained_baseline(tmp_path, tiny_policy, figures):
    from tasks.downstream.rl import evaluate, train
    from tasks.core.runlog import read_counters

    inputs = toy_project(tmp_path)
    params = rl_params(str(tiny_policy))
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    policies = {}
    params["rl"]["rms"] = ["length-longer", "pairwise"]
    for rm in params["rl"]["rms"]:
        train.run(params, rm, inputs, outputs(tmp_path, rm))
        policies[rm] = outputs(tmp_path, rm)["policy"]
    out = {k: str(tmp_path / v) for k, v in layout.RL_EVAL.items()}
    ins = {"questions": inputs["questions"], "halves": inputs["halves"], "ranked_profile": inputs["ranked_profile"],
           "policies": policies}
    m = evaluate.run(params, ins, out)
    table = pq.read_table(out["eval"]).to_pylist()
    assert [(r["rm"], r["baseline"]) for r in table] == [("(untrained)", True), ("length-longer", False)]
    assert m["seed_spread"] == "one seed: no spread over training seeds" and table[1]["seed_sd"] is None
    assert all(r["questions"] == 3 and r["ci_low"] <= r["mean_score"] <= r["ci_high"] for r in table)
    (ax,) = figures[Path(out["plot"]).name]
    assert bars_by_tick(ax, next(iter(ax["bars"])), axis="y") == pytest.approx(
        {f"{r['rm']} ({r['algorithm']}; {r['invalid_answers']} invalid)": r["mean_score"]
         for r in table if not r["baseline"]})
    (base,) = [r for r in table if r["baseline"]]
    assert ax["lines"] == {f"(untrained) {base['mean_score']:.3f}": ([base["mean_score"]] * 2, [0.0, 1.0])}
    assert m["not_trained"] == {"pairwise": {"status": "not RL-capable",
                                             "reason": "judge-pairwise: pairwise-only, no score for an answer on its own"}}
    answers = pq.read_table(out["answers"]).to_pylist()
    assert len(answers) == 6 and all("secret" not in (a["text"] or "") for a in answers)
    assert read_counters(out["metrics"])["judged_answers"] == len({(a["question_id"], a["answer_hash"]) for a in answers})
    first = file_hash(out["eval"])
    evaluate.run(params, ins, out)
    counters = read_counters(out["metrics"])
    assert counters["llm:length-longer"]["calls"] == 0 and counters["llm:(untrained)"]["cache_hits"] == 3
    assert file_hash(out["eval"]) == first


def test_correlation_reads_the_rl_column_without_the_baseline(tmp_path):
    from tasks.downstream.correlation.methods import load_rl

    rows = [{"rm": "(untrained)", "baseline": True, "question_id": "q1", "judge_score": 0.9},
            {"rm": "a", "baseline": False, "question_id": "q1", "judge_score": 0.5, "seed": 1},
            {"rm": "a", "baseline": False, "question_id": "q2", "judge_score": None, "seed": 1},
            {"rm": "b", "baseline": False, "question_id": "q1", "judge_score": 0.25, "seed": 1},
            {"rm": "b", "baseline": False, "question_id": "q1", "judge_score": 0.75, "seed": 2}]
    full = [{**{k: None for k in ("domain", "split", "text", "error", "answer_hash", "finish_reason", "policy")},
             "valid": r["judge_score"] is not None, **r, "score": r["judge_score"] or 0.0} for r in rows]
    from tasks.core.schemas import RL_ANSWERS

    write_table([{k: r.get(k) for k in RL_ANSWERS.names} for r in full], tmp_path / "answers.parquet", "rl_answers")
    side = load_rl(str(tmp_path / "answers.parquet"))
    assert side.per_question == {"a": {"q1": 0.5, "q2": 0.0}, "b": {"q1": 0.5}}, \
        "an invalid answer counts as 0; two seeds' policies: their mean"


@pytest.mark.timeout(90)
@pytest.mark.filterwarnings("error::FutureWarning")   # a clean run prints no warning (trl's deprecated read: filtered)
def test_two_seeds_train_two_policies_and_rl_eval_reports_their_spread(tmp_path, tiny_policy):
    """rl.seeds 2: rl_train@<rm> trains a policy per seed (common.seed, +1) in its one stage, the first under the
    one-seed file name; rl_eval answers with both, scores the RM by their mean and reports the spread."""
    from safetensors.torch import load_file

    from tasks.downstream.rl import evaluate, train

    inputs = toy_project(tmp_path)
    params = rl_params(str(tiny_policy))
    params["rl"].update(algorithm="grpo", rms=["length-longer"], seeds=2)
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    m = train.run(params, "length-longer", inputs, outputs(tmp_path, "length-longer"))
    seed = params["common"]["seed"]
    assert m["seeds"] == [seed, seed + 1] and m["updates"] == 4 and m["reward_failures_per_seed"] == [0, 0]
    folder = Path(outputs(tmp_path, "length-longer")["policy"])
    one, two = (load_file(str(folder / f)) for f in ("policy.safetensors", "policy.seed1.safetensors"))
    assert any(not (one[k] == two[k]).all() for k in one), "another seed, another policy"
    steps = list(csv.DictReader(open(outputs(tmp_path, "length-longer")["plot_data"])))
    assert [s["seed"] for s in steps] == [str(seed)] * 2 + [str(seed + 1)] * 2
    out = {k: str(tmp_path / v) for k, v in layout.RL_EVAL.items()}
    rl = evaluate.run(params, {"questions": inputs["questions"], "ranked_profile": inputs["ranked_profile"],
                               "halves": inputs["halves"], "policies": {"length-longer": str(folder)}}, out)
    answers = pq.read_table(out["answers"]).to_pylist()
    mine = [a for a in answers if a["rm"] == "length-longer"]
    assert sorted({a["seed"] for a in mine}) == [seed, seed + 1] and len(mine) == 6
    per_seed = rl["policies"]["length-longer"]["seed_scores"]
    assert list(per_seed) == [str(seed), str(seed + 1)]
    assert rl["policies"]["length-longer"]["mean_score"] == pytest.approx(sum(per_seed.values()) / 2, abs=1e-6)
    assert rl["policies"]["length-longer"]["seed_range"] == pytest.approx(abs(per_seed[str(seed)] - per_seed[str(seed + 1)]), abs=1e-6)
    assert rl["seed_spread"].startswith("2 training seeds")


def test_rl_stages_depend_on_their_own_rm_and_keys_only():
    """rl_train runs once per name in rl.rms (no stage for an RM RL does not train); listing another RM adds
    rl_train@<it> and reruns rl_eval (which reads rl.rms) only; eval keys never retrain."""
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["rl_train"]
    do = stage["do"]
    assert stage["foreach"] == "${rl.rms}" and do["cmd"].endswith(" ${item}")
    assert "scoring.rms" not in do["params"] and "rl" not in do["params"] and "rl.rms" not in do["params"]
    assert "rl.eval" not in do["params"] and "scoring.rms.${item}" in do["params"]
    evaluated = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["rl_eval"]
    assert "rl.train" not in evaluated["params"] and "data/rl/policies" in evaluated["deps"]
    paper = yaml.safe_load((ROOT / "params-paper.yaml").read_text())["rl"]
    assert paper["policy"]["model"] == "Qwen/Qwen2.5-0.5B-Instruct" and paper["train"]["batch_size"] == 128


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_flows_listing_another_rm_trains_only_it(tmp_path, tiny_policy, monkeypatch, prefect_harness):
    """Listing another RM in rl.rms trains only it: rl_train@<rm> of the RM already listed is a cache hit
    (its own key never held the list). Then rl_eval sees both policies."""
    from flows.common import main
    from flows.stage import flow_of
    rl_eval_flow = flow_of("rl_eval")
    rl_train_flow = flow_of("rl_train")

    toy_project(tmp_path)
    params = rl_params(str(tiny_policy))
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    params["rl"]["rms"] = ["length-longer"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(fit_to_rms(params)))
    monkeypatch.chdir(tmp_path)
    assert main(rl_train_flow, rm="length-longer") == 0
    weights = Path(layout.rl_train("length-longer")["policy"]) / "policy.safetensors"
    stamp = weights.stat().st_mtime_ns
    assert main(rl_train_flow, rm="random") == 1 and not Path(layout.rl_train("random")["policy"]).exists()

    params["rl"]["rms"] = ["length-longer", "random"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(fit_to_rms(params)))
    assert main(rl_train_flow, rm="length-longer") == 0 and weights.stat().st_mtime_ns == stamp, "a cache hit"
    assert main(rl_train_flow, rm="random") == 0
    assert json.loads(Path(layout.rl_train("random")["metrics"]).read_text())["status"] == "trained"
    assert main(rl_eval_flow) == 0
    assert [r["rm"] for r in pq.read_table(layout.RL_EVAL["eval"]).to_pylist()] == ["(untrained)", "length-longer", "random"]
    lines = flow_log_lines("rl_train")
    assert lines and not any(BYTECODE.search(m) for m in lines), "no disassembly in the training runs' log"


def test_paper_setting_without_a_train_split_fails_with_one_clear_message(tmp_path, tiny_policy):
    """params-paper.yaml ingests the released benchmark (test only): RL must say so, never train on test."""
    from tasks.core.errors import ConfigError
    from tasks.downstream.rl import train

    inputs = toy_project(tmp_path, n_train=0)
    params = rl_params(str(tiny_policy))
    paper = yaml.safe_load((ROOT / "params-paper.yaml").read_text())["rl"]
    params["rl"] = {**paper, "policy": params["rl"]["policy"], "prompt": params["rl"]["prompt"], "rms": ["length-longer"]}
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    with pytest.raises(ConfigError, match=r"rl.train.splits: no questions of split\(s\) train .*\(it holds: test\)"):
        train.run(params, "length-longer", inputs, outputs(tmp_path, "length-longer"))
    assert not Path(outputs(tmp_path, "length-longer")["policy"]).exists()


def test_rl_eval_refuses_to_judge_on_the_training_split(tmp_path, tiny_policy):
    from tasks.core.errors import ConfigError
    from tasks.downstream.rl import evaluate
    from tasks.downstream.rl.policy import base_identity, write_checkpoint

    inputs = toy_project(tmp_path)
    params = rl_params(str(tiny_policy))
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    params["rl"]["eval"]["splits"] = ["test", "train"]
    folder = tmp_path / "policy"
    write_checkpoint(folder, {"status": "trained", "base": base_identity(params["rl"]["policy"]),
                              "train": {"splits": ["train"]}}, None)
    out = {k: str(tmp_path / v) for k, v in layout.RL_EVAL.items()}
    with pytest.raises(ConfigError, match="rl.eval.splits: 'train' is also a split 'length-longer' was trained on"):
        evaluate.run(params, {**inputs, "policies": {"length-longer": str(folder)}}, out)
    assert not Path(out["eval"]).exists()


def test_rl_eval_answers_only_the_downstream_half(tmp_path, tiny_policy):
    """The test questions ingest set aside for downstream are the ones the policies answer; the half the benchmark
    scores is never answered (the toy project's other tests leave every question in both halves)."""
    from tasks.core.artifacts import read_table
    from tasks.downstream.rl import evaluate

    inputs = toy_project(tmp_path, n_test=4)
    split = halves.assign(read_table(inputs["questions"], "questions").to_pylist(), 0.5, 0)
    write_table(split, inputs["halves"], "halves")
    down = {r["question_id"] for r in split if r["half"] == halves.DOWNSTREAM}
    scored = {r["question_id"] for r in split if r["half"] == halves.BENCHMARK}
    assert len(down) == len(scored) == 2
    params = rl_params(str(tiny_policy))
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    out = {k: str(tmp_path / v) for k, v in layout.RL_EVAL.items()}
    metrics = evaluate.run(params, {**inputs, "policies": {}}, out)
    assert {a["question_id"] for a in pq.read_table(out["answers"]).to_pylist()} == down
    assert metrics["questions"] == 2


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_grpo_counts_failed_rewards_as_the_worst_of_their_question_never_a_default(tmp_path, tiny_policy, monkeypatch):
    """GRPO gets, for a NaN reward, the lowest finite reward of the same question in the update: counted per
    update, and trl's logged reward mean is the mean of what it got (a default such as 0 or 0.5 would move it)."""
    from tasks.downstream.rl import reward as reward_module
    from tasks.downstream.rl import train, trainers
    from tasks.models.rms.registry import KINDS

    monkeypatch.setitem(KINDS, Flaky.kind, Flaky)
    logs, step_logs = [], trainers.step_logs
    monkeypatch.setattr(trainers, "step_logs", lambda tr, *a: logs.append(tr.state.log_history) or step_logs(tr, *a))
    given, call = [], reward_module.RMReward.__call__
    monkeypatch.setattr(reward_module.RMReward, "__call__",
                        lambda self, q, c: given.append((q, v := call(self, q, c))) or v)
    inputs = toy_project(tmp_path)
    params = rl_params(str(tiny_policy))
    params["rl"].update(algorithm="grpo", rms=["flaky"])
    params["common"]["cache_dir"] = str(tmp_path / "cache")
    params["scoring"]["rms"]["flaky"] = {"kind": Flaky.kind}
    m = train.run(params, "flaky", inputs, outputs(tmp_path, "flaky"))
    assert m["reward_failures"] == 4 and m["reward_failures_per_step"] == [2, 2]
    logged = [h["reward"] for h in logs[0] if "reward" in h]
    assert logged == pytest.approx([sum(v) / len(v) for _, v in given], abs=1e-5)
    for qids, values in given:   # Flaky's NaNs sit at odd positions: each got its question's lowest finite reward
        own = {j: [values[i] for i in (0, 2) if qids[i] == qids[j]] for j in (1, 3)}
        assert all(values[j] == (min(own[j]) if own[j] else min(values[0], values[2])) for j in (1, 3)), (qids, values)
