"""Any Hugging Face causal LM (hub id or local folder, or a GGUF through `gguf_file`)."""
from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

from tasks.models.llm.backends import BACKENDS
from tasks.models.llm.base import Backend, Completion, GenParams, weights_hash
from tasks.models.llm.retry import BadRequestError

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


def local_weights(model: str, gguf_file: str | None) -> list[Path]:
    root = Path(model)
    if gguf_file:
        return [root / gguf_file] if (root / gguf_file).is_file() else []
    if root.is_dir():
        return sorted(p for p in root.iterdir() if p.name.endswith(WEIGHT_SUFFIXES))
    return []


@BACKENDS.register("transformers")
class TransformersBackend(Backend):
    name = "transformers"
    parallel_safe = False

    @classmethod
    def entry_problems(cls, entry: dict, key: str) -> list[str]:
        """A local model folder that is not there (a hub id is the loader's to resolve)."""
        from tasks.core.paths import looks_local

        model = str(entry.get("model", ""))
        if model and looks_local(model) and not Path(model).expanduser().exists():
            return [f"{key}.model: no such folder '{model}'; expected a hub id or a local model folder"]
        gguf = entry.get("gguf_file")
        if gguf and Path(model).is_dir() and not (Path(model) / gguf).is_file():
            return [f"{key}.gguf_file: no file '{gguf}' in '{model}'"]
        return []

    def __init__(self, model: str, gguf_file: str | None = None, trust_remote_code: bool = False,
                 device: str | None = None, revision: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model, self.gguf_file, self.revision = model, gguf_file, revision
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        kwargs = {"trust_remote_code": bool(trust_remote_code), "revision": revision}
        if gguf_file:
            kwargs["gguf_file"] = gguf_file
        self.tokenizer = AutoTokenizer.from_pretrained(model, **kwargs)
        self.lm = AutoModelForCausalLM.from_pretrained(model, dtype=dtype, **kwargs).to(self.device).eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._lock = threading.Lock()
        self._identity: str | None = None

    def identity(self) -> str:
        if self._identity is None:
            files = local_weights(self.model, self.gguf_file)
            if files:   # local weights: their content is the identity, not the folder name
                hashes = [weights_hash(p) for p in files]
                h = hashes[0] if len(files) == 1 else hashlib.sha256(
                    "".join(f"{p.name}:{x}" for p, x in zip(files, hashes)).encode()).hexdigest()
                self._identity = f"transformers:{self.gguf_file or Path(self.model).name}@sha256:{h}"
            else:       # a hub id: the resolved commit pins the weights
                commit = getattr(self.lm.config, "_commit_hash", None) or self.revision or "unpinned"
                self._identity = f"transformers:{self.model}@{commit}"
        return self._identity

    def _prompt_ids(self, messages: list[dict]):
        enc = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                 return_tensors="pt", return_dict=True)
        return {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}

    def generate(self, messages: list[dict], params: GenParams, sample_index: int) -> Completion:
        import torch

        start = time.perf_counter()
        inputs = self._prompt_ids(messages)
        n_in = inputs["input_ids"].shape[1]
        limit = getattr(self.lm.config, "max_position_embeddings", None)
        if limit and n_in >= limit:
            raise BadRequestError(f"transformers: prompt of {n_in} tokens does not fit {limit} positions")
        sample = params.temperature > 0
        extra = {"temperature": params.temperature, "top_p": params.top_p, "top_k": None} if sample else {}
        with self._lock, torch.no_grad():
            torch.manual_seed(params.seed + sample_index)
            out = self.lm.generate(**inputs, max_new_tokens=params.max_tokens, do_sample=sample,
                                   pad_token_id=self.tokenizer.pad_token_id, **extra)
        new = out[0, n_in:].tolist()
        eos = self.lm.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos]) | {self.tokenizer.eos_token_id}
        stopped = any(t in eos for t in new)
        return Completion(text=self.tokenizer.decode(new, skip_special_tokens=True).strip(),
                          tokens_in=n_in, tokens_out=len(new), latency_s=time.perf_counter() - start,
                          finish_reason="stop" if stopped or len(new) < params.max_tokens else "length")

    def choice_logprobs(self, messages: list[dict], choices: list[str]) -> dict[str, float]:
        import torch

        inputs = self._prompt_ids(messages)
        firsts = {c: self.tokenizer.encode(c, add_special_tokens=False)[0] for c in choices}
        with self._lock, torch.no_grad():
            logits = self.lm(**inputs).logits[0, -1].float()
        logp = torch.log_softmax(logits, dim=-1)
        return {c: float(logp[t]) for c, t in firsts.items()}
