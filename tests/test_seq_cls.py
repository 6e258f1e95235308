"""seq-cls reward models on a MiniLM classifier head: inputs, truncation, batch and padding
invariance, remote-code refusal, and the InternLM2 adapter against a stand-in model."""
import hashlib
import json

import pytest

from tasks.core.errors import ConfigError
from tasks.models.rms.base import PairInput, user_message
from tasks.models.rms.registry import make_rm
from tasks.models.rms.encode import encode_answer, encode_many


def _head(root, num_labels):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from tasks.models.encoders import EMBEDDED

    minilm = EMBEDDED["all-MiniLM-L6-v2"]()
    torch.manual_seed(0)
    AutoModelForSequenceClassification.from_pretrained(minilm, num_labels=num_labels).save_pretrained(root)
    AutoTokenizer.from_pretrained(minilm).save_pretrained(root)
    return str(root)


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    return _head(tmp_path_factory.mktemp("minilm-head"), 1)


@pytest.fixture(scope="module")
def rm(head):
    return make_rm("mini", {"kind": "seq-cls", "model": head, "max_length": 96}, None)


def _items(n=40):
    """Varied lengths, some over max_length (96) so truncation is in the mix."""
    return [(f"What should I try for hobby number {i}?",
             " ".join(f"post{i}-{k} about weekends" for k in range(i % 9 * 4)),
             " ".join(["Try something small first."] * (1 + i % 5))) for i in range(n)]


def test_scores_do_not_depend_on_batch_size_padding_side_or_order(rm, monkeypatch):
    import tasks.models.rms.seq_cls as seq_cls

    items = _items()
    runs = {}
    for bs in (1, 8, 32):
        rm.batch_size = bs
        runs[bs] = [s.score for s in rm.score_answers(items)]
    with monkeypatch.context() as m:
        m.setattr(seq_cls, "WINDOW", 7)   # long inputs are scored a window at a time
        runs["window"] = [s.score for s in rm.score_answers(items)]
    rm.tok.padding_side, rm.left_pad = "left", True   # what a left-padding tokenizer config gives
    runs["left"] = [s.score for s in rm.score_answers(items)]
    rm.tok.padding_side, rm.left_pad, rm.batch_size = "right", False, 8
    for key, scores in runs.items():
        assert max(abs(a - b) for a, b in zip(scores, runs[1])) < 1e-4, key
    assert [s.score for s in rm.score_answers(items[::-1])][::-1] == pytest.approx(runs[8], abs=1e-4)
    assert len(set(round(s, 4) for s in runs[1])) > 5    # real, distinct scores


def test_score_pairs_and_hash_of_exact_ids(rm):
    pair = PairInput("q1", "How do I start running?", "My past posts:\nI hate mornings.",
                     "Run in the evening.", "Run at 6am.")
    ps = rm.score_pairs([pair])[0]
    enc = encode_answer(rm.tok, pair.question, pair.context, pair.chosen, rm.max_length)
    seen = "\x1f".join([" ".join(map(str, enc.ids)), " ".join(map(str, enc.token_types))])
    want = hashlib.sha256(seen.encode()).hexdigest()
    assert ps.chosen.input_hash == want and ps.rejected.input_hash != want
    assert ps.chosen.score != ps.rejected.score and not ps.chosen.truncated


