"""The correlation stage: does ranking RMs by benchmark accuracy predict their downstream ranking?
Sides: benchmarks (per-question accuracy from the scores tables; fixed numbers from external baseline
tables) and downstreams (per-question BoN judge scores; fixed numbers from external tables, e.g. PPO
results obtained elsewhere). Every benchmark × downstream pairing gets every metric (metrics.py)."""
from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tasks.correlation import metrics as M
from tasks.errors import ConfigError, DataError, DataErrors

DOWNSTREAM = ("bon", "rl")                # computed in this DAG: Best-of-N and RL (rl.py, the rl_eval stage)
EXTERNAL = {"baselines": ("benchmark", "accuracy"), "downstream_tables": ("method", "score")}
BON_COLUMNS = ("rm", "question_id", "k", "method", "judge_score")


@dataclass
class Side:
    """One benchmark or downstream: per RM either per-question values or one fixed number."""
    name: str
    source: str
    per_question: dict[str, dict[str, float]] = field(default_factory=dict)
    fixed: dict[str, float] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)   # RM -> its kind, where the side knows it (scores)

    def rms(self) -> set[str]:
        return set(self.per_question) | set(self.fixed)

    def value(self, rm: str) -> float:
        return self.fixed[rm] if rm in self.fixed else float(np.mean(list(self.per_question[rm].values())))

    def draws(self, rms: list[str], questions: list[str], weights: np.ndarray) -> np.ndarray:
        """resamples × RMs: fixed numbers repeat; per-question values are re-averaged per resample."""
        if all(rm in self.fixed for rm in rms):
            return np.tile([self.fixed[rm] for rm in rms], (len(weights), 1))
        col = {q: j for j, q in enumerate(questions)}
        x = np.full((len(rms), len(questions)), np.nan)
        for i, rm in enumerate(rms):
            for q, v in self.per_question.get(rm, {}).items():
                x[i, col[q]] = v
        return M.resampled_means(x, weights)


REQUIRED = ("strategy", "split", "benchmarks", "tie_policy", "downstream", "bon_method", "rbo_p", "bootstrap",
            "permutations", "ci")


def check_params(p: dict) -> dict:
    from tasks.strategies import check

    missing = [k for k in REQUIRED if k not in p]
    if missing:
        raise ConfigError(f"correlation: missing key(s) {', '.join(missing)} in params")
    check([p["strategy"]])
    bad = lambda key, why: ConfigError(f"correlation.{key}: {why}, got {p.get(key)!r}")  # noqa: E731
    if p.get("tie_policy") not in ("strict", "half"):
        raise bad("tie_policy", "need strict or half (every question must count, so no 'drop')")
    if not isinstance(p.get("rbo_p"), (int, float)) or not 0 < p["rbo_p"] < 1:
        raise bad("rbo_p", "need a persistence in (0, 1), e.g. 0.9")
    for key in ("bootstrap", "permutations"):
        if not isinstance(p.get(key), int) or p[key] < 1:
            raise bad(key, "need a positive number of resamples")
    if not isinstance(p.get("ci"), (int, float)) or not 0 < p["ci"] < 1:
        raise bad("ci", "need a level in (0, 1), e.g. 0.95")
    for d in p["downstream"]:
        if d not in DOWNSTREAM:
            raise bad("downstream", f"unknown downstream '{d}'; valid: {', '.join(DOWNSTREAM)} "
                      "(or list an external table under correlation.downstream_tables)")
    return p


def load_benchmarks(score_paths: dict, p: dict) -> dict[str, Side]:
    """Per-question credit (1 right, 0 wrong, ties per tie_policy, invalid wrong) per benchmark and RM.
    `split: null` = every split, as in the leaderboard."""
    from tasks.artifacts import read_table
    from tasks.leaderboard import credits

    groups = defaultdict(list)
    for _, path in sorted(score_paths.items()):
        for r in read_table(path, "scores").to_pylist():
            if (r["strategy"] == p["strategy"] and p["split"] in (None, r["split"])
                    and r["benchmark"] in p["benchmarks"]):
                groups[(r["benchmark"], r["rm"])].append(r)
    sides = {b: Side(b, "scores") for b in p["benchmarks"]}
    for (b, rm), rows in sorted(groups.items()):
        sides[b].per_question[rm] = dict(zip((r["question_id"] for r in rows), credits(rows, p["tie_policy"]).tolist()))
        sides[b].kinds[rm] = rows[0]["rm_kind"]
    return sides


