"""Plots read back: what a figure shows (lines, bars, points, heatmap cells, texts), taken from the
figure just before tasks.core.plots.save writes it, so a test checks the data behind a plot, not its PNG."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


def figure_data(fig) -> list[dict]:
    """One dict per axes with data: title, labels, tick labels, the labelled lines (label -> x, y), every
    line's (x, y) in drawing order (`series`, error-bar caps included),
    the bar groups (label -> heights, or widths of horizontal bars), scatter points, images, texts."""
    from matplotlib.collections import PathCollection
    from matplotlib.container import BarContainer

    out = []
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        bars = {}   # label -> [(centre on the category axis, value)]
        for c in ax.containers:
            if isinstance(c, BarContainer):
                centre = ((lambda r: r.get_x() + r.get_width() / 2) if c.orientation == "vertical"
                          else (lambda r: r.get_y() + r.get_height() / 2))
                bars[c.get_label()] = [(float(centre(r)), float(v)) for r, v in zip(c.patches, c.datavalues)]
        out.append({
            "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "xticks": {float(t.get_position()[0]): t.get_text() for t in ax.get_xticklabels()},
            "yticks": {float(t.get_position()[1]): t.get_text() for t in ax.get_yticklabels()},
            "lines": {ln.get_label(): ([float(x) for x in ln.get_xdata()], [float(y) for y in ln.get_ydata()])
                      for ln in ax.lines if not ln.get_label().startswith("_")},
            "series": [([float(x) for x in ln.get_xdata()], [float(y) for y in ln.get_ydata()]) for ln in ax.lines],
            "bars": bars,
            "points": [[float(v) for v in xy] for c in ax.collections if isinstance(c, PathCollection)
                       for xy in c.get_offsets()],
            "images": [np.ma.filled(np.ma.asarray(im.get_array(), dtype=float), np.nan) for im in ax.images],
            "texts": [t.get_text() for t in ax.texts],
        })
    return out


def bars_by_tick(ax: dict, label: str, axis: str = "x") -> dict[str, float]:
    """{tick label: bar value} of one bar group: each bar under its nearest category tick."""
    ticks = ax[f"{axis}ticks"]
    return {ticks[min(ticks, key=lambda t: abs(t - pos))]: value for pos, value in ax["bars"][label]}


@pytest.fixture
def figures(monkeypatch):
    """{file name: figure_data} of every plot saved while the test runs (tasks.core.plots.save still writes it)."""
    import tasks.core.plots

    seen, real = {}, tasks.core.plots.save

    def save(fig, path):
        seen[Path(path).name] = figure_data(fig)
        return real(fig, path)
    monkeypatch.setattr(tasks.core.plots, "save", save)
    return seen
