"""A run page of a hundred-odd RMs, built in seconds from synthetic stage outputs (no pipeline run): the
params' RMs plus `extra` RMs of `kind: random`, each scored on 6 pairs per strategy over three domains (the
ladder of positive controls on 15), through the real leaderboard stage and the real report code; a Best-of-N
curve for every RM. The extra RMs are the winner's curse by construction: `perfect` of them get every pair
right in every strategy, the rest a seeded coin per pair.

`python -m tests.scale_report OUT [--extra N]` writes OUT/page.html and OUT/pairs.html (the pair explorer, from
the real explain stage on the same scores) and prints their sizes and table rows (the issue's measure; run it
from a checkout of another commit to compare)."""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import yaml

from tasks.core import layout
from tasks.core.artifacts import write_table

ROOT = Path(__file__).resolve().parent.parent
DOMAINS = ("Art", "Lifestyle", "Society")
RIGHT = {"bradley-terry": 5, "similarity": 4, "smollm2-pairwise": 3, "random": 3}   # of 6 pairs; a ladder rung i
# gets 5 + i of 15; the length rules follow the pairs' lengths (tests/explain_inputs.py: chosen longer in even pairs)
LENGTH_RULES = {"length-longer": 0, "length-shorter": 1}


def extra_name(i: int) -> str:
    return f"random-{i:03d}"


def params_with(extra: int) -> dict:
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["scoring"]["rms"].update({extra_name(i): {"kind": "random"} for i in range(extra)})
    return params


def _score(rm: str, strategy: str, i: int, right: bool) -> dict:
    return {"rm": rm, "benchmark": "personalised", "rm_kind": "test", "rm_identity": f"test:{rm}", "strategy": strategy,
            "question_id": f"q{i}", "domain": DOMAINS[i % len(DOMAINS)], "split": "test",
            "score_chosen": 1.0 if right else 0.0, "score_rejected": 0.0 if right else 1.0, "correct": right,
            "tie": False, "invalid": False, "truncated": False, "order_consistent": None,
            "input_hash_chosen": "h", "input_hash_rejected": "h"}


def outcomes(rm: str, strategy: str, perfect: int, seed: int = 0) -> list[bool]:
    """Right/wrong per pair: fixed for the params' RMs, all right for the first `perfect` extra RMs, else a coin."""
    if rm.startswith("ladder-"):
        return [i < 5 + int(rm[-2:]) // 2 for i in range(15)]
    if rm in RIGHT:
        return [i < RIGHT[rm] for i in range(6)]
    if rm in LENGTH_RULES:
        return [i % 2 == LENGTH_RULES[rm] for i in range(6)]
    i = int(rm.rsplit("-", 1)[1])
    if i < perfect:
        return [True] * 6
    rng = np.random.default_rng([seed, i, sum(map(ord, strategy))])
    return [bool(x) for x in rng.integers(0, 2, size=6)]


def _bon(root: Path, rms: list[str]) -> dict:
    rows = []
    for j, rm in enumerate([*rms, "(oracle)", "(random)"]):
        base = 0.9 if rm == "(oracle)" else 0.3 + 0.002 * (j % 50)
        for k in (1, 2, 4):
            score = base + 0.01 * k
            rows.append({"rm": rm, "domain": "all", "k": k, "method": "expected", "judge_score": score,
                         "ci_low": score - 0.05, "ci_high": score + 0.05, "gain_over_k1": 0.01 * (k - 1),
                         "n_questions": 15})
    curve = write_table(rows, root / layout.BON_REPORT["curve"], "bon_curve")
    metrics = root / layout.BON_REPORT["metrics"]
    metrics.write_text(json.dumps({"judge": "embedding", "reported_method": "expected"}), encoding="utf-8")
    return {"bon_curve": str(curve), "bon_metrics": str(metrics)}


def project(root: Path, extra: int = 100, perfect: int = 4) -> tuple[dict, dict]:
    """(params, report inputs) under `root`: the leaderboard stage run on the synthetic scores, a BoN curve."""
    from tasks.stages import leaderboard

    params = params_with(extra)
    strategies = params["scoring"]["strategies"]
    scores = {}
    for rm in params["scoring"]["rms"]:
        rows = [_score(rm, s, i, right) for s in strategies for i, right in enumerate(outcomes(rm, s, perfect))]
        scores[rm] = str(write_table(rows, root / layout.scores(rm)["scores"], "scores"))
    out = {k: str(root / v) for k, v in layout.LEADERBOARD.items()}
    leaderboard.run(params, scores, out)
    inputs = {"leaderboard": out["leaderboard"], "leaderboard_metrics": out["metrics"]}
    return params, {**inputs, **_bon(root, sorted(params["scoring"]["rms"])), **_explain(root, params, scores)}


def _explain(root: Path, params: dict, scores: dict) -> dict:
    """The explain stage on the same scores: its upstream artifacts synthetic (tests/explain_inputs.py)."""
    from tasks.stages.explain import stage
    from tests import explain_inputs

    ids = [(f"q{i}", DOMAINS[i % len(DOMAINS)]) for i in range(15)]
    out = {k: str(root / v) for k, v in layout.EXPLAIN.items()}
    stage.run(params, {**explain_inputs.write(root, ids), "scores": scores}, out)
    return {"explain_cells": out["cells"], "explain_pairs": out["pairs"], "explain_metrics": out["metrics"]}


def page(root: Path, extra: int = 100, perfect: int = 4) -> tuple[Path, dict]:
    """Build the run page under `root`; (its path, the params)."""
    import os

    from tasks.ops.report import build

    here = os.getcwd()
    os.chdir(root)   # the stages write relative to the project root
    try:
        params, inputs = project(root, extra, perfect)
        path = root / "page.html"
        build.run(params, inputs, "0" * 64, {"page": str(path), "pairs": str(root / "pairs.html")})
    finally:
        os.chdir(here)
    return path, params


def measure(html: str) -> dict:
    """Bytes, every table row, and the leaderboard's rows (in the HTML, shown or not)."""
    board = html.split('id="leaderboard-table"', 1)[-1].split("</table>", 1)[0]
    return {"bytes": len(html.encode("utf-8")), "table_rows": len(re.findall(r"<tr[\s>]", html)),
            "leaderboard_rows": len(re.findall(r"<tr data-rm=", board))}   # RM × strategy rows, not the folded nulls' summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--extra", type=int, default=100)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    path, _ = page(args.out.resolve(), args.extra)
    explorer = path.with_name("pairs.html").read_bytes()
    print(json.dumps({"extra_rms": args.extra, **measure(path.read_text(encoding="utf-8")),
                      "explorer_bytes": len(explorer)}))


if __name__ == "__main__":
    main()