def null_baselines(benches: dict[str, Side], params: dict) -> set[str]:
    """RMs of a null-baseline kind (length-only, random): reference points, not contestants.
    By kind, from the scores (or the params entry of an RM without scores), never by name."""
    from tasks.rm_labels import NULL_BASELINE_KINDS

    kinds = {rm: (e or {}).get("kind") for rm, e in ((params.get("scoring") or {}).get("rms") or {}).items()}
    for side in benches.values():
        kinds.update(side.kinds)
    return {rm for rm, kind in kinds.items() if kind in NULL_BASELINE_KINDS}


def load_bon(path: str | None, p: dict) -> Side:
    """BoN judge score per question of `bon_method` at k = `bon_k` (null: the largest k); a null score is missing."""
    import pyarrow.parquet as pq

    if not path or not Path(path).exists():
        raise ConfigError("correlation.downstream: 'bon' needs data/bon/per_question.parquet (run the bon stage first)")
    table = pq.read_table(path)
    missing = [c for c in BON_COLUMNS if c not in table.column_names]
    if missing:
        raise DataError(path, f"missing column(s) {', '.join(missing)}")
    rows = [r for r in table.select(list(BON_COLUMNS)).to_pylist() if r["method"] == p["bon_method"]]
    if not rows:
        raise ConfigError(f"correlation.bon_method: no BoN rows with method '{p['bon_method']}' in {path}")
    k = p.get("bon_k") or max(r["k"] for r in rows)
    side = Side("bon", f"{path}: {p['bon_method']} at k={k}")
    for r in rows:
        if r["k"] == k and r["judge_score"] is not None and math.isfinite(r["judge_score"]):
            side.per_question.setdefault(r["rm"], {})[r["question_id"]] = float(r["judge_score"])
    return side


def _read_rows(path: str) -> list[dict]:
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        with open(path, newline="", encoding="utf-8-sig") as fh:   # -sig: spreadsheet exports
            return list(csv.DictReader(fh))
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    raise DataError(path, f"unsupported format '{suffix}'; use .csv or .parquet")


def load_external(key: str, paths: list[str], reserved: set[str]) -> dict[str, Side]:
    """Validate every file of correlation.<key> (rm, name, value) and return one Side per name.
    Every problem is reported at once, one line each, naming file, row and field."""
    name_col, value_col = EXTERNAL[key]
    sides, errors, seen = {}, [], {}
    for path in paths:
        try:
            if not Path(path).exists():
                raise DataError(path, f"file not found (listed in correlation.{key})")
            rows = _read_rows(path)
        except DataError as exc:
            errors.append(exc)
            continue
        except Exception as exc:   # a corrupt file: name it, whatever the reader raised
            errors.append(DataError(path, f"unreadable: {exc}"))
            continue
        if not rows:
            errors.append(DataError(path, "no rows"))
            continue
        gone = [c for c in ("rm", name_col, value_col) if c not in rows[0]]
        errors += [DataError(path, "missing column", field=c) for c in gone]
        for i, row in ([] if gone else enumerate(rows)):
            rm, name, raw = (str(row[c]).strip() if row[c] is not None else "" for c in ("rm", name_col, value_col))
            err = lambda f, msg: errors.append(DataError(path, msg, row=i, row_id=rm or None, field=f))  # noqa: E731
            value = _number(raw)
            if not rm:
                err("rm", "empty")
            elif not name:
                err(name_col, "empty")
            elif name in reserved:
                err(name_col, f"'{name}' is computed by the pipeline; give the external one another name")
            elif value is None:
                err(value_col, f"not a finite number: {raw!r}")
            elif key == "downstream_tables" and value < 0:
                err(value_col, f"must be >= 0 (it is an NDCG gain), got {value}")
            elif (rm, name) in seen:
                err("rm", f"duplicate ({rm}, {name}); first at {seen[(rm, name)]}")
            else:
                seen[(rm, name)] = f"{path} row {i}"
                sides.setdefault(name, Side(name, path)).fixed[rm] = value
    if errors:
        raise DataErrors(errors)
    return sides


