"""Classifier reward models: any AutoModelForSequenceClassification (`seq-cls`), the RM the
train_rm stage trains (`bradley-terry`), and InternLM2-style RMs that score via `get_scores`. What they
see, and how an input over max_length is cut, is tasks/models/rms/encode.py."""
from __future__ import annotations

import ctypes
import inspect
from pathlib import Path
from typing import Literal

from tasks.core import layout
from tasks.core.errors import ConfigError
from tasks.core.registry import at_least
from tasks.models.rms.base import AnswerScore, RewardModel
from tasks.core.fidelity import pick
from tasks.models.rms import invariant
from tasks.models.rms.encode import Encoded, encode_many, encode_release
from tasks.models.rms.registry import register

DTYPES = ("auto", "float32", "bfloat16", "float16")
WINDOW = 2048   # answers encoded and length-sorted at a time
DEFAULT_INVARIANT = False   # `batch_invariant` when an entry does not say (its cost: benchmarks/scoring_throughput.py)


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


def score_in_windows(items, encode, forward, batch_size: int, plan=None) -> list[AnswerScore]:
    """Encode WINDOW answers at a time, run them in length-sorted batches (or, with `plan`, the batch-invariant
    micro-batches it gives: tasks/models/rms/invariant.py), return scores in input order. Memory stays bounded
    however many answers a caller passes at once."""
    out = []
    for start in range(0, len(items), WINDOW):
        encs = encode(items[start:start + WINDOW])
        scores = [0.0] * len(encs)
        lengths = [len(e.ids) for e in encs]
        batches = plan(lengths) if plan else [(b, None, None) for b in length_batches(lengths, batch_size)]
        for batch, n_rows, width in batches:
            shape = {"rows": n_rows, "width": width} if plan else {}
            for i, s in zip(batch, forward([encs[i] for i in batch], **shape)):
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


def _load_errors() -> tuple[type[BaseException], ...]:
    """What from_pretrained raises for a model that is not loadable (the safetensors reader has its own type)."""
    from safetensors import SafetensorError

    return OSError, ImportError, KeyError, RuntimeError, EOFError, SafetensorError


class _HFRewardModel(RewardModel):
    OPTIONS = {"model": str, "revision": str | None, "dtype": Literal[DTYPES], "max_length": at_least(1) | None,
               "batch_size": at_least(1), "trust_remote_code": bool, "batch_invariant": bool}
    PLAN = staticmethod(invariant.plan)   # the batch-invariant micro-batches this kind's forward can run

    def __init__(self, name, entry):
        super().__init__(name, entry)
        self.model_id = str(self.default_model() if entry.get("model") is None else entry["model"])
        self.revision = entry.get("revision")
        self.trust = bool(entry.get("trust_remote_code", False))   # never True unless the entry says so
        self.batch_size = int(entry.get("batch_size", 16))
        self.device, self.dtype = _device_dtype(entry.get("dtype", "auto"), name)
        self.invariant = bool(entry.get("batch_invariant", DEFAULT_INVARIANT))

    def default_model(self):
        raise ConfigError(f"scoring.rms.{self.name}.model: required for kind '{self.kind}'")

    @classmethod
    def entry_problems(cls, entry, key):
        from tasks.models.rms.model_folder import problem

        why = problem(entry.get("model"))
        return [f"{key}.model: {why}"] if why else []

    def _load(self, loader, key: str = "model", source: tuple[str, str | None] | None = None, **kwargs):
        """from_pretrained of the entry's model, or of another model option `key` (dpo's ref_model) given as `source`
        (id, revision), with the entry's trust; a folder that is not a model, a load that fails and remote-code
        refusals are one ConfigError naming that option and its model, never a traceback."""
        from tasks.models.rms.model_folder import problem

        model_id, revision = source or (self.model_id, self.revision)
        why = type(self).entry_problems({"model": model_id, "trust_remote_code": self.trust},
                                        f"scoring.rms.{self.name}") if key == "model" else \
            [f"scoring.rms.{self.name}.{key}: {w}" for w in [problem(model_id)] if w]
        if why:
            raise ConfigError(why[0])
        if not self.trust:
            from transformers import PretrainedConfig

            try:
                config = PretrainedConfig.get_config_dict(model_id, revision=revision)[0]
            except (OSError, ValueError) as exc:
                raise self._cannot_load(exc, key, model_id) from None
            if config.get("auto_map"):
                raise _untrusted(self.name, model_id)
        try:
            return loader.from_pretrained(model_id, revision=revision, trust_remote_code=self.trust, **kwargs)
        except ValueError as exc:
            if "trust_remote_code" in str(exc):
                raise _untrusted(self.name, model_id) from None
            raise self._cannot_load(exc, key, model_id) from None
        except _load_errors() as exc:   # missing or corrupt files, an optional package, an unknown model type
            raise self._cannot_load(exc, key, model_id) from None

    def _cannot_load(self, exc: Exception, key: str, model_id: str) -> ConfigError:
        from tasks.models.rms.model_folder import EXPECTS

        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
        return ConfigError(f"scoring.rms.{self.name}.{key}: cannot load '{model_id}': {type(exc).__name__}: "
                           f"{first[:300]}; {EXPECTS}")

    def _max_length(self, tok, config) -> int:
        limits = [tok.model_max_length, getattr(config, "max_position_embeddings", None) or 4096, 4096]
        return int(self.entry.get("max_length") or min(limits))

    def identity(self) -> str:
        # the weights loaded, hashed once (at load): they are hundreds of MB and every score row records this
        if getattr(self, "_identity", None) is None:
            self._identity = f"{self.kind}:{self.model_id}@{self.revision or 'default'}:{_weights_hash(self.model_id)}"
        return self._identity

    def score_answers(self, items):
        # common.fidelity: prbench's input | the release's (chat template as text, then the tokenizer), encode.py
        encode = pick({"corrected": encode_many, "release": encode_release}, self.fidelity)
        plan = (lambda lengths: self.PLAN(lengths, self.device)) if self.invariant else None
        return score_in_windows(items, lambda xs: encode(self.tok, xs, self.max_length, self.template),
                                self._forward, self.batch_size, plan)

    def numerics(self) -> dict:
        attn = getattr(getattr(self.model, "config", None), "_attn_implementation", None)
        return {"dtype": str(self.dtype).removeprefix("torch."), "device": invariant.device_kind(self.device),
                "attn_implementation": attn or "default", "batch_invariant": self.invariant}


