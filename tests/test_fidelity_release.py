"""common.fidelity: release (issue 35): one test per row of docs/paper-setting.md's table, each building the
model input / parsing the reply / scaling the reward on a fixed example and comparing it with the value the
release's code gives, worked out by hand from that code (Martin-qyma/Personalized-RewardBench @ a5c6814; its
modules import vLLM at the top, so they cannot be imported here). Each test cites the lines it follows."""
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tasks.core.params import load_params

ROOT = Path(__file__).resolve().parents[1]
PAPER = load_params(ROOT / "params-paper.yaml")
HELPFUL = "You are a helpful assistant designed to generate personalized responses to user questions."
LONG_POST = " ".join(f"w{i}" for i in range(80))   # longer than any max_words_per_post
RANKED = [{"question_id": "q1", "rank": r, "category": f"Cat{r}", "text": f"post {r}" if r != 2 else LONG_POST}
          for r in range(1, 13)]
QUESTION = {"id": "q1", "domain": "Art", "split": "test", "question": "How do I start painting?",
            "rubric_aspects": [{"aspect": "Budget", "evidence": "e1", "reason": "r"},
                               {"aspect": "Time", "evidence": "e2", "reason": "r"}]}


class Out(SimpleNamespace):
    finish_reason = "stop"


class FakeLLM:
    """Records each request's messages and params; answers from a script."""

    class backend:
        @staticmethod
        def identity():
            return "scripted"

    def __init__(self, replies):
        self.replies, self.seen = list(replies), []

    def generate_many(self, requests, progress=None):
        self.seen += requests
        return [Out(text=self.replies.pop(0)) for _ in requests]


def _template(name: str) -> str:
    return (ROOT / "prompts/release" / name).read_text(encoding="utf-8").strip()   # load_template: read().strip()


def test_paper_params_name_fidelity_release_and_the_release_values(capsys):
    from flows.cli import main

    assert main(["params", str(ROOT / "params-paper.yaml")]) == 0
    assert "valid (common.fidelity: release)" in capsys.readouterr().out
    assert load_params(ROOT / "params.yaml")["common"]["fidelity"] == "corrected"
    raw = yaml.safe_load((ROOT / "params-paper.yaml").read_text())
    assert raw["correlation"]["strategy"] == "none"          # evaluation/pointwise.py:59-64: the question only
    assert raw["correlation"]["bon_method"] == "first_k"


def test_rl_evaluation_decodes_as_infer_py():
    """PPO/infer.py:68: SamplingParams(temperature=1.0, top_p=0.9, max_tokens=512); :30 five posts; :73-76
    the system prompt; the reply kept as generated (:87)."""
    from tasks.downstream.rl.evaluate import answer, eval_prompt_params
    from tasks.downstream.bon.sample import policy_prompts

    p = PAPER["rl"]
    (messages,) = policy_prompts([QUESTION], RANKED, eval_prompt_params(p), "release")
    profile = "\n".join(f"Post {i} (Category: Cat{i}):\n{RANKED[i - 1]['text']}" for i in range(1, 6))
    assert messages == [{"role": "system", "content": HELPFUL},
                        {"role": "user", "content": _template("sample.txt").replace("{profile}", profile)
                         .replace("{question}", QUESTION["question"])}]
    llm = FakeLLM([" An answer. "])
    (row,) = answer(llm, "rm", [QUESTION], [messages], p["eval"], 7, fidelity="release")
    gen = llm.seen[0][1]
    assert (gen.temperature, gen.top_p, gen.max_tokens) == (1.0, 0.9, 512) and row["text"] == " An answer. "


def test_bon_policy_prompt_is_sample_py():
    """BoN/sample.py:23-28 (whole posts, "Post i (Category: c):"), :85-86 ({question} then {profile}),
    :116-120 (top_p 0.9, 512 tokens), :131-133 (the system prompt), :26 (k = 10 posts)."""
    from tasks.downstream.bon.sample import policy_prompts, sample

    p = PAPER["bon"]
    (messages,) = policy_prompts([QUESTION], RANKED, p, "release")
    profile = "\n".join(f"Post {i} (Category: Cat{i}):\n{RANKED[i - 1]['text']}" for i in range(1, 11))
    assert LONG_POST in profile and "Post 11" not in messages[1]["content"]
    assert messages == [{"role": "system", "content": HELPFUL},
                        {"role": "user", "content": _template("sample.txt").replace("{question}", QUESTION["question"])
                         .replace("{profile}", profile)}]
    llm = SimpleNamespace(backend=FakeLLM.backend, sample_many=lambda reqs, n, progress=None: (
        seen.extend(reqs) or [[Out(text=f"\nanswer {i}") for i in range(n)] for _ in reqs]))
    seen: list = []
    rows = sample([QUESTION], [messages], llm, {**p, "n": 2}, 3, "release")
    assert (seen[0][1].temperature, seen[0][1].top_p, seen[0][1].max_tokens) == (1.0, 0.9, 512)
    assert [r["text"] for r in rows] == ["\nanswer 0", "\nanswer 1"]   # output.outputs[0].text, unstripped