def _number(raw: str) -> float | None:
    try:
        v = float(raw)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def pairing(bench: Side, down: Side, excluded: set[str], p: dict, seed: int) -> tuple[dict, list[dict]]:
    """Every metric for one benchmark × downstream over the RMs both sides have, and their points."""
    from tasks.leaderboard import stable_rng

    rms = sorted((bench.rms() & down.rms()) - excluded)
    b, d = np.array([bench.value(rm) for rm in rms]), np.array([down.value(rm) for rm in rms])
    br, dr = M.ranks(b, rms), M.ranks(d, rms)
    points = [{"rm": rm, "benchmark": bench.name, "accuracy": float(b[i]), "benchmark_rank": int(br[i]),
               "downstream": down.name, "downstream_score": float(d[i]), "downstream_rank": int(dr[i])}
              for i, rm in enumerate(rms)]
    status = M.too_few(len(rms))
    if status:
        return {"status": status, "n_rms": len(rms), "rms": rms, **M.empty(status)}, points
    names = (bench.name, down.name)
    questions = sorted({q for s in (bench, down) for rm in rms for q in s.per_question.get(rm, {})})
    draws = None
    if questions:   # resample questions (of both sides at once when they share them), re-rank the RMs
        rng = stable_rng(seed, "correlation", "bootstrap", *names)
        w = rng.multinomial(len(questions), np.full(len(questions), 1 / len(questions)), size=p["bootstrap"])
        draws = (bench.draws(rms, questions, w.astype(float)), down.draws(rms, questions, w.astype(float)))
    results = M.evaluate(b, d, rms, p["rbo_p"], p["permutations"], p["ci"], draws,
                         lambda m: stable_rng(seed, "correlation", "permutation", *names, m))
    return {"status": "ok", "n_rms": len(rms), "rms": rms, **results}, points


def _r4(x):
    return None if x is None else round(float(x), 4)


def build_metrics(p: dict, benches: dict, downs: dict, results: dict, excluded: set[str]) -> dict:
    pairings = [r for per in results.values() for r in per.values()]
    best = max(pairings, key=lambda r: r["n_rms"]) if pairings else {"status": "no pairings"}
    return {
        "status": "ok" if any(r["status"] == "ok" for r in pairings) else best["status"],
        **{k: p[k] for k in ("strategy", "split", "tie_policy", "rbo_p", "bootstrap", "permutations", "ci")},
        "min_rms": M.MIN_RMS, "excluded_rms": sorted(excluded), "conventions": M.CONVENTIONS,
        "benchmarks": {n: {"source": s.source, "accuracy": {rm: _r4(s.value(rm)) for rm in sorted(s.rms())}}
                       for n, s in benches.items()},
        "downstream": {n: {"source": s.source, "score": {rm: _r4(s.value(rm)) for rm in sorted(s.rms())}}
                       for n, s in downs.items()},
        "correlations": {b: {d: {"status": r["status"], "n_rms": r["n_rms"], "rms": r["rms"],
                                 **{m: {k: _r4(r[m][k]) for k in ("value", "ci_low", "ci_high", "p_value")}
                                    for m in M.METRICS}}
                             for d, r in per.items()} for b, per in results.items()},
    }


