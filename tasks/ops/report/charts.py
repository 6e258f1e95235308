"""Inline SVG geometry for the page's charts: numbers from the stage outputs scaled to pixels
(nothing is computed about the data itself). The templates draw what these return."""
from __future__ import annotations

import math

# colour-blind-safe (Okabe-Ito + greys), assigned by sorted series name so a series keeps its colour
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000", "#7f7f7f",
           "#8c564b"]
W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 300, 56, 150, 14, 40


def _range(values: list[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if math.isclose(lo, hi):
        lo, hi = lo - 0.05, hi + 0.05
    pad = (hi - lo) * 0.06
    return lo - pad, hi + pad


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    step = (hi - lo) / (n - 1)
    return [lo + i * step for i in range(n)]


def _fmt(v: float) -> str:
    return f"{v:.1f}"


def _label(v: float) -> str:
    text = f"{v:.2f}"
    return "0.00" if text == "-0.00" else text


def colours(names: list[str]) -> dict[str, str]:
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(sorted(names))}


def line_chart(series: list[dict], xs: list, x_label: str, y_label: str) -> dict | None:
    """series: [{"name", "reference": bool, "points": [{"x", "y", "lo", "hi"}]}]; x placed by its index in
    xs (evenly spaced: k = 1, 2, 4, ... reads as a log2 axis). CI bands where lo/hi are known."""
    values = [v for s in series for p in s["points"] for v in (p["y"], p.get("lo"), p.get("hi")) if v is not None]
    if not values or not xs:
        return None
    lo, hi = _range(values)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    sx = lambda x: LEFT + (xs.index(x) / max(1, len(xs) - 1)) * pw if len(xs) > 1 else LEFT + pw / 2  # noqa: E731
    sy = lambda y: TOP + (hi - y) / (hi - lo) * ph  # noqa: E731
    colour = colours([s["name"] for s in series])
    out = []
    for i, s in enumerate(sorted(series, key=lambda s: s["name"])):
        pts = [p for p in s["points"] if p["y"] is not None]
        band = [p for p in pts if p.get("lo") is not None and p.get("hi") is not None]
        out.append({
            "name": s["name"], "colour": colour[s["name"]], "dash": "5,4" if s.get("reference") else "",
            "path": " ".join(f"{'M' if j == 0 else 'L'}{_fmt(sx(p['x']))},{_fmt(sy(p['y']))}" for j, p in enumerate(pts)),
            "band": " ".join([f"{_fmt(sx(p['x']))},{_fmt(sy(p['hi']))}" for p in band]
                             + [f"{_fmt(sx(p['x']))},{_fmt(sy(p['lo']))}" for p in reversed(band)]) if len(band) > 1 else "",
            "points": [{"cx": _fmt(sx(p["x"])), "cy": _fmt(sy(p["y"])), "title": p.get("title", "")} for p in pts],
            "legend_y": _fmt(TOP + 6 + 16 * i),
        })
    return {"width": W, "height": H, "left": LEFT, "top": TOP, "right": _fmt(W - RIGHT), "bottom": _fmt(H - BOTTOM),
            "legend_x": _fmt(W - RIGHT + 12), "series": out, "x_label": x_label, "y_label": y_label,
            "xticks": [{"x": _fmt(sx(x)), "label": str(x)} for x in xs],
            "yticks": [{"y": _fmt(sy(t)), "label": _label(t)} for t in _ticks(lo, hi)]}


def scatter(points: list[dict], x_label: str, y_label: str) -> dict | None:
    """points: [{"label", "x", "y"}] with both values known; one labelled dot each."""
    pts = [p for p in points if p["x"] is not None and p["y"] is not None]
    if not pts:
        return None
    xlo, xhi = _range([p["x"] for p in pts])
    ylo, yhi = _range([p["y"] for p in pts])
    right = 40
    pw, ph = W - LEFT - right, H - TOP - BOTTOM
    sx = lambda x: LEFT + (x - xlo) / (xhi - xlo) * pw  # noqa: E731
    sy = lambda y: TOP + (yhi - y) / (yhi - ylo) * ph  # noqa: E731
    colour = colours([p["label"] for p in pts])
    stacked: dict = {}   # RMs at the same spot: their labels one above the other, not on top of each other

    def label_dy(p) -> str:
        spot = (_fmt(sx(p["x"])), _fmt(sy(p["y"])))
        stacked[spot] = stacked.get(spot, -1) + 1
        return _fmt(-6 - 12 * stacked[spot])

    return {"width": W, "height": H, "left": LEFT, "top": TOP, "right": _fmt(W - right), "bottom": _fmt(H - BOTTOM),
            "x_label": x_label, "y_label": y_label,
            "points": [{"cx": _fmt(sx(p["x"])), "cy": _fmt(sy(p["y"])), "label": p["label"], "colour": colour[p["label"]],
                        "dy": label_dy(p), "title": p.get("title", "")} for p in sorted(pts, key=lambda p: p["label"])],
            "xticks": [{"x": _fmt(sx(t)), "label": _label(t)} for t in _ticks(xlo, xhi)],
            "yticks": [{"y": _fmt(sy(t)), "label": _label(t)} for t in _ticks(ylo, yhi)]}


def bars(items: list[dict], x_label: str) -> dict | None:
    """Horizontal bars from zero with CI whiskers: items [{"label", "value", "lo", "hi", "reference"}], in the given
    order."""
    known = [i for i in items if i["value"] is not None]
    if not known:
        return None
    values = [v for i in known for v in (i["value"], i.get("lo"), i.get("hi")) if v is not None]
    lo, hi = min(0.0, min(values)), max(values) * 1.05 or 1.0
    left, right, row = 170, 30, 24
    height = TOP + BOTTOM + row * len(known)
    pw = W - left - right
    sx = lambda x: left + (x - lo) / (hi - lo) * pw  # noqa: E731
    out, zero = [], sx(0.0)   # a bar's length is its value: from zero, leftwards when negative
    for j, i in enumerate(known):
        y = TOP + j * row
        out.append({"label": i["label"], "y": _fmt(y + 4), "ty": _fmt(y + row / 2 + 4),
                    "x0": _fmt(min(zero, sx(i["value"]))), "w": _fmt(abs(sx(i["value"]) - zero)), "h": row - 8,
                    "reference": i.get("reference", False),
                    "whisker": {"x1": _fmt(sx(i["lo"])), "x2": _fmt(sx(i["hi"])), "y": _fmt(y + row / 2)}
                    if i.get("lo") is not None and i.get("hi") is not None else None,
                    "title": f"{i['label']}: {i['value']:.3f}"})
    return {"width": W, "height": height, "left": left, "bottom": _fmt(height - BOTTOM), "x_label": x_label,
            "bars": out, "xticks": [{"x": _fmt(sx(t)), "label": _label(t)} for t in _ticks(lo, hi)]}