def test_truncation_keeps_the_start_of_the_context_never_cuts_the_answer(rm):
    tok, q, a = rm.tok, "How do I save money?", "Cook at home and track every expense weekly."
    context = " ".join(f"w{k}" for k in range(200))
    enc = encode_answer(tok, q, context, a, 64)
    assert enc.truncated and len(enc.ids) <= 64
    assert enc.user.startswith(q + "\n\nw0 w1 ") and "w199" not in enc.user   # a context without posts: its end goes
    answer_ids = tok(a, add_special_tokens=False)["input_ids"]
    assert enc.answer == a and enc.ids[-len(answer_ids) - 1:-1] == answer_ids   # whole, before the final [SEP]
    fits = encode_answer(tok, q, "short context", a, 64)
    assert not fits.truncated and fits.user == user_message(q, "short context")
    # no room for any context: the question loses its start; only an answer too long alone is cut
    long_q = encode_answer(tok, " ".join(f"q{k}" for k in range(100)), "ctx", a, 32)
    assert long_q.answer == a and "ctx" not in long_q.user and long_q.user.endswith("q99") and len(long_q.ids) <= 32
    long_a = encode_answer(tok, q, "ctx", " ".join(f"a{k}" for k in range(100)), 32)
    assert long_a.user == "" and long_a.answer.startswith("a0 a1") and long_a.truncated and len(long_a.ids) <= 32
    # the batched path gives the same ids and flags as one at a time
    items = _items(12)
    assert encode_many(tok, items, 96) == [encode_answer(tok, *it, 96) for it in items]
    flags = [e.truncated for e in encode_many(tok, items, 96)]
    assert [s.truncated for s in rm.score_answers(items)] == flags and any(flags)


def test_chat_template_from_the_entry_shapes_the_input(head):
    template = ("{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}")
    rm = make_rm("tmpl", {"kind": "seq-cls", "model": head, "chat_template": template, "max_length": 96}, None)
    enc = encode_many(rm.tok, [("Q?", "ctx", "A.")], 96, rm.template)[0]
    assert enc.ids == rm.tok("<user> Q?\n\nctx <assistant> A. ", add_special_tokens=False)["input_ids"]
    assert enc.token_types in (None, [0] * len(enc.ids))
    assert rm.score_answers([("Q?", "ctx", "A.")])[0].score is not None


def test_multi_class_head_scores_the_last_class_probability(tmp_path):
    """A 2-class head whose classes differ (bias -1 / +1): the score is p(last class), checked
    against the model run here on each input alone; p(first class) would be 1 minus it."""
    import torch
    from transformers import AutoModelForSequenceClassification

    folder = _head(tmp_path, 2)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        model.classifier.bias.copy_(torch.tensor([-1.0, 1.0]))
    model.save_pretrained(folder)
    rm = make_rm("two", {"kind": "seq-cls", "model": folder}, None)
    items = _items(6)
    scores = [s.score for s in rm.score_answers(items)]
    expected = []
    for q, c, a in items:
        enc = encode_answer(rm.tok, q, c, a, rm.max_length, rm.template)
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([enc.ids]),
                           **({"token_type_ids": torch.tensor([enc.token_types])} if enc.token_types else {})).logits
        expected.append(float(logits.softmax(-1)[0, 1]))
    assert scores == pytest.approx(expected, abs=1e-5)
    assert all(s > 0.6 for s in scores), "the last class is the likelier one under this head"
    assert rm.max_length == 512


def test_remote_code_is_refused_without_the_entry_opting_in(tmp_path):
    folder = tmp_path / "custom-rm"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "custom", "auto_map": {
        "AutoModelForSequenceClassification": "modeling_custom.CustomRM"}}))
    for name in ("model.safetensors", "tokenizer.json", "modeling_custom.py"):   # a complete folder: its code is the problem
        (folder / name).write_text("")
    with pytest.raises(ConfigError) as err:
        make_rm("my-rm", {"kind": "seq-cls", "model": str(folder)}, None)
    msg = str(err.value)
    assert "scoring.rms.my-rm" in msg and "trust_remote_code: true" in msg and "\n" not in msg


def _weights_id(folder) -> str:
    """The weights file's own hash, as a location-free hash of (file name, content): what the identity promises."""
    from pathlib import Path

    digest = hashlib.sha256(Path(folder, "model.safetensors").read_bytes()).hexdigest()
    return hashlib.sha256(b"model.safetensors\0" + digest.encode() + b"\0").hexdigest()[:16]


