"""The two sides of a correlation, read from the stage outputs and external tables.

A Side holds, per RM, either per-question values (benchmark credit, downstream judge score), so that
resampling questions can recompute it, or one fixed number (an external table). A benchmark has two
predictors of downstream quality: its accuracy (the mean credit) and its worst-domain accuracy (the
lowest per-domain mean, what PPE found predicts best); both are recomputed in every resample."""
from __future__ import annotations

import csv
import math
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tasks.downstream.correlation import metrics as M
from tasks.core.errors import ConfigError, DataError, DataErrors

EXTERNAL = {"baselines": ("benchmark", "accuracy"), "downstream_tables": ("method", "score")}
PREDICTORS = ("accuracy", "worst_domain")   # what of a benchmark predicts downstream


@dataclass
class Side:
    """One benchmark or downstream: per RM either per-question values or one fixed number."""
    name: str
    source: str
    per_question: dict[str, dict[str, float]] = field(default_factory=dict)
    fixed: dict[str, float] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)    # RM -> its kind, where the side knows it (scores)
    domains: dict[str, str] = field(default_factory=dict)  # question id -> domain (benchmarks from scores)
    rule: str = ""   # a published score's rule (correlation/published.py)

    def rms(self) -> set[str]:
        return set(self.per_question) | set(self.fixed)

    def predictors(self) -> tuple[str, ...]:
        """worst_domain needs per-question values in more than one domain."""
        return PREDICTORS if self.per_question and len(set(self.domains.values())) > 1 else PREDICTORS[:1]

    def value(self, rm: str, predictor: str = "accuracy") -> float:
        if rm in self.fixed:
            return self.fixed[rm]
        values = self.per_question[rm]
        if predictor == "worst_domain":
            by_domain = defaultdict(list)
            for q, v in values.items():
                by_domain[self.domains[q]].append(v)
            return float(min(np.mean(v) for v in by_domain.values()))
        return float(np.mean(list(values.values())))

    def draws(self, rms: list[str], questions: list[str], weights: np.ndarray, predictor: str = "accuracy") -> np.ndarray:
        """resamples × RMs: fixed numbers repeat; per-question values are re-averaged per resample
        (worst_domain: per domain, then the lowest domain mean of the resample)."""
        if all(rm in self.fixed for rm in rms):
            return np.tile([self.fixed[rm] for rm in rms], (len(weights), 1))
        col = {q: j for j, q in enumerate(questions)}
        x = np.full((len(rms), len(questions)), np.nan)
        for i, rm in enumerate(rms):
            for q, v in self.per_question.get(rm, {}).items():
                x[i, col[q]] = v
        if predictor != "worst_domain":
            return M.resampled_means(x, weights)
        per_domain = []
        for d in sorted(set(self.domains.values())):
            cols = [j for q, j in col.items() if self.domains.get(q) == d]
            per_domain.append(M.resampled_means(x[:, cols], weights[:, cols]))
        with warnings.catch_warnings():   # a domain not drawn in a resample is NaN there, and skipped
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmin(np.stack(per_domain), axis=0)


def load_benchmarks(score_paths: dict, p: dict) -> dict[str, Side]:
    """Per-question credit (1 right, 0 wrong, ties per tie_policy, invalid wrong) per benchmark and RM.
    `split: null` = every split, as in the leaderboard."""
    from tasks.core.artifacts import read_table
    from tasks.stages.leaderboard import credits

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
        sides[b].domains.update((r["question_id"], r["domain"] or "unknown") for r in rows)
    return sides


def load_list_benchmarks(folders: dict, p: dict) -> dict[str, Side]:
    """The `benchmarks:` entries' per-item credit (tasks/models/listwise: ties per tie_policy, a tie worth its
    tie_credit under `half`), one Side per benchmark; {benchmark: data/bench_scores/<b>}. Scored under
    correlation.strategy where the benchmark has user history, else `none`. Item ids are prefixed with
    the benchmark's name, so two benchmarks never share a resampled question."""
    from tasks.core.artifacts import read_table
    from tasks.models.listwise import credit

    sides = {}
    for name, folder in sorted(folders.items()):
        rows = [r for f in sorted(Path(folder).glob("*.parquet")) for r in read_table(f, "list_scores").to_pylist()]
        strategy = p["strategy"] if any(r["strategy"] == p["strategy"] for r in rows) else "none"
        side = Side(name, "bench_scores")
        for r in rows:
            if r["strategy"] != strategy:
                continue
            q = f"{name}:{r['item_id']}"
            side.per_question.setdefault(r["rm"], {})[q] = float(credit(r, p["tie_policy"]))
            side.kinds[r["rm"]] = r["rm_kind"]
            side.domains[q] = r["subset"] or "all"
        sides[name] = side
    return sides


def null_baselines(benches: dict[str, Side], params: dict) -> set[str]:
    """RMs of a null-baseline kind (length-only, random): reference points, not contestants.
    By kind, from the scores (or the params entry of an RM without scores), never by name."""
    from tasks.core.rm_labels import NULL_BASELINE_KINDS

    kinds = {rm: (e or {}).get("kind") for rm, e in ((params.get("scoring") or {}).get("rms") or {}).items()}
    for side in benches.values():
        kinds.update(side.kinds)
    return {rm for rm, kind in kinds.items() if kind in NULL_BASELINE_KINDS}


def read_downstream(path: str | None, name: str, stage: str, expected: str, columns: tuple[str, ...]) -> list[dict]:
    """The rows of a downstream stage's per-question table (one call per downstream method: BoN, RL), with
    one clear error when the stage has not run or a column is missing."""
    import pyarrow.parquet as pq

    if not path or not Path(path).exists():
        raise ConfigError(f"correlation.downstream: '{name}' needs {expected} (run the {stage} stage first)")
    table = pq.read_table(path)
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise DataError(path, f"missing column(s) {', '.join(missing)}")
    return table.select(list(columns)).to_pylist()


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
