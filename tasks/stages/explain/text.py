"""The error analysis in words, for a terminal: the stage's summary, `prbench explain` and the Prefect UI's
table. Percentages as the page shows them; a figure without a CI says why."""
from __future__ import annotations

from tasks.stages.explain.cells import NONE

LENGTH_KINDS = ("length-longer", "length-shorter")   # the length rules: the reference for a length bias


def pct(x, digits: int = 1) -> str:
    return "–" if x is None else f"{100 * x:.{digits}f}%"


def pp(x) -> str:
    return "–" if x is None else f"{100 * x:+.1f} pp"


def figure(e: dict | None, signed: bool = False) -> str:
    """'66.7% [41.2, 88.9] (n = 24)', or below explain.min_n pairs its value and '(n = 6: too few pairs for a CI)'."""
    if not e or e.get("value") is None:
        return f"– ({(e or {}).get('status', 'not measured')})"
    value = (pp if signed else pct)(e["value"])
    n = e["n"] if not isinstance(e["n"], list) else " vs ".join(map(str, e["n"]))
    if e.get("ci"):
        lo, hi = e["ci"]
        ci = f"[{100 * lo:+.1f}, {100 * hi:+.1f}]" if signed else f"[{100 * lo:.1f}, {100 * hi:.1f}]"
        return f"{value} {ci} (n = {n})"
    return f"{value} (n = {n}: too few pairs for a CI)" if e["status"].startswith("too few") else f"{value} ({e['status']})"


def reference(metrics: dict, strategy: str) -> str:
    """The length baselines' share of picking the longer answer under the same strategy: what a pure length rule
    gives, for comparison."""
    refs = [f"{rm} {pct(s['picked_longer']['value'])}" for rm, entry in sorted(metrics["rms"].items())
            if entry.get("kind") in LENGTH_KINDS
            for s in [entry["strategies"].get(strategy)] if s and s["picked_longer"]["value"] is not None]
    return f" [{', '.join(refs)}]" if refs else ""


def rm_lines(metrics: dict, rm: str, strategy: str) -> list[str]:
    """Every figure of one RM × strategy, one per line."""
    f = metrics["rms"][rm]["strategies"][strategy]
    out = [f"{rm} ({metrics['rms'][rm]['role']}) · {strategy}: accuracy {figure(f['accuracy'])}, {f['pairs']} pairs",
           f"  picked the longer answer: {figure(f['picked_longer'])}{reference(metrics, strategy)}",
           "  accuracy by length: " + "; ".join(f"{g} {figure(e)}" for g, e in f["accuracy_by_length"].items()),
           f"  length gap (chosen longer minus chosen shorter): {figure(f['length_gap'], signed=True)}"]
    for title, key in (("category", "accuracy_by_category"), ("profile size", "accuracy_by_profile_length"),
                       ("position of the chosen answer", "accuracy_by_position")):
        if f.get(key):
            out.append(f"  by {title}: " + "; ".join(f"{g} {figure(e)}" for g, e in _ordered(metrics, key, f[key])))
    g = f.get("profile_gain")
    if g:
        out.append(f"  vs {g['vs']}: right only with this context on {g['right_only_with']} of {g['n']} pairs, only "
                   f"without it on {g['right_only_without']}; net {figure(g['net'], signed=True)}")
    return out


def _ordered(metrics: dict, key: str, groups: dict) -> list:
    if key == "accuracy_by_profile_length":   # the bins in size order, not as text sorts them
        order = metrics["pairs"]["profile_bins"]
        return sorted(groups.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    return list(groups.items())


def summary_rows(metrics: dict) -> list[dict]:
    """One row per RM × strategy: the headline figures, numbers as numbers (the Prefect UI's table)."""
    rows = []
    for rm, entry in sorted(metrics["rms"].items()):
        for s in metrics["strategies"]:
            f = entry["strategies"].get(s)
            if not f:
                continue
            pl, gap, gain = f["picked_longer"], f["length_gap"], (f.get("profile_gain") or {})
            rows.append({"rm": rm, "role": entry["role"], "strategy": s, "pairs": f["pairs"],
                         "accuracy": f["accuracy"]["value"], "picked_longer": pl["value"],
                         "picked_longer_ci": _ci(pl), "length_gap": gap["value"], "length_gap_ci": _ci(gap),
                         "gain_vs_none": (gain.get("net") or {}).get("value"), "gain_ci": _ci(gain.get("net") or {}),
                         "right_only_with_profile": gain.get("right_only_with"),
                         "right_only_without": gain.get("right_only_without")})
    return rows


def _ci(e: dict) -> str:
    return f"[{e['ci'][0]:.4f}, {e['ci'][1]:.4f}]" if e.get("ci") else e.get("status", "")


def summary_table(metrics: dict) -> str:
    """The stage's line per RM × strategy: picked longer, the length gap and the gain from the context."""
    lines = [f"explain: {metrics['pairs']['n']} pairs ({', '.join(f'{k} {v}' for k, v in sorted(metrics['pairs']['length'].items()))})"]
    rows = summary_rows(metrics)
    shown = [r for r in rows if r["role"] != "null baseline" or metrics["rms"][r["rm"]].get("kind") in LENGTH_KINDS]
    for r in shown:
        gain = "" if r["strategy"] == NONE or r["gain_vs_none"] is None else f", vs none {pp(r['gain_vs_none'])}"
        lines.append(f"  {r['rm']} · {r['strategy']}: picked longer {pct(r['picked_longer'])}, length gap "
                     f"{pp(r['length_gap'])}{gain}")
    if len(shown) < len(rows):
        lines.append(f"  ... and {len({r['rm'] for r in rows} - {r['rm'] for r in shown})} more null baselines "
                     "(metrics/explain.json)")
    return "\n".join(lines)