@register
class SeqClsRM(_HFRewardModel):
    kind = "seq-cls"
    OPTIONS = {**_HFRewardModel.OPTIONS, "chat_template": str | None, "attn_implementation": str | None}
    REQUIRED = ("model",)

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
            self.batch_size, self.PLAN = 1, invariant.one_each   # nothing to pad with
        self.pad_id = cfg.pad_token_id or 0
        # left padding shifts absolute positions (BERT) unless they are passed explicitly
        takes_positions = "position_ids" in inspect.signature(self.model.forward).parameters
        self.left_pad = self.tok.padding_side == "left" and takes_positions
        self.identity()

    def _forward(self, encs: list[Encoded], rows: int | None = None, width: int | None = None) -> list[float]:
        """Scores of `encs`, padded to `width` (default: the longest) and to `rows` rows with fillers (copies of
        the first answer, dropped): a batch-invariant micro-batch has the shape its bucket fixes."""
        import torch

        n = len(encs)
        width = width or max(len(e.ids) for e in encs)
        encs = encs + encs[:1] * ((rows or n) - n)

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
        return scores[:n].cpu().tolist()


@register
class BradleyTerryRM(SeqClsRM):
    """The train_rm stage's model (a seq-cls head trained on the train split's pairs)."""
    kind = "bradley-terry"
    REQUIRED = ()   # its model is the train_rm stage's folder unless the entry names one

    def default_model(self):
        return layout.TRAIN_RM["model"]

    @classmethod
    def entry_problems(cls, entry, key):
        return []   # its model is the train_rm stage's output: not there before the run (checked when built)

    def __init__(self, name, entry):
        model = entry.get("model") or self.default_model()
        if not (Path(model) / "config.json").is_file():   # missing, or train_rm.splits: [] left a note only
            raise ConfigError(f"scoring.rms.{name}: no trained model at '{model}'; run the train_rm stage first "
                              "(dvc repro train_rm, or python -m flows.stage train_rm) with train_rm.splits set")
        super().__init__(name, entry)


@register
class InternLM2RewardRM(_HFRewardModel):
    """InternLM2-reward family: AutoModel with the repo's own code, scored by its documented
    `model.get_scores(tokenizer, chats)`. Remote code is required, so the entry must opt in."""
    kind = "internlm2-reward"
    PLAN = staticmethod(invariant.one_each)   # get_scores pads by itself: one answer per call is a fixed shape
    REQUIRED = ("model",)

    @classmethod
    def entry_problems(cls, entry, key):
        if entry.get("trust_remote_code") is not True:   # its get_scores is the model's own code: never by default
            return [f"{key}.trust_remote_code: kind '{cls.kind}' runs the model's own Python code (get_scores): set "
                    "`trust_remote_code: true` in this entry if you trust that code"]
        return super().entry_problems(entry, key)

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

    def _forward(self, encs: list[Encoded], rows: int | None = None, width: int | None = None) -> list[float]:
        import torch

        with torch.inference_mode():
            out = self.model.get_scores(self.tok, [self.conversation(e) for e in encs])
        return [float(s[0] if isinstance(s, list) else s) for s in (out if isinstance(out, list) else [out])]
