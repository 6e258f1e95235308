"""Downstream methods: does an RM's ranking help a policy? Each method (Best-of-N, RL) registers one
reader here: it turns the per-question table its stages write (one judge score per RM and question;
the path, its stage and the report's inputs are declared in tasks/core/layout.py `DOWNSTREAM`) into the
correlation's downstream side. The correlation stage and the report loop over this registry: a new
method is its stages, a `DOWNSTREAM` entry, one reader registered here and its params (the report's
section is the generic one unless tasks/ops/report/downstream.py draws it its own way)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from tasks.core import layout
from tasks.core.errors import ConfigError
from tasks.core.registry import Registry


@dataclass(frozen=True)
class Method:
    name: str
    title: str                   # the report section's heading
    per_question: str            # the table the correlation reads: one judge score per (RM, question)
    stage: str                   # the stage that writes it (named when it is missing)
    load: Callable               # (path or None, correlation params) -> correlation Side
    report: dict = field(default_factory=dict)   # {report input name: path} its section reads


DOWNSTREAM = Registry("downstream method")


def methods() -> list[Method]:
    return [DOWNSTREAM[name] for name in DOWNSTREAM.names()]


def declared(name: str, title: str, load: Callable) -> Method:
    """A method whose paths are layout.DOWNSTREAM's entry of the same name."""
    return Method(name, title, load=load, **layout.DOWNSTREAM[name])


def _read(name: str, path: str | None, columns: tuple[str, ...]) -> list[dict]:
    """The method's per-question table; a missing one names the stage that writes it (layout.DOWNSTREAM)."""
    from tasks.downstream.correlation.sides import read_downstream

    entry = layout.DOWNSTREAM[name]
    return read_downstream(path, name, entry["stage"], entry["per_question"], columns)


BON_COLUMNS = ("rm", "question_id", "k", "method", "judge_score")
RL_COLUMNS = ("rm", "baseline", "question_id", "score")


def load_bon(path: str | None, p: dict):
    """Best-of-N: per test question, the judge score of the answer each RM picks out of the policy's samples
    (`correlation.bon_method` at k = `correlation.bon_k`, null: the largest k); a null score is missing."""
    from tasks.downstream.correlation.sides import Side

    rows = [r for r in _read("bon", path, BON_COLUMNS) if r["method"] == p["bon_method"]]
    if not rows:
        raise ConfigError(f"correlation.bon_method: no BoN rows with method '{p['bon_method']}' in {path}")
    k = p.get("bon_k") or max(r["k"] for r in rows)
    side = Side("bon", f"{path}: {p['bon_method']} at k={k}")
    for r in rows:
        if r["k"] == k and r["judge_score"] is not None and math.isfinite(r["judge_score"]):
            side.per_question.setdefault(r["rm"], {})[r["question_id"]] = float(r["judge_score"])
    return side


def load_rl(path: str | None, p: dict | None = None):
    """RL: per test question, the score rl_eval counted for the answer of the policy trained with each RM
    (data/rl/answers.parquet `score`: the judge's verdict, or its minimum for an empty answer or an
    unparseable verdict, so no question drops out), averaged over the RM's training seeds (rl.seeds). The untrained baseline row is a reference line, never an RM."""
    from tasks.downstream.correlation.sides import Side

    side = Side("rl", f"{path}: the answer of the policy trained with each RM (rl.eval's decoding; the mean over "
                      "its training seeds' policies)")
    scores: dict = {}
    for r in _read("rl", path, RL_COLUMNS):
        if not r["baseline"] and r["score"] is not None and math.isfinite(r["score"]):
            scores.setdefault(r["rm"], {}).setdefault(r["question_id"], []).append(float(r["score"]))
    for rm, per in scores.items():   # one row per question and seed: an RM's score is its seeds' mean
        side.per_question[rm] = {q: sum(v) / len(v) for q, v in per.items()}
    return side


DOWNSTREAM.register("bon")(declared("bon", "Best-of-N", load_bon))
DOWNSTREAM.register("rl")(declared("rl", "RL", load_rl))
