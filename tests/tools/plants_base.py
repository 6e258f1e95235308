"""One plant: a one-line edit of product code (file, the text it replaces, what it writes instead), the fast tests
that must fail under it, and the wrong rule it stands for (tests/tools/plant_rules.py applies them one at a time)."""
from __future__ import annotations


def P(rule: str, file: str, old: str, new: str, tests: list[str] | str, why: str) -> dict:
    return {"rule": rule, "file": file, "old": old, "new": new, "tests": [tests] if isinstance(tests, str) else tests,
            "why": why}