def run(params: dict, inputs: dict, out: dict) -> dict:
    """inputs: {"scores": {rm: scores Parquet}, "bon": BoN per-question Parquet or None}."""
    from tasks.artifacts import write_table
    from tasks.rm_labels import labels
    from tasks.runlog import write_metrics
    from tasks import schemas

    p, seed = check_params(params["correlation"]), params["common"]["seed"]
    benches = load_benchmarks(inputs.get("scores") or {}, p)
    downs = {"bon": load_bon(inputs.get("bon"), p)} if "bon" in p["downstream"] else {}
    if "rl" in p["downstream"]:
        from tasks.correlation.rl import load_rl

        downs["rl"] = load_rl(inputs.get("rl"))
    benches.update(load_external("baselines", p.get("baselines") or [], {"personalised", "generic", *benches}))
    downs.update(load_external("downstream_tables", p.get("downstream_tables") or [], set(DOWNSTREAM)))
    if not downs:
        raise ConfigError("correlation: nothing downstream to compare with: list 'bon' in correlation.downstream "
                          "or a file in correlation.downstream_tables")
    nulls = null_baselines(benches, params)   # left out unless correlation.include_null_baselines
    excluded = set(p.get("exclude_rms") or []) | (set() if p.get("include_null_baselines") else nulls)
    results, rows, points = defaultdict(dict), [], []
    for bn, bench in benches.items():
        for dn, down in downs.items():
            res, pts = pairing(bench, down, excluded, p, seed)
            results[bn][dn], points = res, points + pts
            rows += [{"benchmark": bn, "downstream": dn, "metric": m, **{k: res[m][k] for k in
                      ("value", "ci_low", "ci_high", "p_value", "status")}, "n_rms": res["n_rms"]} for m in M.METRICS]
    write_table([{k: r[k] for k in schemas.CORRELATION.names} for r in rows], out["correlation"], "correlation")
    shared = labels(params)
    points = [{**pt, "shares_llm_with": shared.get(pt["rm"], {}).get("shares_llm_with", "")} for pt in points]
    write_table(points, out["points"], "correlation_points")
    metrics = build_metrics(p, benches, downs, dict(results), excluded)
    scored = {rm for b in benches.values() if b.source == "scores" for rm in b.rms()} - excluded
    metrics.update(include_null_baselines=bool(p.get("include_null_baselines")), null_baselines=sorted(nulls),
                   shares_llm_with={rm: v["shares_llm_with"].split(", ") for rm, v in shared.items()
                                    if v["shares_llm_with"]},
                   not_bon_capable=sorted(scored - downs["bon"].rms()) if "bon" in downs else None)
    write_metrics(metrics, out["metrics"])
    plot(points, rows, out["plot"])
    return metrics


def _fmt(x, digits=3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def format_table(rows: list[dict]) -> str:
    """The correlation table (rows of data/correlation/correlation.parquet) as aligned text."""
    lines = [["benchmark", "downstream", "n", "metric", "value", "CI", "p", "status"]]
    for r in rows:
        ci = "-" if r["ci_low"] is None else f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]"
        lines.append([r["benchmark"], r["downstream"], str(r["n_rms"]), r["metric"], _fmt(r["value"]), ci,
                      _fmt(r["p_value"], 4), "" if r["status"] == "ok" else r["status"]])
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


def plot(points: list[dict], rows: list[dict], path) -> None:
    """One scatter per benchmark × downstream: accuracy against downstream score, RMs labelled."""
    from tasks.plots import plt, save

    cells = list(dict.fromkeys((r["benchmark"], r["downstream"]) for r in rows))   # the stage's order
    benches, downs = list(dict.fromkeys(b for b, _ in cells)), list(dict.fromkeys(d for _, d in cells))
    fig, axes = plt.subplots(max(1, len(benches)), max(1, len(downs)), squeeze=False, layout="constrained",
                             figsize=(4.2 * max(1, len(downs)), 3.4 * max(1, len(benches))))
    stat = {(r["benchmark"], r["downstream"], r["metric"]): r for r in rows}
    for (b, d), ax in ((c, axes[benches.index(c[0])][downs.index(c[1])]) for c in cells):
        mine = [pt for pt in points if (pt["benchmark"], pt["downstream"]) == (b, d)]
        ax.scatter([pt["accuracy"] for pt in mine], [pt["downstream_score"] for pt in mine], color="C0")
        for pt in mine:
            ax.annotate(pt["rm"], (pt["accuracy"], pt["downstream_score"]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
        rho, ndcg = stat[(b, d, "spearman")], stat[(b, d, "ndcg")]
        few = M.too_few(rho["n_rms"])
        ax.set_title(f"{b} vs {d} ({rho['n_rms']} RMs): "
                     + (few or f"rho {_fmt(rho['value'])}, NDCG {_fmt(ndcg['value'])}"), fontsize=9)
        ax.set_xlabel(f"{b} benchmark accuracy")
        ax.set_ylabel(f"{d} score")
    if not cells:
        axes[0][0].text(0.5, 0.5, "no benchmark x downstream pairing", ha="center", va="center")
        axes[0][0].set_axis_off()
    save(fig, path)
