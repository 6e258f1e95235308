"""`kind: dpo` in process, on tiny random causal LMs (tests/tiny_lm.py): the implicit reward is the answer's
log-probabilities under the policy minus the reference's, as a plain transformers forward written here computes
them (the answer's tokens found by character offsets, not by prbench's own span rule); `normalize: mean` divides
by the answer's token count; a cut input keeps the whole answer; scores are bit-for-bit batch-invariant; every
bad entry is one line naming its key, before any scoring."""
import json
import random

import pytest

from tasks.core.errors import ConfigError
from tasks.models.rms import invariant
from tasks.models.rms.base import PairInput, user_message
from tasks.models.rms.registry import check, make_rm
from tests.conftest import SAMPLE
from tests.tiny_lm import tiny_causal_lm


@pytest.fixture(scope="module")
def lms(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-lms")
    a = tiny_causal_lm(root / "A", seed=0)
    return {"A": str(a), "B": str(tiny_causal_lm(root / "B", seed=1, like=a)),
            "other-vocab": str(tiny_causal_lm(root / "other-vocab", seed=2, vocab_size=500)),
            "no-template": str(tiny_causal_lm(root / "no-template", seed=3, like=a, template=None))}


def sample_items(n=8) -> list[tuple[str, str, str]]:
    """(question, context, answer) from the bundled sample's pairs: both answers, with and without posts."""
    rows = json.loads((SAMPLE / "lamp_qa" / "Lifestyle_and_Personal_Development_test.json").read_text())
    pairs = {p["id"]: p for p in json.loads((SAMPLE / "pairs" / "Lifestyle_and_Personal_Development_test.json").read_text())}
    out = []
    for i, row in enumerate(rows[:n // 2]):
        posts = "\n".join(f"[{k + 1}] {p['text'][:200]}" for k, p in enumerate(row["profile"][:i]))
        out += [(row["question"], posts, pairs[row["id"]][side]) for side in ("chosen", "rejected")]
    return out


def plain_logprob(folder: str, user: str, answer: str) -> tuple[float, int]:
    """log p(answer | chat template up to it) by a plain forward: the answer's tokens are those whose characters
    overlap the answer's in the rendered text (offsets), each scored by the logits one position before it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    text = tok.apply_chat_template([{"role": "user", "content": user}, {"role": "assistant", "content": answer}],
                                   tokenize=False)
    begin = text.rindex(answer)   # the assistant turn is the last thing in it
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = enc["input_ids"]
    mine = [t for t, (a, b) in enumerate(enc["offset_mapping"]) if a < begin + len(answer) and b > begin]
    with torch.no_grad():
        logp = model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
    return sum(logp[t - 1, ids[t]].item() for t in mine), len(mine)


def dpo(lms, model="A", **options):
    return make_rm("dpo-test", {"kind": "dpo", "model": lms[model], **options}, None)


def test_log_probs_match_a_plain_forward_summed_or_averaged_over_the_answer_tokens_only(lms):
    items = sample_items()
    plain = {m: [plain_logprob(lms[m], user_message(q, c), a) for q, c, a in items] for m in ("A", "B")}
    free = [s.score for s in dpo(lms).score_answers(items)]
    assert free == pytest.approx([lp for lp, _ in plain["A"]], rel=1e-5, abs=1e-4), "reference-free: log pi(y|x)"
    against = [s.score for s in dpo(lms, ref_model=lms["B"]).score_answers(items)]
    assert against == pytest.approx([a - b for (a, _), (b, _) in zip(plain["A"], plain["B"])], rel=1e-5, abs=1e-4)
    mean = [s.score for s in dpo(lms, ref_model=lms["B"], normalize="mean").score_answers(items)]
    assert mean == pytest.approx([(a - b) / n for (a, n), (b, _) in zip(plain["A"], plain["B"])], rel=1e-5, abs=1e-5)
    assert len(set(free)) == len(items) and all(n > 3 for _, n in plain["A"]), "the answers differ and have tokens"


def test_an_empty_answer_sums_to_zero_and_has_no_mean(lms):
    items = [("How do I start running?", "", "")]
    assert dpo(lms, ref_model=lms["B"]).score_answers(items)[0].score == 0.0
    assert dpo(lms, normalize="mean").score_answers(items)[0].score is None, "no tokens to average: invalid, not 0"


def test_a_model_against_itself_scores_exactly_zero(lms):
    scores = dpo(lms, ref_model=lms["A"]).score_answers(sample_items())
    assert [s.score for s in scores] == [0.0] * len(scores)


def test_a_cut_input_keeps_the_whole_answer_and_scores_what_it_kept(lms):
    """A long profile over max_length: posts go first, the answer stays whole; the score is the plain forward's
    on the input actually kept (its user turn), and the pair shares that context."""
    from tasks.models.rms.encode import encode_many

    q, _, _ = sample_items(2)[0]
    posts = "\n".join(f"[{k}] I keep a running diary and my knees hurt after long runs on hills." for k in range(1, 40))
    answers = ("Start slowly, walk and run in turns.", "Buy the most expensive shoes you can find.")
    rm = dpo(lms, ref_model=lms["B"], max_length=160)
    scored = rm.score_answers([(q, posts, a) for a in answers])
    kept = encode_many(rm.tok, [(q, posts, a) for a in answers], 160, rm.template)
    assert all(s.truncated for s in scored) and all(len(e.ids) <= 160 for e in kept)
    assert kept[0].user == kept[1].user != user_message(q, posts), "the same shorter context for both answers"
    assert [e.answer for e in kept] == list(answers), "the answer is never cut while context is left"
    for s, e in zip(scored, kept):
        (a, _), (b, _) = (plain_logprob(lms[m], e.user, e.answer) for m in ("A", "B"))
        assert s.score == pytest.approx(a - b, rel=1e-5, abs=1e-4)


@pytest.mark.parametrize("normalize", ["sum", "mean"])
def test_batch_invariant_scores_are_the_same_bits_at_any_batch_size_and_order(lms, normalize):
    items = sample_items()
    pairs = [PairInput(f"q{i}", q, c, a, b) for i, ((q, c, a), (_, _, b)) in enumerate(zip(items[0::2], items[1::2]))]
    rm = dpo(lms, ref_model=lms["B"], normalize=normalize, batch_invariant=True)

    def bits(batch_size, order=None):
        rm.batch_size = batch_size
        got = rm.score_pairs([pairs[i] for i in order] if order else pairs)
        got = [got[order.index(i)] for i in range(len(pairs))] if order else got
        return [(s.chosen.score, s.rejected.score, s.chosen.input_hash) for s in got]

    want = bits(1)
    order = list(range(len(pairs)))
    random.Random(5).shuffle(order)
    assert bits(3) == want and bits(16) == want and bits(16, order) == want
    assert rm.numerics()["batch_invariant"] is True
    rm.PLAN = lambda lengths, device: invariant.plan(lengths, "cuda")   # a GPU's micro-batches: rows, fillers, buckets
    gpu = bits(1)
    assert bits(16, order) == gpu and [x for g in gpu for x in g[:2]] == pytest.approx(
        [x for w in want for x in w[:2]], rel=1e-5), "the same answers' scores, in other shapes"


def test_results_name_the_implicit_reward_and_its_reference(lms):
    with_ref, free = dpo(lms, ref_model=lms["B"]), dpo(lms, normalize="mean")
    assert with_ref.identity().startswith(f"dpo:{lms['A']}@default:")
    assert f"|reference:{lms['B']}@default:" in with_ref.identity() and with_ref.identity().endswith("|normalize:sum")
    assert "|reference:none|normalize:mean" in free.identity() and with_ref.identity() != free.identity()
    assert with_ref.numerics() | {"reward": "implicit (DPO)", "reference": lms["B"], "normalize": "sum"} == \
        with_ref.numerics()
    assert free.numerics()["reference"] == "none (reference-free)"


def test_a_reference_on_another_tokenizer_is_refused(lms):
    with pytest.raises(ConfigError, match=r"^scoring\.rms\.dpo-test\.ref_model: '.*other-vocab' does not share the "
                                          r"tokenizer of '.*A' \(600 vs 500 tokens"):
        dpo(lms, ref_model=lms["other-vocab"])


def test_a_model_without_a_chat_template_needs_one_in_the_entry(lms):
    with pytest.raises(ConfigError, match=r"^scoring\.rms\.dpo-test\.chat_template: model '.*no-template' has no chat "
                                          r"template; give one"):
        dpo(lms, model="no-template")
    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    assert dpo(lms, model="no-template", chat_template=template).score_answers([("Q?", "", "An answer.")])[0].score < 0


def test_a_template_that_changes_the_answer_is_refused_when_built(lms):
    upper = "{% for m in messages %}<|im_start|>{{ m['content'] | upper }}<|im_end|>{% endfor %}"
    with pytest.raises(ConfigError, match=r"^scoring\.rms\.dpo-test\.chat_template: the chat template does not show "
                                          r"the assistant's answer as written"):
        dpo(lms, chat_template=upper)


def test_entry_problems_are_one_line_each_before_anything_loads(lms):
    entry = {"kind": "dpo", "model": lms["A"], "ref_model": "./no/such/ref", "normalize": "avg", "ref_free_type": "avg"}
    problems = check("x", entry)
    assert any(p.startswith("scoring.rms.x.normalize: 'avg' is not allowed") and "sum, mean" in p for p in problems)
    assert any(p.startswith("scoring.rms.x.ref_free_type: ") for p in problems), problems
    fine = {k: v for k, v in entry.items() if k not in ("normalize", "ref_free_type")}
    assert check("x", fine) == ["scoring.rms.x.ref_model: no such folder './no/such/ref'; expected a hub id, or a "
                                "folder with config.json, weights (*.safetensors / *.bin) and a tokenizer, as "
                                "`hf download ID --local-dir DIR` writes"]
    assert check("x", {**fine, "ref_model": lms["B"], "ref_revision": "main"}) == []


def test_prbench_params_checks_a_dpo_entry_before_any_work(lms, tmp_path, capsys, monkeypatch):
    from tests.test_params_mistakes import RMS, TEXT, _edit, _params

    for i, (options, said) in enumerate([
            (f"ref_model: {lms['B']}, normalize: avg", "scoring.rms.dpo-rm.normalize: 'avg' is not allowed: one of sum, mean"),
            ("ref_model: ./no-such-ref", "scoring.rms.dpo-rm.ref_model: no such folder './no-such-ref'")]):
        entry = f"    dpo-rm: {{kind: dpo, model: {lms['A']}, {options}}}\n"
        (tmp_path / str(i)).mkdir()
        rc, out, err = _params(tmp_path / str(i), capsys, monkeypatch, _edit(RMS, RMS + entry, TEXT))
        assert rc != 0 and err.startswith(f"params.yaml: {said}") and "\n" not in err, err
    good = f"    dpo-rm: {{kind: dpo, model: {lms['A']}, ref_model: {lms['B']}, normalize: mean}}\n"
    (tmp_path / "good").mkdir()
    rc, out, err = _params(tmp_path / "good", capsys, monkeypatch, _edit(RMS, RMS + good, TEXT))
    assert rc == 0, err


def test_a_released_dpo_policy_is_prefetched_as_a_causal_lm_and_a_classifier_is_refused(lms, tmp_path):
    from pathlib import Path

    from tasks.core.artifacts import tree_hash
    from tasks.ops import releases
    from tests.fakes.hf_hub import tiny_seq_cls

    def release(folder):
        return releases.Release(model=folder, revision=releases.LOCAL_PREFIX + tree_hash([Path(folder)]), source="local")

    entry = releases.rm_entry(release(lms["A"]), {"kind": "dpo", "ref_model": lms["B"], "max_length": 256})
    assert entry["kind"] == "dpo" and entry["model"] == lms["A"] and entry["ref_model"] == lms["B"]
    releases.prefetch(release(lms["A"]), entry)   # downloads nothing (a local folder), builds policy + reference
    classifier = str(tiny_seq_cls(tmp_path / "classifier"))
    with pytest.raises(ConfigError, match=r": not a causal language model \(architectures: BertForSequenceClassification\); "
                                          r"a dpo RM scores answers by a policy's log-probabilities$"):
        releases.prefetch(release(classifier), {**entry, "model": classifier})
    with pytest.raises(ConfigError, match=r": not a sequence-classification reward model \(architectures: LlamaForCausalLM\)"):
        releases.prefetch(release(lms["A"]), {**entry, "kind": "seq-cls"})


def test_the_score_stage_loads_both_models_once_and_chunks_change_no_bit(lms, tmp_path, monkeypatch):
    """Every chunk of the stage (as a Dask or Ray worker runs them) scores with the one policy and reference the
    stage loaded; with batch_invariant, chunk sizes 2 and 256 give the same bytes of scores."""
    from transformers import AutoModelForCausalLM

    from tests.test_score_stage import _project, _run

    loads = []
    real = AutoModelForCausalLM.from_pretrained.__func__
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained",
                        classmethod(lambda cls, *a, **k: loads.append(a[0]) or real(cls, *a, **k)))
    rm = {"kind": "dpo", "model": lms["A"], "ref_model": lms["B"], "batch_invariant": True}
    params = _project(tmp_path, rms={"dpo": rm})
    got = {}
    for size in (2, 256):
        params["scale"] = {**params.get("scale", {}), "chunk_size": size}
        loads.clear()
        metrics, rows, _ = _run(tmp_path, params, "dpo")
        assert loads == [lms["A"], lms["B"]], f"chunk_size {size}: {loads}"
        got[size] = [(r["strategy"], r["question_id"], r["score_chosen"], r["score_rejected"]) for r in rows]
    assert got[2] == got[256] and len(got[2]) > 2 * 2, "more than one chunk of 2 pairs, the same scores"
    assert metrics["numerics"]["reward"] == "implicit (DPO)" and metrics["numerics"]["reference"] == lms["B"]
