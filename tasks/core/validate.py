"""Row checks for LaMP-QA-shaped data, shared by the ingest stage and `prbench validate`."""
from __future__ import annotations

import re

BAD_BYTES = re.compile(r"[\udc80-\udcff]")   # bytes that were not UTF-8 (kept by surrogateescape)
PAIR_FIELDS = ("chosen", "rejected")


def _string(value, field, problems, *, required=True, nonempty=False):
    if value is None:
        if required:
            problems.append((field, "missing"))
        return
    if not isinstance(value, str):
        problems.append((field, f"expected a string, got {type(value).__name__}"))
    elif BAD_BYTES.search(value):
        problems.append((field, "invalid UTF-8 bytes"))
    elif nonempty and not value.strip():
        problems.append((field, "empty"))


def _objects(value, field, keys, problems, *, what):
    if value is None:
        problems.append((field, "missing"))
        return
    if not isinstance(value, (list, tuple)):
        problems.append((field, f"expected a list of {what}, got {type(value).__name__}"))
        return
    if not value:
        problems.append((field, "empty list"))
    # one line per list: the first bad item, and how many more share a problem
    bad = []
    for i, item in enumerate(value):
        item_problems = []
        if not isinstance(item, dict):
            item_problems.append((f"{field}[{i}]", f"expected an object with {', '.join(keys)}, "
                                                   f"got {type(item).__name__}"))
        else:
            for key in keys:
                _string(item.get(key), f"{field}[{i}].{key}", item_problems, nonempty=key in ("text", "aspect"))
        if item_problems:
            bad.append(item_problems[0])
    if bad:
        more = f" (and {len(bad) - 1} more items with problems)" if len(bad) > 1 else ""
        problems.append((bad[0][0], bad[0][1] + more))


def row_problems(row, *, with_pairs: bool, prompts_only: bool = False) -> list[tuple[str, str]]:
    """Every (field, message) wrong with one row; empty when the row is good. prompts_only: a row read for
    its question and profile alone (RL prompts), whose narrative and rubric are dropped unread."""
    if not isinstance(row, dict):
        return [("", f"expected a JSON object per row, got {type(row).__name__}")]
    problems: list[tuple[str, str]] = []
    _string(row.get("id"), "id", problems, nonempty=True)
    _string(row.get("question"), "question", problems, nonempty=True)
    if not prompts_only:
        _string(row.get("narrative"), "narrative", problems)
    _string(row.get("category"), "category", problems)
    _objects(row.get("profile"), "profile", ("category", "id", "text"), problems, what="posts")
    if not prompts_only:
        _objects(row.get("rubric_aspects"), "rubric_aspects", ("aspect", "evidence", "reason"), problems,
                 what="aspect objects")
    if with_pairs:
        for field in PAIR_FIELDS:
            _string(row.get(field), field, problems, nonempty=True)
    return problems


def has_pairs(row) -> bool:
    return isinstance(row, dict) and all(f in row for f in PAIR_FIELDS)
