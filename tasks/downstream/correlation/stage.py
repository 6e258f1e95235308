"""The correlation stage: does ranking RMs by a benchmark predict their downstream ranking?
Sides (sides.py): benchmarks (per-question credit from the scores tables, or fixed numbers from
external baseline tables), each with two predictors (accuracy, worst-domain accuracy), and downstreams
(per-question BoN / RL judge scores; fixed numbers from external tables). Every benchmark × predictor ×
downstream gets every metric with honest CIs and null values (paired.correlate); benchmark pairs in
correlation.comparisons get the paired test (paired.compare). All of that is exploratory: Holm over one
family of every p-value. The one pre-registered test, correlation.primary, is primary.run_primary."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from tasks.downstream.correlation import metrics as M
from tasks.downstream.correlation import paired, published
from tasks.downstream.correlation.resample import METHOD
from tasks.downstream.correlation.sides import Side, load_benchmarks, load_external, load_list_benchmarks, null_baselines  # noqa: F401,E501
from tasks.downstream.correlation.methods import DOWNSTREAM
from tasks.downstream.correlation.primary import run_primary
from tasks.downstream.correlation.overlap import question_counts
from tasks.downstream.correlation.table import format_table, plot
from tasks.core.errors import ConfigError
from tasks.core.parallel import map_forked

LABELLED = ("bench_scores", "published")   # other benchmarks: by prbench's list-wise rule or their publisher's
REQUIRED = ("strategy", "split", "benchmarks", "tie_policy", "downstream", "bon_method", "rbo_p", "bootstrap",
            "permutations", "ci", "min_rms")
FIELDS = ("value", "ci_low", "ci_high", "ci_low_questions", "ci_high_questions", "p_value", "p_holm", "null_random",
          "null_reversed")
COMPARE_FIELDS = ("difference", "ci_low", "ci_high", "p_value", "p_holm")


def check_params(p: dict) -> dict:
    from tasks.models.strategies import check_benchmark_strategy

    missing = [k for k in REQUIRED if k not in p]
    if missing:
        raise ConfigError(f"correlation: missing key(s) {', '.join(missing)} in params")
    check_benchmark_strategy(p["strategy"], "correlation.strategy")
    bad = lambda key, why: ConfigError(f"correlation.{key}: {why}, got {p.get(key)!r}")  # noqa: E731
    if p.get("tie_policy") not in ("strict", "half"):
        raise bad("tie_policy", "need strict or half (every question must count, so no 'drop')")
    if not isinstance(p.get("rbo_p"), (int, float)) or not 0 < p["rbo_p"] < 1:
        raise bad("rbo_p", "need a persistence in (0, 1), e.g. 0.9")
    for key in ("bootstrap", "permutations"):
        if not isinstance(p.get(key), int) or p[key] < 1:
            raise bad(key, "need a positive number of resamples")
    if not isinstance(p.get("min_rms"), int) or isinstance(p["min_rms"], bool) or p["min_rms"] < 3:
        raise bad("min_rms", "need an integer >= 3 (two RMs always correlate +-1)")
    if not isinstance(p.get("ci"), (int, float)) or not 0 < p["ci"] < 1:
        raise bad("ci", "need a level in (0, 1), e.g. 0.95")
    for d in p["downstream"]:
        if d not in DOWNSTREAM:
            raise bad("downstream", f"unknown downstream '{d}'; valid: {', '.join(DOWNSTREAM.names())} "
                      "(or list an external table under correlation.downstream_tables)")
    for name in published.split_names(p["benchmarks"])[0]:
        if name not in ("personalised", "generic"):
            raise bad("benchmarks", f"'{name}': personalised, generic or <benchmarks entry>:published")
    pr = p.get("primary") or {}
    if pr and p["downstream"] and not p.get("downstream_tables") and pr.get("method") not in p["downstream"]:
        raise ConfigError(f"correlation.primary.method: '{pr.get('method')}' is not in correlation.downstream "
                          f"({', '.join(p['downstream'])})")
    if pr:
        check_benchmark_strategy(pr["strategy"], "correlation.primary.strategy")
    for pair in p.get("comparisons") or []:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[0] != pair[1]):
            raise bad("comparisons", "need pairs of two different benchmarks, e.g. [[personalised, generic]]")
    return p


def _empty(status: str) -> dict:
    return {m: {**dict.fromkeys(FIELDS), "status": status} for m in M.METRICS}


def pairing(bench: Side, down: Side, predictor: str, excluded: set[str], p: dict, seed: int, labels: dict):
    """Every metric for one benchmark predictor × downstream over the RMs both sides have, and their points."""
    rms = sorted((bench.rms() & down.rms()) - excluded)
    b = np.array([bench.value(rm, predictor) for rm in rms])
    d = np.array([down.value(rm) for rm in rms])
    br, dr = M.ranks(b, rms), M.ranks(d, rms)
    points = [{"rm": rm, "benchmark": bench.name, "predictor": predictor, "accuracy": float(b[i]),
               "benchmark_rank": int(br[i]), "downstream": down.name, "downstream_score": float(d[i]),
               "downstream_rank": int(dr[i]), "shares_llm_with": labels.get(rm, {}).get("shares_llm_with", ""),
               "shares_encoder_with": labels.get(rm, {}).get("shares_encoder_with", ""),
               "in_distribution": bool(labels.get(rm, {}).get("in_distribution", False))}
              for i, rm in enumerate(rms)]
    head = {"status": "ok", "n_rms": len(rms), "rms": rms, "predictor": predictor}
    status = M.too_few(len(rms), p["min_rms"])   # no value, CI or p claimed below the minimum
    if status:
        return {**head, "status": status, **_empty(status)}, points
    return {**head, **paired.correlate(bench, down, rms, predictor, p, seed)}, points


def _pairing_of(key: tuple, benches: dict, downs: dict, excluded: set[str], p: dict, seed: int, labels: dict):
    bn, predictor, dn = key
    return pairing(benches[bn], downs[dn], predictor, excluded, p, seed, labels)


def holm_one_family(results: dict, compared: dict) -> None:
    """p_holm in place: every exploratory p-value of the run (each benchmark × predictor × downstream × metric,
    each comparison's cells) Holm-adjusted as one family; the primary test stands apart (primary.py)."""
    family = {("c", key, m): r[m]["p_value"] for key, r in results.items() for m in M.METRICS}
    family.update({("v", key, m): r["cells"][m]["p_value"] for key, r in compared.items() for m in M.METRICS})
    for (where, key, m), adjusted in M.holm(family).items():
        (results[key][m] if where == "c" else compared[key]["cells"][m])["p_holm"] = adjusted


def comparisons(benches: dict, downs: dict, excluded: set[str], p: dict, seed: int) -> dict:
    """correlation.comparisons [[X, Y], ...]: does X predict each downstream better than Y? (exploratory)"""
    out = {}
    for x, y in p.get("comparisons") or []:
        if x not in benches or y not in benches:
            continue   # a benchmark this run did not score (e.g. generic left out of correlation.benchmarks)
        for dn, down in downs.items():
            for predictor in sorted(set(benches[x].predictors()) & set(benches[y].predictors())):
                rms = sorted((benches[x].rms() & benches[y].rms() & down.rms()) - excluded)
                status = M.too_few(len(rms), p["min_rms"]) or "ok"
                cells = ({m: dict.fromkeys(COMPARE_FIELDS) for m in M.METRICS} if status != "ok"
                         else paired.compare(benches[x], benches[y], down, rms, predictor, p, seed))
                out[(x, y, dn, predictor)] = {"status": status, "n_rms": len(rms), "cells": cells}
    for pair in {(x, y) for x, y, _, _ in out}:
        family = {(d, pr, m): r["cells"][m]["p_value"] for (x, y, d, pr), r in out.items() if (x, y) == pair
                  for m in M.METRICS}
        for (d, pr, m), adjusted in M.holm(family).items():
            out[(*pair, d, pr)]["cells"][m]["p_holm"] = adjusted
    return out


def positive_controls(params: dict) -> set[str]:
    """RMs of the `mixture` kind (the positive-control ladder), by kind, never by name."""
    return {rm for rm, e in ((params.get("scoring") or {}).get("rms") or {}).items() if (e or {}).get("kind") == "mixture"}


def _r4(x):
    return None if x is None else round(float(x), 4)


def _key(bench: str, predictor: str) -> str:
    return bench if predictor == "accuracy" else f"{bench}:{predictor}"


def build_metrics(p: dict, benches: dict, downs: dict, results: dict, compared: dict, excluded: set[str]) -> dict:
    best = max(results.values(), key=lambda r: r["n_rms"]) if results else {"status": "no pairings"}
    correlations, level = defaultdict(dict), M.alpha(p)
    said = lambda status, c: M.verdict(status, c["p_holm"], c["p_value"], level)  # noqa: E731
    for (b, pr, d), r in results.items():
        correlations[_key(b, pr)][d] = {"status": r["status"], "n_rms": r["n_rms"], "rms": r["rms"],
                                        **{m: {**{k: _r4(r[m][k]) for k in FIELDS}, "verdict": said(r["status"], r[m])}
                                           for m in M.METRICS}}
    versus = defaultdict(dict)
    for (x, y, d, pr), r in compared.items():
        versus[_key(f"{x} vs {y}", pr)][d] = {"status": r["status"], "n_rms": r["n_rms"],
                                              **{m: {**{k: _r4(r["cells"][m][k]) for k in COMPARE_FIELDS},
                                                     "verdict": said(r["status"], r["cells"][m])} for m in M.METRICS}}
    return {
        "status": "ok" if any(r["status"] == "ok" for r in results.values()) else best["status"],
        **{k: p[k] for k in ("strategy", "split", "tie_policy", "rbo_p", "bootstrap", "permutations", "ci")},
        "min_rms": p["min_rms"], "excluded_rms": sorted(excluded), "ci_method": METHOD, "alpha": level,
        "significant": sum(c[m]["verdict"] == M.SIGNIFICANT for v in correlations.values() for c in v.values()
                           for m in M.METRICS),
        "conventions": {**M.CONVENTIONS, "ci": METHOD,
                        "comparisons": "X vs Y: correlation of X minus that of Y with the same downstream, "
                                       "same resamples of RMs and questions; p one-sided (H1: X predicts better)"},
        "benchmarks": {n: {"source": s.source, **({"scored_by": published.label(s)} if s.source in LABELLED else {}),
                           **{pr: {rm: _r4(s.value(rm, pr)) for rm in sorted(s.rms())} for pr in s.predictors()}}
                       for n, s in benches.items()},
        "downstream": {n: {"source": s.source, "score": {rm: _r4(s.value(rm)) for rm in sorted(s.rms())}}
                       for n, s in downs.items()},
        "correlations": dict(correlations), "comparisons": dict(versus),
    }


def run(params: dict, inputs: dict, out: dict) -> dict:
    """inputs: {"scores": {rm: scores Parquet}, "bench_scores": {benchmark: its folder of list scores},
    "bon": BoN per-question Parquet or None, "rl": RL answers or None}."""
    from tasks.core import schemas
    from tasks.core.artifacts import write_table
    from tasks.core.rm_labels import labels
    from tasks.core.runlog import write_metrics

    p, seed = check_params(params["correlation"]), params["common"]["seed"]
    scored, by_published = published.split_names(p["benchmarks"])
    benches = load_benchmarks(inputs.get("scores") or {}, {**p, "benchmarks": scored})
    others = load_list_benchmarks(inputs.get("bench_scores") or {}, p)   # the `benchmarks:` entries
    clash = sorted(set(others) & set(benches))
    if clash:
        raise ConfigError(f"benchmarks.{clash[0]}: the name of a scored benchmark; give the entry another name")
    benches.update(others)
    benches.update(published.load_published(by_published, inputs.get("bench_scores") or {}, p["strategy"]))
    downs = {d: DOWNSTREAM.lookup(d, "correlation.downstream").load(inputs.get(d), p) for d in p["downstream"]}
    benches.update(load_external("baselines", p.get("baselines") or [], {"personalised", "generic", *benches}))
    downs.update(load_external("downstream_tables", p.get("downstream_tables") or [], set(DOWNSTREAM.names())))
    if not downs:
        raise ConfigError("correlation: nothing downstream to compare with: list 'bon' in correlation.downstream "
                          "or a file in correlation.downstream_tables")
    nulls = null_baselines(benches, params)   # left out unless correlation.include_null_baselines
    controls = positive_controls(params)      # the ladder: the primary test's, never an exploratory contestant
    excluded = set(p.get("exclude_rms") or []) | controls | (set() if p.get("include_null_baselines") else nulls)
    rm_labels = labels(params)
    keys = [(bn, predictor, dn) for bn, bench in benches.items() for predictor in bench.predictors() for dn in downs]
    # most of the stage's time at a hundred RMs (the permutations), each pairing on its own seeded streams
    done = map_forked(_pairing_of, keys, benches, downs, excluded, p, seed, rm_labels)
    results, points = dict(zip(keys, (result for result, _ in done))), [pt for _, pts in done for pt in pts]
    ours = [[x, y] for x, y in p.get("comparisons") or []]
    ours += [["personalised", b] for b in others if "personalised" in benches and ["personalised", b] not in ours]
    compared = comparisons(benches, downs, excluded, {**p, "comparisons": ours}, seed)   # every benchmark vs ours
    holm_one_family(results, compared)
    rows = [{"benchmark": b, "predictor": pr, "downstream": d, "metric": m, **{k: r[m][k] for k in FIELDS},
             "status": r[m]["status"], "n_rms": r["n_rms"]} for (b, pr, d), r in results.items() for m in M.METRICS]
    write_table([{k: r[k] for k in schemas.CORRELATION.names} for r in rows], out["correlation"], "correlation")
    write_table(points, out["points"], "correlation_points")
    metrics = build_metrics(p, benches, downs, results, compared, excluded)
    scored = {rm for b in benches.values() if b.source == "scores" for rm in b.rms()} - excluded
    metrics.update(primary=run_primary(params, inputs.get("scores") or {}, downs), exploratory=True,
                   positive_controls=sorted(controls),
                   include_null_baselines=bool(p.get("include_null_baselines")), null_baselines=sorted(nulls),
                   **{k: {rm: v[k].split(", ") for rm, v in rm_labels.items() if v[k]}
                      for k in ("shares_llm_with", "shares_encoder_with")},
                   in_distribution=sorted(rm for rm, v in rm_labels.items() if v["in_distribution"]),
                   not_bon_capable=sorted(scored - downs["bon"].rms()) if "bon" in downs else None,
                   not_capable={d: sorted(scored - downs[d].rms()) for d in p["downstream"]},
                   **question_counts(benches, downs))
    write_metrics(metrics, out["metrics"])
    plot(points, rows, p["min_rms"], out["plot"])
    return metrics


# --- the stage as flows/stage.py runs it ------------------------------------------------------------

def stage_inputs(params: dict, key: None, declared: dict) -> dict:
    """The scores of the RMs in params that were scored, every benchmark's, each downstream asked for."""
    from pathlib import Path

    from tasks.core import layout
    from tasks.core.artifacts import existing

    scores = existing({rm: layout.scores(rm)["scores"] for rm in sorted(params["scoring"]["rms"])})
    root = Path(layout.BENCH_SCORES_DIR)   # every bench_score output (one folder per `benchmarks:` entry)
    bench = {d.name: str(d) for d in sorted(root.iterdir()) if d.is_dir()} if root.is_dir() else {}
    return {"scores": scores, "bench_scores": bench,
            **{k: (v if k in params["correlation"]["downstream"] else None) for k, v in declared.items()}}


def stage_rows(out: dict) -> list[dict]:
    from tasks.core.artifacts import read_table

    return read_table(out["correlation"], "correlation").to_pylist()


def stage_summary(out: dict, metrics: dict) -> str:
    return format_table(stage_rows(out), metrics.get("alpha", 0.05))
