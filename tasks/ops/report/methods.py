"""The report's downstream sections, one per method of the downstream registry (tasks/downstream/), in
its order: Best-of-N and RL draw their own (tasks/ops/report/downstream.py); any other method gets the
generic section — its per-question judge scores averaged per RM, with a seeded bootstrap CI over questions."""
from __future__ import annotations

import numpy as np

from tasks.core.determinism import stable_rng
from tasks.core.registry import Registry
from tasks.ops.report import charts, downstream, fmt

OWN = Registry("report section")   # the methods whose sections are drawn their own way: -> (template, context)
GENERIC = "section_downstream.html.j2"


@OWN.register("bon")
def _bon(src, params: dict) -> tuple[str, dict | None]:
    from tasks.core.rm_labels import NULL_BASELINE, role

    nulls = {rm for rm, e in (params.get("scoring") or {}).get("rms", {}).items() if role(e) == NULL_BASELINE}
    return "section_bon.html.j2", downstream.bon(src.rows("bon_curve"), src.json("bon_metrics"), nulls)


@OWN.register("rl")
def _rl(src, params: dict) -> tuple[str, dict | None]:
    return "section_rl.html.j2", downstream.rl(src.rows("rl_eval"), src.json("rl_metrics"))


def per_question_input(name: str) -> str:
    return f"{name}_per_question"


def generic(method, src, params: dict) -> dict | None:
    """Mean judge score per RM over its questions, a 95% bootstrap CI (questions resampled, seeded per RM)."""
    path = src.inputs.get(per_question_input(method.name))
    if not path:
        return None
    side = method.load(path, params.get("correlation") or {})
    seed = int((params.get("common") or {}).get("seed", 0))
    rows = []
    for rm, scores in sorted(side.per_question.items()):
        x = np.array([scores[q] for q in sorted(scores)], dtype=float)
        rng = stable_rng(seed, "report", method.name, rm)   # its own stream: adding an RM moves no other's interval
        draws = x[rng.integers(0, len(x), size=(1000, len(x)))].mean(axis=1)
        lo, hi = np.quantile(draws, [0.025, 0.975])
        rows.append({"rm": rm, "mean": float(x.mean()), "lo": float(lo), "hi": float(hi), "n": len(x)})
    return {"rows": [{"rm": r["rm"], "score": fmt.num(r["mean"]), "ci": fmt.ci(r["lo"], r["hi"]), "n": r["n"]}
                     for r in rows],
            "chart": charts.bars([{"label": r["rm"], "value": r["mean"], "lo": r["lo"], "hi": r["hi"],
                                   "reference": False} for r in rows], "judge score")}


def sections(src, params: dict) -> list[dict]:
    """[{name, title, template, context}] for every registered downstream method, in registry order."""
    from tasks.downstream.correlation.methods import methods

    out = []
    for m in methods():
        own = OWN.get(m.name)
        template, context = own(src, params) if own else (GENERIC, generic(m, src, params))
        out.append({"name": m.name, "title": m.title, "template": template, "context": context})
    return out
