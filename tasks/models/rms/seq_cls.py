"""Classifier reward models: any AutoModelForSequenceClassification (`seq-cls`), the RM the
train_rm stage trains (`bradley-terry`), and InternLM2-style RMs that score via `get_scores`.

`encode_answer` / `encode_many` build what such a model sees; train_rm uses the same functions,
so training and scoring inputs are identical. Over max_length, tokens are dropped in this order:
the context's lowest-ranked whole posts (a raw profile lists "[n] (...)" posts best first, so the
best ones stay), then the end of the last post left (or of a context without posts), then the
question from its left end, and only when the answer alone does not fit, the answer's end. Any
cut marks the input truncated. Answers to the same question under the same context (chosen and
rejected of a pair, a question's BoN candidates) are all cut to the shortest context any of them
needs, so they are scored against the same profile."""
from __future__ import annotations

import ctypes
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tasks.core import layout
from tasks.core.errors import ConfigError
from tasks.models.rms.base import AnswerScore, RewardModel, input_hash, user_message
from tasks.models.rms.registry import register

DTYPES = ("auto", "float32", "bfloat16", "float16")
WINDOW = 2048   # answers encoded and length-sorted at a time


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    token_types: list[int] | None   # segment ids when the tokenizer makes them (BERT text pairs)
    truncated: bool
    user: str                       # the (possibly cut) user turn and answer the ids came from
    answer: str

    def hash(self) -> str:
        return input_hash(" ".join(map(str, self.ids)), " ".join(map(str, self.token_types or [])))


def _tokenize(tok, users: list[str], answers: list[str], template: str | None) -> list[tuple]:
    if template:   # chat models: the template over a user turn and the answer as assistant turn
        texts = [tok.apply_chat_template([{"role": "user", "content": u}, {"role": "assistant", "content": a}],
                                         chat_template=template, tokenize=False) for u, a in zip(users, answers)]
        enc = tok(texts, add_special_tokens=False)   # the template already has BOS/EOS
    else:          # BERT-style: a text pair, [CLS] user [SEP] answer [SEP]
        enc = tok(users, answers)
    types = enc.get("token_type_ids") or [None] * len(users)
    return list(zip(enc["input_ids"], types))


def _cut(tok, text: str, n: int, side: str) -> str:
    """`text` less about n tokens from one side, cut at a token boundary."""
    offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    if n >= len(offsets):
        return ""
    return text[offsets[n][0]:] if side == "left" else text[:offsets[len(offsets) - n - 1][1]]


POST = re.compile(r"^\[\d+\] ", re.M)   # a post line of tasks/stages/profiles.format_profile


def _shorter_context(tok, context: str, over: int) -> str:
    """A prefix of `context` at least ~`over` tokens shorter: whole posts off the end while more
    than one is left (the lowest-ranked first), else the end of the text."""
    starts = [m.start() for m in POST.finditer(context)]
    if len(starts) > 1:
        posts = [context[a:b] for a, b in zip(starts, starts[1:] + [len(context)])]
        sizes = [len(ids) for ids in tok(posts, add_special_tokens=False)["input_ids"]]
        keep, dropped = len(posts), 0
        while keep > 1 and dropped < over:
            keep -= 1
            dropped += sizes[keep]
        return context[:starts[keep]].rstrip("\n") if keep < len(posts) else context
    return _cut(tok, context, over, "right")


def _fit(tok, question: str, context: str, answer: str, max_length: int, template: str | None) -> tuple:
    """(Encoded, the context it kept): cut in the order of the module docstring until it fits."""
    cut = False
    while True:   # each pass drops >= 1 token, so it ends; re-tokenizing keeps ids exact
        user = user_message(question, context)
        ids, types = _tokenize(tok, [user], [answer], template)[0]
        over = len(ids) - max_length
        if over <= 0:
            return Encoded(ids, types, cut, user, answer), context
        if not answer:
            raise ConfigError(f"max_length {max_length} is shorter than the input's fixed tokens")
        cut = True
        if context:
            shorter = _shorter_context(tok, context, over)
            context = shorter if len(shorter) < len(context) else ""
        elif question:
            question = _cut(tok, question, over, "left")
        else:
            answer = _cut(tok, answer, over, "right")


def encode_answer(tok, question: str, context: str, answer: str, max_length: int,
                  template: str | None = None) -> Encoded:
    return _fit(tok, question, context, answer, max_length, template)[0]


