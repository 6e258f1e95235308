"""Is a local folder a model transformers can load as a reward model? Told from its files and the packages
installed, before anything loads: a folder that is not one is one line naming it and what it lacks, instead of
a traceback from the tokenizer conversion minutes into a run. A hub id is left to the loader (its errors are
one line too: tasks/models/rms/seq_cls.py)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

EXPECTS = ("expected a hub id, or a folder with config.json, weights (*.safetensors / *.bin) and a tokenizer, as "
           "`hf download ID --local-dir DIR` writes")
WEIGHTS = ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json")
SENTENCEPIECE = ("tokenizer.model", "spiece.model", "sentencepiece.bpe.model")   # what transformers converts with it
from tasks.core.paths import looks_local  # noqa: F401 - where callers of this module found it


def problem(model) -> str | None:
    """What keeps `model` (a params entry's `model`, or --model) from loading, or None (fine, or a hub id)."""
    if not isinstance(model, str) or not model:
        return None
    path = Path(model).expanduser()
    if not path.exists():
        return f"no such folder '{model}'; {EXPECTS}" if looks_local(model) else None
    if not path.is_dir():
        return f"'{model}' is a file, not a model folder; {EXPECTS}"
    lacks = _lacks(path)
    return f"'{model}' is not a model folder: {lacks}; {EXPECTS}" if lacks else None


def _lacks(path: Path) -> str | None:
    config = path / "config.json"
    if not config.is_file():
        return "no config.json"
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"config.json is not JSON ({' '.join(str(exc).split())[:120]})"
    if not any(next(path.glob(pattern), None) for pattern in WEIGHTS):
        return "no weights (no *.safetensors or *.bin file)"
    return _tokenizer_lacks(path)


def _tokenizer_lacks(path: Path) -> str | None:
    """The tokenizer: tokenizer.json loads as it is; a SentencePiece or tiktoken file needs its package to be
    converted; vocab.txt (WordPiece) or vocab.json + merges.txt (BPE) convert with `tokenizers` alone."""
    has = lambda name: (path / name).is_file()  # noqa: E731
    if has("tokenizer.json"):
        return None
    spm = next((name for name in SENTENCEPIECE if has(name)), None)
    if spm:
        return _package(spm, "a SentencePiece model", "sentencepiece")
    tiktoken = next((f.name for f in path.glob("*.tiktoken")), None) or ("tiktoken.model" if has("tiktoken.model") else None)
    if tiktoken:
        return _package(tiktoken, "a tiktoken vocabulary", "tiktoken")
    if has("vocab.txt") or (has("vocab.json") and has("merges.txt")):
        return None
    return "no tokenizer (tokenizer.json, tokenizer.model, vocab.txt, or vocab.json with merges.txt)"


def installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def _package(file: str, what: str, package: str) -> str | None:
    if installed(package):
        return None
    return (f"its tokenizer is {what} ({file}) and the optional package {package} is not installed "
            f"(pip install {package})")
