"""Tiny random causal LMs for the `dpo` kind's tests: a 2-layer Llama over a byte-level BPE tokenizer trained on the
bundled sample's text (so sample questions and answers are real subword tokens, with merges across a template's
spaces), with a ChatML-style chat template. Saved to a folder, as `hf download` would leave one; a second model
built `like` the first shares its tokenizer files, as a DPO policy shares its reference's."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import SAMPLE

# a space (not a newline) before each turn's content: the content's first word merges with it, as in GPT-2 BPE
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }} {{ m['content'] }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant {% endif %}")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")


def _corpus() -> list[str]:
    texts = []
    for path in sorted((SAMPLE / "pairs").glob("*.json")) + sorted((SAMPLE / "lamp_qa").glob("*_test.json")):
        for row in json.loads(path.read_text()):
            texts += [row.get(k) for k in ("question", "chosen", "rejected", "narrative") if isinstance(row.get(k), str)]
            texts += [p["text"] for p in row.get("profile") or []]
    return texts


def _tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(_corpus(), trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                            show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  model_max_length=4096)
    tok.chat_template = TEMPLATE
    return tok


def tiny_causal_lm(dst: Path, *, seed: int = 0, like: Path | None = None, vocab_size: int = 600,
                   max_positions: int = 4096, template: str | None = TEMPLATE) -> Path:
    """A random LlamaForCausalLM (hidden 32, 2 layers) seeded by `seed`, with its tokenizer (`like`'s files, or one
    trained here with `vocab_size` tokens) and `template` as its chat template (None: none), saved to `dst`."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    if like is not None:
        for name in TOKENIZER_FILES:
            if (Path(like) / name).is_file():
                shutil.copy2(Path(like) / name, dst / name)
        tok = AutoTokenizer.from_pretrained(dst)
    else:
        tok = _tokenizer(vocab_size)
    tok.chat_template = template
    tok.save_pretrained(dst)
    if template is None:
        (dst / "chat_template.jinja").unlink(missing_ok=True)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=max_positions,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None)
    model = LlamaForCausalLM(config)
    with torch.no_grad():   # a wider spread than the init's 0.02, so answers' log-probs differ visibly
        for p in model.parameters():
            p.mul_(8.0) if p.dim() > 1 else None
    model.save_pretrained(dst)
    return dst