def test_identity_names_kind_model_revision_and_weights(rm, head, tmp_path):
    import shutil

    assert rm.identity() == f"seq-cls:{head}@default:{_weights_id(head)}"
    copy = shutil.copytree(head, tmp_path / "copy")
    pinned = make_rm("mini", {"kind": "seq-cls", "model": str(copy), "revision": "v2", "max_length": 96}, None)
    assert pinned.identity() == f"seq-cls:{copy}@v2:{_weights_id(head)}"   # same weights elsewhere: same hash
    with open(copy / "model.safetensors", "r+b") as fh:                    # one byte of the weights changes
        fh.seek(-1, 2)
        last = fh.read(1)[0]
        fh.seek(-1, 2)
        fh.write(bytes([last ^ 1]))
    changed = make_rm("mini", {"kind": "seq-cls", "model": str(copy), "revision": "v2", "max_length": 96}, None)
    assert changed.identity() == f"seq-cls:{copy}@v2:{_weights_id(copy)}" and _weights_id(copy) != _weights_id(head)
    assert pinned.identity() == f"seq-cls:{copy}@v2:{_weights_id(head)}", "an RM built before names what it loaded"


def test_bradley_terry_without_a_trained_model_says_to_run_train_rm(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="run the train_rm stage"):
        make_rm("bt", {"kind": "bradley-terry"}, None)


def test_unknown_dtype_is_a_config_error(head):
    with pytest.raises(ConfigError, match="scoring.rms.x.dtype"):
        make_rm("x", {"kind": "seq-cls", "model": head, "dtype": "fp8"}, None)


# --- internlm2-reward: the real family needs its remote code and weights (not available offline);
# what is checked here is the refusal and the conversations handed to its get_scores.

def test_internlm2_refuses_without_trust_remote_code():
    with pytest.raises(ConfigError, match=r"scoring\.rms\.ilm.*trust_remote_code: true"):
        make_rm("ilm", {"kind": "internlm2-reward", "model": "internlm/internlm2-1_8b-reward"}, None)


class _StandInInternLM2:
    """What AutoModel.from_pretrained(..., trust_remote_code=True) returns for the family."""

    def __init__(self):
        from types import SimpleNamespace

        self.config, self.calls = SimpleNamespace(max_position_embeddings=48), []

    def to(self, device):
        return self

    def eval(self):
        return self

    def get_scores(self, tokenizer, chats):
        self.calls.append(chats)
        return [[float(len(c[1]["content"]))] for c in chats]


def test_internlm2_builds_user_assistant_chats_and_passes_the_entry_trust(head, monkeypatch):
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(head)
    tok.chat_template = "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
    model, seen = _StandInInternLM2(), []

    def fake(obj):
        def from_pretrained(name, **kw):
            seen.append((name, kw))
            return obj
        return staticmethod(from_pretrained)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", fake(tok))
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", fake(model))
    rm = make_rm("ilm", {"kind": "internlm2-reward", "model": "org/rm", "revision": "abc", "trust_remote_code": True,
                         "batch_size": 2}, None)
    assert [(n, kw["trust_remote_code"], kw["revision"]) for n, kw in seen] == [("org/rm", True, "abc")] * 2
    long_ctx = " ".join(f"w{k}" for k in range(80))
    items = [("Q1?", "", "short"), ("Q2?", long_ctx, "a much longer answer"), ("Q3?", "ctx", "mid answer")]
    scores = rm.score_answers(items)
    assert [s.score for s in scores] == [5.0, 20.0, 10.0]          # back in input order
    chats = {c[0]["content"]: c for batch in model.calls for c in batch}
    assert chats["Q1?"] == [{"role": "user", "content": "Q1?"}, {"role": "assistant", "content": "short"}]
    assert chats["Q3?\n\nctx"][1]["content"] == "mid answer"
    cut = next(c for k, c in chats.items() if k.startswith("Q2?"))
    assert scores[1].truncated and cut[0]["content"].startswith("Q2?\n\nw0 w1") and "w79" not in cut[0]["content"]
    assert cut[1]["content"] == "a much longer answer"
    assert all(len(b) <= 2 for b in model.calls)