def encode_many(tok, items: list[tuple[str, str, str]], max_length: int, template: str | None = None) -> list[Encoded]:
    """encode_answer for many (question, context, answer); one batched tokenizer call for those
    that fit. Items sharing (question, context) share the shortest context any of them needs."""
    users = [user_message(q, c) for q, c, _ in items]
    tok.deprecation_warnings["sequence-length-is-longer-than-the-specified-maximum"] = True   # we fit them below
    first = _tokenize(tok, users, [a for _, _, a in items], template) if items else []
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (q, c, _) in enumerate(items):
        groups.setdefault((q, c or ""), []).append(i)
    out: list[Encoded | None] = [Encoded(ids, types, False, u, it[2]) if len(ids) <= max_length else None
                                 for (ids, types), u, it in zip(first, users, items)]
    for (question, context), members in groups.items():
        if all(out[i] is not None for i in members):
            continue
        fitted = {i: _fit(tok, question, context, items[i][2], max_length, template) for i in members if out[i] is None}
        shared = min((kept for _, kept in fitted.values()), key=len)   # every kept context is a prefix
        for i in members:
            if i in fitted and fitted[i][1] == shared:
                out[i] = fitted[i][0]
            elif shared != context:   # fits with more context on its own: cut to the shared one
                enc = _fit(tok, question, shared, items[i][2], max_length, template)[0]
                out[i] = Encoded(enc.ids, enc.token_types, True, enc.user, enc.answer)
    return out


def length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices grouped by similar length (little padding); callers put scores back by index."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def release_freed_memory() -> None:
    """glibc keeps freed activation buffers of ever-changing sizes in its heap, so RSS creeps up
    batch after batch (measured: +50% over 10x the pairs); hand them back to the OS."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc: nothing to do
        pass


def score_in_windows(items, encode, forward, batch_size: int) -> list[AnswerScore]:
    """Encode WINDOW answers at a time, run them in length-sorted batches, return scores in input
    order. Memory stays bounded however many answers a caller passes at once."""
    out = []
    for start in range(0, len(items), WINDOW):
        encs = encode(items[start:start + WINDOW])
        scores = [0.0] * len(encs)
        for batch in length_batches([len(e.ids) for e in encs], batch_size):
            for i, s in zip(batch, forward([encs[i] for i in batch])):
                scores[i] = s
            release_freed_memory()
        out += [AnswerScore(s, truncated=e.truncated, input_hash=e.hash()) for s, e in zip(scores, encs)]
    return out


def _device_dtype(dtype: str, name: str):
    import torch

    if dtype not in DTYPES:
        raise ConfigError(f"scoring.rms.{name}.dtype: unknown '{dtype}'; valid: {', '.join(DTYPES)}")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype == "auto":
        return device, torch.bfloat16 if device == "cuda" else torch.float32
    return device, getattr(torch, dtype)


def _untrusted(name: str, model: str) -> ConfigError:
    return ConfigError(f"scoring.rms.{name}: model '{model}' ships its own Python code; set "
                       f"`trust_remote_code: true` in this entry only if you trust that code")


def _weights_hash(model: str) -> str:
    from tasks.core.artifacts import tree_hash

    files = [f for ext in ("*.safetensors", "*.bin") for f in Path(model).glob(ext)] if Path(model).is_dir() else []
    return tree_hash(files)[:16] if files else "remote"


class _HFRewardModel(RewardModel):
    OPTIONS = {"model": str, "revision": str | None, "dtype": Literal[DTYPES], "max_length": int | None,
               "batch_size": int, "trust_remote_code": bool}

    def __init__(self, name, entry):
        super().__init__(name, entry)
        self.model_id = str(self.default_model() if entry.get("model") is None else entry["model"])
        self.revision = entry.get("revision")
        self.trust = bool(entry.get("trust_remote_code", False))   # never True unless the entry says so
        self.batch_size = int(entry.get("batch_size", 16))
        self.device, self.dtype = _device_dtype(entry.get("dtype", "auto"), name)

    def default_model(self):
        raise ConfigError(f"scoring.rms.{self.name}.model: required for kind '{self.kind}'")

    def _load(self, loader, **kwargs):
        """from_pretrained with this entry's revision and trust; remote-code refusals become one ConfigError."""
        if not self.trust:
            from transformers import PretrainedConfig

            try:
                config = PretrainedConfig.get_config_dict(self.model_id, revision=self.revision)[0]
            except (OSError, ValueError) as exc:
                raise ConfigError(f"scoring.rms.{self.name}.model: cannot load '{self.model_id}': {exc}") from None
            if config.get("auto_map"):
                raise _untrusted(self.name, self.model_id)
        try:
            return loader.from_pretrained(self.model_id, revision=self.revision, trust_remote_code=self.trust, **kwargs)
        except ValueError as exc:
            if "trust_remote_code" in str(exc):
                raise _untrusted(self.name, self.model_id) from None
            raise

    def _max_length(self, tok, config) -> int:
        limits = [tok.model_max_length, getattr(config, "max_position_embeddings", None) or 4096, 4096]
        return int(self.entry.get("max_length") or min(limits))

    def identity(self) -> str:
        # the weights loaded, hashed once (at load): they are hundreds of MB and every score row records this
        if getattr(self, "_identity", None) is None:
            self._identity = f"{self.kind}:{self.model_id}@{self.revision or 'default'}:{_weights_hash(self.model_id)}"
        return self._identity

    def score_answers(self, items):
        return score_in_windows(items, lambda xs: encode_many(self.tok, xs, self.max_length, self.template),
                                self._forward, self.batch_size)