@pytest.mark.parametrize("reply, scores, mean", [
    ("[2, 1, 0]", [2, 1, 0], 1.0),                 # BoN/evaluate.py:89-92: the numbers in the list, averaged
    ("Scores: 2 and 1.5", None, 1.75),             # no list: every number in the reply (1.5 is no 0/1/2)
    ("[2, 2", [2, 2], 2.0),                        # cut at max_tokens: no closing bracket, numbers anyway
    ("I cannot rate this.", None, 0.0),            # no number at all: 0.0, a judge failure read as "not covered"
])
def test_rubric_judge_is_evaluate_py(reply, scores, mean):
    """BoN/evaluate.py:54-68 (question, answer, then aspects = the comma-joined titles, BoN/sample.py:57-62),
    :72 (temperature 0, 32 tokens), :77-81 (the judge's system prompt), :87-95 (the parse)."""
    from tasks.models.judge import make_judge

    llm = FakeLLM([reply])
    judge = make_judge(PAPER["bon"]["judge"], encoder_factory=None, llm_factory=lambda name: llm, seed=1,
                       fidelity="release")
    (verdict,) = judge.judge([(QUESTION, "Buy cheap brushes.")])
    messages, gen, _ = llm.seen[0]
    assert messages == [{"role": "system", "content": "You are a fair and insightful judge."},
                        {"role": "user", "content": _template("evaluation.txt").replace("{question}", QUESTION["question"])
                         .replace("{answer}", "Buy cheap brushes.").replace("{aspects}", "Budget, Time")}]
    assert (gen.temperature, gen.max_tokens) == (0.0, 32)
    assert verdict.score == mean and verdict.per_aspect == scores


def test_benchmark_and_bon_rm_input_is_the_release_glue():
    """evaluation/pointwise.py:59-64: the user turn is the question only (strategy none); BoN/score.py:80 and
    PPO/reward_server.py:174: query + profile with no separator, the profile as BoN/sample.py:23-28 lays it out."""
    from tasks.models.rms.base import user_message
    from tasks.models.strategies import contexts
    from tasks.stages.profiles import rank_profiles

    posts = [{"question_id": "q1", "item_id": f"i{k}", "position": k, "category": "Art", "text": f"I paint {k}"}
             for k in range(3)]
    _, (ctx,) = rank_profiles([QUESTION], posts, retriever="bm25", k=10, max_words_per_post=1, context_k=10,
                              fidelity="release")
    assert sorted(ctx["profile_text"].split("\n")[1::2]) == ["I paint 0", "I paint 1", "I paint 2"]
    questions = {"q1": QUESTION}
    raw = contexts("raw_profile", questions, {"q1": ctx["profile_text"]}, {}, "release")["q1"]
    assert user_message(QUESTION["question"], raw, "release") == "How do I start painting?" + ctx["profile_text"]
    assert user_message(QUESTION["question"], raw, "release").startswith("How do I start painting?Post 1 (Category: Art):\n")
    none = contexts("none", questions, {}, {}, "release")["q1"]
    assert user_message(QUESTION["question"], none, "release") == QUESTION["question"]


