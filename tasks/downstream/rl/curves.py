"""rl_train's per-update record: plots/rl_train/<rm>.csv (for `dvc plots`) and .png (reward mean ± std,
KL, entropy per update; one line per domain for per-domain policies, and per seed under rl.seeds > 1)."""
from __future__ import annotations

import csv
import io

from tasks.core.artifacts import write_text

STEP_COLUMNS = ("domain", "step", "rollouts", "reward_mean", "reward_std", "reward_failures", "kl", "entropy")
SEEDED = ("seed", *STEP_COLUMNS)   # with rl.seeds > 1: which seed's policy each update trained
POOLED = "all"   # the domain column of a pooled policy's updates


def _r6(x):
    return None if x is None else round(float(x), 6)


def step_rows(steps, logs: list[dict], domain: str | None, seed: int | None = None) -> list[dict]:
    """One row per update from the reward's steps and trl's per-update logs (`seed` when there are several)."""
    rows = []
    for i, s in enumerate(steps):
        log = logs[i] if i < len(logs) else {}
        rows.append({**({"seed": seed} if seed is not None else {}), "domain": domain or POOLED, "step": i + 1, "rollouts": s.rollouts, "reward_mean": _r6(s.mean),
                     "reward_std": _r6(s.std), "reward_failures": s.failures, "kl": _r6(log.get("kl")),
                     "entropy": _r6(log.get("entropy"))})
    return rows


def write_steps(rows: list[dict], path) -> None:
    columns = SEEDED if any("seed" in r for r in rows) else STEP_COLUMNS
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows({k: ("" if r[k] is None else r[k]) for k in columns} for r in rows)
    write_text(buf.getvalue(), path)


def plot_steps(rows: list[dict], title: str, path) -> None:
    from tasks.core.plots import plt, save

    fig, axes = plt.subplots(1, 3, figsize=(10, 2.8), layout="constrained")
    line = lambda r: r["domain"] + (f" seed {r['seed']}" if "seed" in r else "")  # noqa: E731
    domains = list(dict.fromkeys(map(line, rows)))
    for ax, key, label in zip(axes, ("reward_mean", "kl", "entropy"), ("reward (mean ± std)", "KL", "entropy")):
        drawn = False
        for d in domains:
            mine = [r for r in rows if line(r) == d and r[key] is not None]
            if not mine:
                continue
            drawn = True
            ax.plot([r["step"] for r in mine], [r[key] for r in mine], marker="o", ms=3,
                    label=d if len(domains) > 1 else None)
            if key == "reward_mean":
                sd = [r["reward_std"] or 0.0 for r in mine]
                ax.fill_between([r["step"] for r in mine], [r[key] - s for r, s in zip(mine, sd)],
                                [r[key] + s for r, s in zip(mine, sd)], alpha=0.2)
        if not drawn:
            ax.text(0.5, 0.5, "not logged" if rows else "no training", ha="center", va="center",
                    transform=ax.transAxes)
        elif len(domains) > 1 and key == "reward_mean":
            ax.legend(fontsize=7)
        ax.set_xlabel("update")
        ax.set_title(label, fontsize=9)
    fig.suptitle(title, fontsize=10)
    save(fig, path)
