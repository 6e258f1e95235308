"""Plots written atomically with fixed metadata, so reruns give the same bytes."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def save(fig, path: str | Path) -> Path:
    from tasks.core.artifacts import atomic_path

    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    finally:
        plt.close(fig)
    return Path(path)


def profile_sizes(sizes_by_domain: dict[str, list[int]], path: str | Path) -> Path:
    """Posts per user, one box per domain: how much each user's history gives a model to read."""
    fig, ax = plt.subplots(figsize=(5, 3))
    names = sorted(sizes_by_domain)
    ax.boxplot([sizes_by_domain[n] for n in names], tick_labels=names)
    ax.set_ylabel("posts in profile")
    ax.set_title("Profile size per user")
    return save(fig, path)