def _llama_like():
    """A word-level tokenizer that, like Llama-3's, adds <bos> itself and has <bos> in its chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = ["<bos>", "<pad>", "<unk>", "<user>", "<assistant>", "Q?", "A", "long", "answer."]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 0)])
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", pad_token="<pad>", unk_token="<unk>",
                                   chat_template="{{ bos_token }}{% for m in messages %}<{{ m['role'] }}> "
                                                 "{{ m['content'] }} {% endfor %}")


def test_tokenisation_is_template_text_then_tokenizer():
    """evaluation/pointwise.py:66-77 (= BoN/score.py:83-91): apply_chat_template(tokenize=False), then
    tokenizer(text, truncation=True, max_length=8192): <bos> twice; over max_length the end goes."""
    from tasks.models.rms.encode import encode_many, encode_release

    tok = _llama_like()
    (enc,) = encode_release(tok, [("Q?", "", "A long answer.")], 8192, tok.chat_template)
    # "<bos><user> Q? <assistant> A long answer. " -> <bos> (post-processor) + <bos> <user> Q? <assistant> A long answer.
    assert enc.ids == [0, 0, 3, 5, 4, 6, 7, 8] and not enc.truncated
    (cut,) = encode_release(tok, [("Q?", "", "A long answer.")], 5, tok.chat_template)
    assert cut.ids == [0, 0, 3, 5, 4] and cut.truncated           # right truncation: the whole answer is gone
    (one_short,) = encode_release(tok, [("Q?", "", "A long answer.")], 7, tok.chat_template)
    assert one_short.ids == [0, 0, 3, 5, 4, 6, 7] and one_short.truncated   # the second <bos> cost the last word
    (ours,) = encode_many(tok, [("Q?", "", "A long answer.")], 8192, tok.chat_template)
    assert ours.ids == [0, 3, 5, 4, 6, 7, 8]                      # prbench: one <bos>


class _Res:
    def __init__(self, llm):
        self._llm, self.seed, self.params = llm, 5, {"common": {"fidelity": "release"}}

    def llm(self, name):
        return self._llm


def test_pairwise_judge_is_pairwise_py():
    """evaluation/pairwise.py:49-51 (question and the two answers, no profile), :70 (512 tokens), :76-82 (the
    system file), :86-101 (after </think>, quotes and * removed, "result:" then a/b; anything else is "A")."""
    from tasks.models.rms.base import PairInput
    from tasks.models.rms.registry import make_rm

    replies = ["**Reasoning:** B fits.\n**Result:** B", "no verdict at all", "<think>Result: B</think> Result: A", None]
    llm = FakeLLM(replies)
    rm = make_rm("j", dict(PAPER["scoring"]["rms"]["qwen32b-pairwise"]), _Res(llm))
    pairs = [PairInput(f"q{i}", "Which brush?", "My past posts: ...", f"chosen {i}", f"rejected {i}") for i in range(4)]
    out = rm.score_pairs(pairs)
    assert [gen.max_tokens for _, gen, _ in llm.seen] == [512] * 4
    for (messages, _, _), p, s in zip(llm.seen, pairs, out):
        a, b = (p.rejected, p.chosen) if s.chosen_position == "B" else (p.chosen, p.rejected)
        assert messages == [{"role": "system", "content": _template("pairwise_system.txt")},
                            {"role": "user", "content": _template("pairwise_user.txt").replace("{question}", p.question)
                             .replace("{Response_A}", a).replace("{Response_B}", b)}]
    said_a = [s.picked_a for s in out]
    assert said_a == [0.0, 1.0, 1.0, 1.0]   # B, then three failures and an A, each counted as "A"


def test_ppo_reward_is_reward_function_py():
    """PPO/reward_function.py:54-60: response.json()["score"] / 10; any error returns 0.5."""
    from tasks.downstream.rl.reward import RMReward
    from tasks.models.rms.base import AnswerScore

    rm = SimpleNamespace(name="rm", score_answers=lambda items: [AnswerScore(s) for s in (7.25, 3.0, None, float("nan"))])
    reward = RMReward(rm, {q: "Q?" for q in "abcd"}, {q: "" for q in "abcd"}, 10, fidelity="release")
    assert reward(list("abcd"), ["x"] * 4) == [0.725, 0.3, 0.5, 0.5]
    assert reward.failures == 2
    ours = RMReward(rm, {q: "Q?" for q in "abcd"}, {q: "" for q in "abcd"}, 10)
    # corrected: a failure is the worst finite reward of its question, else of its update (FAILED_RULE)
    assert ours(list("abcd"), ["x"] * 4) == [7.25, 3.0, 3.0, 3.0]


def test_bon_tie_goes_to_the_earliest_sample():
    """BoN/score.py:173-190: the first k samples, max() keeping the first of equal scores."""
    from tasks.core.fidelity import pick
    from tasks.downstream.bon.report import REPORTED_METHOD, report_metrics
    from tasks.downstream.bon.select import best_of_k

    cands, judge = [(0, 1.0), (1, 2.0), (2, 2.0)], {0: 0.1, 1: 0.3, 2: 0.9}
    method = pick(REPORTED_METHOD, "release")
    assert best_of_k(cands, judge, 3, method) == 0.3                 # sample 1 wins the tie with sample 2
    assert best_of_k(cands, judge, 3, pick(REPORTED_METHOD, "corrected")) == pytest.approx(0.6)   # split evenly
    curve = [{"rm": "rm", "domain": "all", "k": 3, "method": m, "judge_score": v, "ci_low": None, "ci_high": None,
              "gain_over_k1": 0.0, "n_questions": 1} for m, v in (("first_k", 0.3), ("expected", 0.6))]
    m = report_metrics(curve, {"rm": {}}, [], n=3, ks=[3], skipped=[], judge="j", reported=method)
    assert m["reported_method"] == "first_k" and m["lines"]["rm"]["first_k"]["3"]["score"] == 0.3


def test_dvc_exp_sets_the_fidelity_and_reruns_only_the_stages_it_changes(tmp_path):
    """`dvc exp run -S common.fidelity=release` (docs/paper-setting.md): one line changes, the file stays valid,
    and every stage whose behaviour depends on it declares it as a DVC param; stages it does not touch do not."""
    import shutil

    from dvc.utils.hydra import apply_overrides

    from tasks.core.stage_table import STAGES

    copy_ = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", copy_)
    apply_overrides(copy_, ["common.fidelity=release"])
    changed = [a for a, b in zip((ROOT / "params.yaml").read_text().splitlines(), copy_.read_text().splitlines()) if a != b]
    assert len(changed) == 1 and load_params(copy_, complete=True)["common"]["fidelity"] == "release"
    reads = {s.name for s in STAGES.values() if {"common", "common.fidelity"} & set(s.params)}
    assert {"profiles", "score", "bon_sample", "bon_judge", "bon_score", "bon_report", "rl_train", "rl_eval"} <= reads
    assert "leaderboard" not in reads and "ingest" not in reads


def test_score_cli_names_the_fidelity(tmp_path, capsys):
    import json

    from flows.cli import main

    out = tmp_path / "out"
    assert main(["score", "--kind", "length-longer", "--data", str(ROOT / "data/sample/rewardbench"), "--limit", "2",
                 "--fidelity", "release", "--out", str(out), "--params", str(ROOT / "params.yaml")]) == 0
    assert "fidelity release" in capsys.readouterr().out.splitlines()[0]
    assert json.loads((out / "results.json").read_text())["config"]["fidelity"] == "release"


def test_a_seq_cls_rm_under_release_scores_the_release_input(tmp_path):
    """The fidelity reaches the RM through make_rm: under release its scored input is encode_release's
    (the tokenizer's own special tokens added to the template text), under corrected prbench's."""
    from tasks.models.rms.encode import encode_many, encode_release
    from tasks.models.rms.registry import make_rm
    from tests.test_seq_cls import _head

    entry = {"kind": "seq-cls", "model": _head(tmp_path, 1), "max_length": 96,
             "chat_template": "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"}
    item = ("Q?", "Post 1 (Category: Art):\nI paint.", "A.")
    release = make_rm("r", entry, SimpleNamespace(params={"common": {"fidelity": "release"}}))
    ours = make_rm("c", entry, None)
    (want,) = encode_release(release.tok, [item], 96, release.template)
    assert want.ids[0] == release.tok.cls_token_id and want.user == "Q?Post 1 (Category: Art):\nI paint."
    assert release.score_answers([item])[0].input_hash == want.hash()
    assert ours.score_answers([item])[0].input_hash == encode_many(ours.tok, [item], 96, ours.template)[0].hash()
    assert want.hash() != encode_many(ours.tok, [item], 96, ours.template)[0].hash()


def test_row_3_the_release_judge_reads_the_numbers_inside_the_first_list_when_there_is_one():
    from tasks.models.judge import parse_release

    assert parse_release("Aspect 1 of 2 is met: [2, 1] (then [0])").value == 1.5, "not the 1, 2 and 0 around it"
    assert parse_release("scores 2 and 1").value == 1.5, "no list: the numbers anywhere"
    assert parse_release("no verdict").value == 0.0
