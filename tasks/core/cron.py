"""A cron expression checked before any work (releases.reproduce_cron, releases.watch_cron, `prbench serve
--cron/--watch-cron`): Prefect refuses a bad one only when serve registers its deployments, after the server
started. Five fields (minute hour day-of-month month day-of-week), each `*`, a number or name in range, a
range `a-b`, a step `/n`, or a comma list of those; Prefect's random and hashed forms (R, H) are refused too."""
from __future__ import annotations

import re

FIELDS = (("minute", 0, 59, ()), ("hour", 0, 23, ()), ("day of month", 1, 31, ()),
          ("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
          ("day of week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")))
ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def problem(text) -> str | None:
    """Why `text` is no cron expression, or None."""
    if not isinstance(text, str) or text.strip().lower() in ALIASES:
        return None if isinstance(text, str) else f"{text!r} is not a cron expression"
    parts = text.split()
    if len(parts) != 5:
        return f"'{text}' is not a cron expression: 5 fields (minute hour day-of-month month day-of-week), e.g. 0 3 * * *"
    for part, (name, lo, hi, names) in zip(parts, FIELDS):
        for item in part.lower().split(","):
            m = re.fullmatch(r"(\*|\w+(?:-\w+)?)(?:/(\d+))?", item)
            bounds = [] if not m or m.group(1) == "*" else m.group(1).split("-")
            values = [names.index(b) + (lo if name == "month" else 0) if b in names else int(b) if b.isdigit() else None
                      for b in bounds]
            if not m or None in values or any(not lo <= v <= hi for v in values) or m.group(2) == "0":
                return f"'{text}': '{item}' is not a {name} ({lo}-{hi}{', or a name' if names else ''})"
    return None
