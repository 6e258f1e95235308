"""How numbers read on the page: one place, so the run page and the compare page agree."""
from __future__ import annotations

DASH = "–"


def pct(x, digits: int = 1) -> str:
    """An accuracy in [0, 1] as a percentage: 0.9167 -> 91.7%."""
    return DASH if x is None else f"{100 * x:.{digits}f}%"


ZERO_WIDTH = "zero width: every resample gave the same value"


def zero_width_reason(n=None, value=None) -> str:
    """Why an interval has no width: for an accuracy, its n and that every pair went one way."""
    if n is not None and value in (0, 1):
        return f"n = {n}, all {'correct' if value == 1 else 'wrong'}"
    return f"n = {n}; {ZERO_WIDTH}" if n is not None else ZERO_WIDTH


def ci_pct(lo, hi, digits: int = 1, n=None, value=None) -> str:
    """A percentage CI; one of zero width says why (a [100, 100] is not certainty)."""
    if lo is None or hi is None:
        return ""
    text = f"[{100 * lo:.{digits}f}, {100 * hi:.{digits}f}]"
    return f"{text} ({zero_width_reason(n, value)})" if lo == hi else text


def num(x, digits: int = 3) -> str:
    if x is None:
        return DASH
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def ci(lo, hi, digits: int = 3, n=None) -> str:
    if lo is None or hi is None:
        return ""
    text = f"[{lo:.{digits}f}, {hi:.{digits}f}]"
    return f"{text} ({zero_width_reason(n)})" if lo == hi else text


def p_value(p) -> str:
    return DASH if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"


def signed(x, digits: int = 3, percent: bool = False) -> str:
    if x is None:
        return DASH
    return f"{100 * x:+.{digits}f} pp" if percent else f"{x:+.{digits}f}"


def value(x) -> str:
    """Any flag or count a stage adds (leaderboard extras): booleans as yes/no, lists comma-joined."""
    if isinstance(x, (list, tuple)):
        return ", ".join(value(v) for v in x) if x else DASH
    return num(x, 4) if isinstance(x, float) else num(x)


def sort_key(x):
    """What the in-page sort compares (data-v): numbers as numbers, everything else as text."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, (int, float)):
        return x
    if isinstance(x, (list, tuple)):
        return ", ".join(map(str, x))
    return str(x)