@register
class SeqClsRM(_HFRewardModel):
    kind = "seq-cls"
    OPTIONS = {**_HFRewardModel.OPTIONS, "chat_template": str | None, "attn_implementation": str | None}

    def __init__(self, name, entry):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        super().__init__(name, entry)
        self.tok = self._load(AutoTokenizer)
        extra = {"attn_implementation": entry["attn_implementation"]} if entry.get("attn_implementation") else {}
        self.model = self._load(AutoModelForSequenceClassification, dtype=self.dtype, **extra).to(self.device).eval()
        self.template = entry.get("chat_template") or getattr(self.tok, "chat_template", None)
        self.max_length = self._max_length(self.tok, self.model.config)
        cfg = self.model.config
        if cfg.pad_token_id is None:   # decoder RMs pool at the last non-pad token, so they need one
            cfg.pad_token_id = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        if cfg.pad_token_id is None:
            self.batch_size = 1        # nothing to pad with
        self.pad_id = cfg.pad_token_id or 0
        # left padding shifts absolute positions (BERT) unless they are passed explicitly
        takes_positions = "position_ids" in inspect.signature(self.model.forward).parameters
        self.left_pad = self.tok.padding_side == "left" and takes_positions
        self.identity()

    def _forward(self, encs: list[Encoded]) -> list[float]:
        import torch

        width = max(len(e.ids) for e in encs)

        def pad(seq, value):
            fill = [value] * (width - len(seq))
            return fill + list(seq) if self.left_pad else list(seq) + fill

        batch = {"input_ids": [pad(e.ids, self.pad_id) for e in encs],
                 "attention_mask": [pad([1] * len(e.ids), 0) for e in encs]}
        if encs[0].token_types is not None:
            batch["token_type_ids"] = [pad(e.token_types, 0) for e in encs]
        batch = {k: torch.tensor(v, device=self.device) for k, v in batch.items()}
        if self.left_pad:
            batch["position_ids"] = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = self.model(**batch).logits.float()
        # one logit: the reward itself; several classes: the probability of the last ("good") one
        scores = logits[:, 0] if logits.shape[-1] == 1 else logits.softmax(-1)[:, -1]
        return scores.cpu().tolist()


@register
class BradleyTerryRM(SeqClsRM):
    """The train_rm stage's model (a seq-cls head trained on the train split's pairs)."""
    kind = "bradley-terry"

    def default_model(self):
        return layout.TRAIN_RM["model"]

    def __init__(self, name, entry):
        model = entry.get("model") or self.default_model()
        if not (Path(model) / "config.json").is_file():   # missing, or train_rm.splits: [] left a note only
            raise ConfigError(f"scoring.rms.{name}: no trained model at '{model}'; run the train_rm stage first "
                              "(dvc repro train_rm, or python -m flows.train_rm) with train_rm.splits set")
        super().__init__(name, entry)


@register
class InternLM2RewardRM(_HFRewardModel):
    """InternLM2-reward family: AutoModel with the repo's own code, scored by its documented
    `model.get_scores(tokenizer, chats)`. Remote code is required, so the entry must opt in."""
    kind = "internlm2-reward"

    def __init__(self, name, entry):
        from transformers import AutoModel, AutoTokenizer

        super().__init__(name, entry)
        if not self.trust:
            raise _untrusted(name, self.model_id)
        self.tok = self._load(AutoTokenizer)
        self.model = self._load(AutoModel, dtype=self.dtype).to(self.device).eval()
        self.template = self.tok.chat_template
        self.max_length = self._max_length(self.tok, self.model.config) - 1   # get_scores appends a reward token
        self.identity()

    @staticmethod
    def conversation(enc: Encoded) -> list[dict]:
        return [{"role": "user", "content": enc.user}, {"role": "assistant", "content": enc.answer}]

    def _forward(self, encs: list[Encoded]) -> list[float]:
        import torch

        with torch.inference_mode():
            out = self.model.get_scores(self.tok, [self.conversation(e) for e in encs])
        return [float(s[0] if isinstance(s, list) else s) for s in (out if isinstance(out, list) else [out])]
