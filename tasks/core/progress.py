"""The one progress bar of prbench: tqdm on stderr for every loop that can take more than a few seconds
(scoring chunks, list-wise benchmarks, LLM calls, the judge, BoN, RL updates), quiet when stderr is not
a terminal (a log file, CI, a pipe), so logs hold results, not redraws. A bar never changes a result."""
from __future__ import annotations

import sys


def shown() -> bool:
    """Whether bars draw here: stderr is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):   # replaced or closed stderr
        return False


def bar(iterable=None, *, desc: str | None, total: int | None = None, unit: str = "it", initial: int = 0):
    """A tqdm bar (iterate it, or use it as a context manager and `.update(n)`), drawn only on a terminal;
    it clears itself when done, so the stage's own summary line is what stays."""
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, unit=unit, initial=initial, leave=False, file=sys.stderr,
                dynamic_ncols=True, disable=not shown() or desc is None)
