"""The correlation table as text (the flow's log, the Prefect UI) and as a plot: every value beside its
CI over RMs and questions, its null values (a random and a reversed ranking) and its Holm-adjusted p."""
from __future__ import annotations

from tasks.downstream.correlation import metrics as M


def _fmt(x, digits=3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _ci(lo, hi) -> str:
    return "-" if lo is None else f"[{_fmt(lo)}, {_fmt(hi)}]"


HEAD = ["benchmark", "predictor", "downstream", "n", "metric", "value", "CI (RMs+questions)", "CI (questions)",
        "random", "reversed", "p", "p (Holm)", "verdict"]


def format_table(rows: list[dict], level: float = 0.05) -> str:
    """The correlation table (rows of data/correlation/correlation.parquet) as aligned text; status: whether
    p (Holm) < `level`, or why there is no p."""
    lines = [HEAD]
    for r in rows:
        lines.append([r["benchmark"], r.get("predictor") or "accuracy", r["downstream"], str(r["n_rms"]), r["metric"],
                      _fmt(r["value"]), _ci(r["ci_low"], r["ci_high"]),
                      _ci(r.get("ci_low_questions"), r.get("ci_high_questions")), _fmt(r.get("null_random")),
                      _fmt(r.get("null_reversed")), _fmt(r["p_value"], 4), _fmt(r.get("p_holm"), 4),
                      M.verdict(r["status"], r.get("p_holm"), r["p_value"], level)])
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


def plot(points: list[dict], rows: list[dict], min_rms: int, path) -> None:
    """One scatter per benchmark × downstream (accuracy predictor): accuracy against downstream score, RMs
    labelled (in-distribution RMs marked), Pearson / Spearman with CI and NDCG with its nulls in the title."""
    from tasks.core.plots import plt, save

    rows = [r for r in rows if (r.get("predictor") or "accuracy") == "accuracy"]
    points = [pt for pt in points if (pt.get("predictor") or "accuracy") == "accuracy"]
    cells = list(dict.fromkeys((r["benchmark"], r["downstream"]) for r in rows))   # the stage's order
    benches, downs = list(dict.fromkeys(b for b, _ in cells)), list(dict.fromkeys(d for _, d in cells))
    fig, axes = plt.subplots(max(1, len(benches)), max(1, len(downs)), squeeze=False, layout="constrained",
                             figsize=(4.6 * max(1, len(downs)), 3.6 * max(1, len(benches))))
    stat = {(r["benchmark"], r["downstream"], r["metric"]): r for r in rows}
    for (b, d), ax in ((c, axes[benches.index(c[0])][downs.index(c[1])]) for c in cells):
        mine = [pt for pt in points if (pt["benchmark"], pt["downstream"]) == (b, d)]
        ax.scatter([pt["accuracy"] for pt in mine], [pt["downstream_score"] for pt in mine],
                   c=["C1" if pt.get("in_distribution") else "C0" for pt in mine])
        for pt in mine:
            label = pt["rm"] + (" (in-distribution)" if pt.get("in_distribution") else "")
            ax.annotate(label, (pt["accuracy"], pt["downstream_score"]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        r, rho, ndcg = stat[(b, d, "pearson")], stat[(b, d, "spearman")], stat[(b, d, "ndcg")]
        few = M.too_few(r["n_rms"], min_rms)
        detail = (few or f"r {_fmt(r['value'], 2)} {_ci(r['ci_low'], r['ci_high'])}, rho {_fmt(rho['value'], 2)}\n"
                  f"NDCG {_fmt(ndcg['value'])} (random {_fmt(ndcg['null_random'])}, "
                  f"reversed {_fmt(ndcg['null_reversed'])})")
        ax.set_title(f"{b} vs {d} ({r['n_rms']} RMs): {detail}", fontsize=8)
        ax.set_xlabel(f"{b} benchmark accuracy")
        ax.set_ylabel(f"{d} score")
    if not cells:
        axes[0][0].text(0.5, 0.5, "no benchmark x downstream pairing", ha="center", va="center")
        axes[0][0].set_axis_off()
    save(fig, path)
