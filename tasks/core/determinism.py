"""Everything that makes a rerun give the same bytes: seeded generators named by what they draw
for, a fixed torch thread count, deterministic kernels while training, and saved model folders
scrubbed of the paths they were loaded from."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

import numpy as np

THREADS_ENV = "PRBENCH_TORCH_THREADS"
# A decision that counts (a bootstrap or permutation p, a tie, a rank) compares values rounded to this many
# decimals, never their last bits: two statistics equal in exact arithmetic come out a few ulps apart, in an
# order that depends on the kernels (docs/determinism.md#the-rounding-rule-for-decisions)
DECISION_DECIMALS = 12


def stable_rng(seed: int, *names: str) -> np.random.Generator:
    """Seeded by common.seed and the names only, so adding an RM (or a domain, a line) leaves
    every other draw unchanged."""
    digest = hashlib.sha256("\x1f".join(names).encode("utf-8")).digest()
    return np.random.default_rng([int(seed), int.from_bytes(digest[:8], "little")])


def settled(x):
    """x (a number or an array) rounded to DECISION_DECIMALS decimals, -0.0 made 0.0: what a decision
    compares. Round a difference, not its two sides, where a tie decides: equal statistics then differ by
    a few ulps, far below the last decimal kept, so their difference is 0 whatever the kernels."""
    return np.round(x, DECISION_DECIMALS) + 0.0


def fix_threads(n: int | None = None) -> int:
    """One torch thread count for the whole stage (params common.torch_threads, set by the stage
    process): reductions split across a different number of threads round differently."""
    import torch

    n = int(n or os.environ.get(THREADS_ENV) or 2)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


@contextlib.contextmanager
def deterministic(seed: int):
    """Seeded and deterministic kernels for a training run, restored afterwards (tests share the process)."""
    import torch
    from transformers import set_seed

    before = torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")   # what deterministic cuBLAS needs
    fix_threads()
    set_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)   # an op without a deterministic kernel warns
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = before[1], before[2]


# What save_pretrained records of how the model was loaded, not what it is: the path it came from, and
# `local_files_only`, which transformers sets from HF_HUB_OFFLINE (so `make run` and a run with the
# hub switched off wrote different tokenizer configs for the same weights).
PATH_KEYS = ("_name_or_path", "name_or_path", "local_files_only")


def scrub_saved(folder: str | Path) -> None:
    """save_pretrained records where and how the model was loaded (a site-packages or checkout path, the
    hub switched off): drop it from every saved JSON so the folder's bytes depend on neither."""
    for f in sorted(Path(folder).glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        if isinstance(data, dict) and any(k in data for k in PATH_KEYS):
            for k in PATH_KEYS:
                data.pop(k, None)
            f.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
