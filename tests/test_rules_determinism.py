"""Every random choice is drawn from common.seed through a generator named by what it draws for
(docs/determinism.md): the same seed and names give the same stream in every process, another seed or another
name another stream, and the names are kept apart (('ab', 'c') is not ('a', 'bc')). Checked against the rule
written plainly: numpy's generator seeded by [seed, the first 8 bytes of sha256(names joined by \\x1f)]."""
from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np

from tasks.core.determinism import stable_rng


def _plain(seed: int, *names: str) -> np.random.Generator:
    digest = hashlib.sha256("\x1f".join(names).encode("utf-8")).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def _draw(rng) -> list[int]:
    return rng.integers(0, 2 ** 31, size=4).tolist()


def test_a_named_stream_is_the_documented_one():
    for seed, names in ((1, ("rm-a", "none", "micro")), (2604, ("correlation", "bootstrap")), (0, ())):
        assert _draw(stable_rng(seed, *names)) == _draw(_plain(seed, *names)), (seed, names)


def test_another_seed_or_another_split_of_the_names_is_another_stream():
    base = _draw(stable_rng(1, "ab", "c"))
    assert base != _draw(stable_rng(2, "ab", "c")), "common.seed counts"
    assert base != _draw(stable_rng(1, "a", "bc")), "names are kept apart"
    assert base != _draw(stable_rng(1, "c", "ab")), "their order counts"


def test_the_same_stream_in_a_fresh_process():
    code = "from tasks.core.determinism import stable_rng; print(stable_rng(7, 'rm', 'none').integers(0, 2**31, 4).tolist())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(_draw(stable_rng(7, "rm", "none")))
