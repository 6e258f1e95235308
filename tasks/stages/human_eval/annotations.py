"""Annotators' files back in: CSV, JSONL and Label Studio JSON exports from any number of
annotators, validated row by row (one line per problem, naming file, row and field), then
unblinded with the key."""
from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tasks.core.errors import ConfigError, DataError, DataErrors
from tasks.stages.human_eval import HUMAN, RATING_FIELDS, parse_score

SUPPORTED = (".csv", ".jsonl", ".json")


@dataclass
class Row:
    """One annotator's ratings of one item, as read; nothing checked yet."""
    file: str
    row: int
    annotator: str
    item_id: object
    values: dict               # rating field -> raw value
    raw: str
    prefix: str = ""           # where the ratings sit inside the row (Label Studio: "annotations[j].")
    error: str = ""            # the row itself could not be read


@dataclass
class Imported:
    ratings: list[dict] = field(default_factory=list)
    quarantine: list[dict] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)   # blank rows, cancelled annotations, repeats


def annotation_files(raw_dir) -> list[Path]:
    raw = Path(raw_dir)
    return sorted(p for p in raw.rglob("*") if p.is_file() and not p.name.startswith(".")) if raw.is_dir() else []


def _flat(file, i, rec, default_annotator) -> Row:
    if not isinstance(rec, dict):
        return Row(file, i, default_annotator, None, {}, json.dumps(rec, default=str), error="not an object")
    who = str(rec.get("annotator") or "").strip() or default_annotator
    values = {k: rec[k] for k in RATING_FIELDS if k in rec}
    return Row(file, i, who, rec.get("item_id"), values, json.dumps(rec, ensure_ascii=True, default=str))


def _labelstudio_user(ann: dict) -> str:
    who = ann.get("completed_by")   # a user id, or {id, email} in some exports
    return str(who.get("email") or f"ls-user-{who.get('id')}") if isinstance(who, dict) else f"ls-user-{who}"


def _labelstudio(file, i, task, skipped) -> list[Row]:
    data = task.get("data") if isinstance(task.get("data"), dict) else {}
    rows = []
    for j, ann in enumerate(task.get("annotations") or task.get("completions") or []):
        if ann.get("was_cancelled"):
            skipped["cancelled"] += 1
            continue
        values = {r.get("from_name"): (r.get("value") or {}).get("rating")
                  for r in ann.get("result") or [] if r.get("type") == "rating"}
        rows.append(Row(file, i, _labelstudio_user(ann), data.get("item_id"), values,
                        json.dumps({"data": {"item_id": data.get("item_id")}, "annotation": ann}, default=str),
                        prefix=f"annotations[{j}]."))
    return rows


def read_file(path: Path, skipped: Counter) -> tuple[str, list[Row]]:
    """(format, rows). An unreadable file raises one DataError: no row of it can be trusted."""
    file, stem, ext = str(path), path.stem, path.suffix.lower()
    if ext not in SUPPORTED:
        raise DataError(file, f"unsupported file type; expected {', '.join(SUPPORTED)} (Label Studio JSON export)")
    try:
        text = path.read_text(encoding="utf-8-sig")
        if ext == ".csv":
            reader = csv.DictReader(text.splitlines())
            if "item_id" not in (reader.fieldnames or []):
                raise DataError(file, "unreadable: no 'item_id' column in the header")
            return "csv", [_flat(file, i, rec, stem) for i, rec in enumerate(reader)]
        if ext == ".jsonl":
            rows = []
            for i, line in enumerate(x for x in text.splitlines() if x.strip()):
                try:
                    rows.append(_flat(file, i, json.loads(line), stem))
                except json.JSONDecodeError as exc:
                    rows.append(Row(file, i, stem, None, {}, json.dumps(line), error=f"not JSON: {exc.msg}"))
            return "jsonl", rows
        data = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, csv.Error, OSError) as exc:
        raise DataError(file, f"unreadable: {exc}") from None
    if not isinstance(data, list):
        raise DataError(file, "unreadable: expected a JSON list (a Label Studio export or a list of records)")
    if any(isinstance(t, dict) and ("annotations" in t or "completions" in t) for t in data):
        return "labelstudio", [r for i, t in enumerate(data) if isinstance(t, dict)
                               for r in _labelstudio(file, i, t, skipped)]
    return "json", [_flat(file, i, rec, stem) for i, rec in enumerate(data)]


def _blank(v) -> bool:
    return v is None or (isinstance(v, str) and not v.strip())


def check_row(r: Row, key: dict) -> tuple[list[dict], list[tuple[str, str]]]:
    """(ratings, problems as (field, message)); a row with any problem gives no rating."""
    if r.error:
        return [], [("", r.error)]
    item = str(r.item_id).strip() if not _blank(r.item_id) else ""
    problems = [] if item in key else [("item_id", f"unknown item id '{item}' (not in the unblinding key)"
                                        if item else "missing item id")]
    problems += [(r.prefix + f, "not a rating control of this form") for f in r.values if f not in RATING_FIELDS]
    ratings = []
    for f, (answer, dim) in RATING_FIELDS.items():
        if _blank(r.values.get(f)):
            problems.append((r.prefix + f, "missing rating"))
            continue
        try:
            score = parse_score(r.values[f])
        except ValueError as exc:
            problems.append((r.prefix + f, str(exc)))
            continue
        ratings.append({"annotator": r.annotator, "item_id": item, "answer": answer, "dimension": dim,
                        "score": score, "source": r.file, "source_row": r.row, "field": r.prefix + f, "raw": r.raw})
    return ([] if problems else ratings), problems


def _report(errors: list | None, quarantine: list, file, row, row_id, fld, message, raw) -> None:
    """One problem: an error line (unless errors is None) and a quarantine row."""
    if errors is not None:
        errors.append(DataError(file, message, row=row, row_id=row_id, field=fld or None))
    quarantine.append({"file": file, "row": row, "id": row_id, "field": fld or None, "reason": message, "raw": raw})


def drop_conflicts(ratings: list[dict], errors: list, quarantine: list, skipped: Counter) -> list[dict]:
    """The same (annotator, item, answer, dimension) twice: kept once when equal; when the values
    differ neither can be trusted, so every copy goes to quarantine (one error line per repeat)."""
    groups = defaultdict(list)
    for r in ratings:
        groups[(r["annotator"], r["item_id"], r["answer"], r["dimension"])].append(r)
    kept = []
    for (who, item, _, _), (first, *rest) in groups.items():
        if all(r["score"] == first["score"] for r in rest):
            kept.append(first)
            if rest:
                skipped["repeated_ratings"] += len(rest)
            continue
        for r in (first, *rest):
            msg = (f"annotator '{who}' rated this twice: {r['score']} here vs {first['score']} in "
                   f"{first['source']} row {first['source_row']}" if r is not first
                   else f"annotator '{who}' rated this again later with a different score")
            _report(errors if r is not first else None, quarantine, r["source"], r["source_row"], item,
                    r["field"], msg, r["raw"])
    return kept


def unblind(ratings: list[dict], key: dict, kind: str = HUMAN) -> list[dict]:
    out = []
    for r in ratings:
        k = key[r["item_id"]]
        out.append({"annotator": r["annotator"], "annotator_kind": kind, "item_id": r["item_id"],
                    "question_id": k["question_id"], "domain": k["domain"], "split": k["split"],
                    "answer": r["answer"], "side": "chosen" if r["answer"] == k["chosen_answer"] else "rejected",
                    "dimension": r["dimension"], "score": r["score"], "source": r["source"],
                    "source_row": r["source_row"]})
    return out


def import_annotations(raw_dir, key_path, on_error: str = "fail") -> Imported:
    """Every file under raw_dir, validated and unblinded. fail: raise every problem at once;
    quarantine: keep the good rows and report the rest. An unreadable file stops both."""
    from tasks.core.artifacts import read_table

    if on_error not in ("fail", "quarantine"):
        raise ConfigError(f"human_eval.on_error: unknown value '{on_error}'; valid: fail, quarantine")
    out, files = Imported(), annotation_files(raw_dir)
    if not files:
        return out
    if not Path(key_path).exists():
        raise ConfigError(f"{raw_dir} holds annotations but the unblinding key {key_path} does not exist "
                          "(`prbench human-eval export` writes it)")
    key = {k["item_id"]: k for k in read_table(key_path, "human_eval_key").to_pylist()}
    errors, fatal, good = [], [], []
    for path in files:
        try:
            fmt, rows = read_file(path, out.skipped)
        except DataError as exc:
            fatal.append(exc)
            continue
        rated = 0
        for r in rows:
            if not r.error and all(_blank(v) for v in r.values.values()) and not set(r.values) - set(RATING_FIELDS):
                out.skipped["blank_rows"] += 1   # an item this annotator did not rate
                continue
            ratings, problems = check_row(r, key)
            row_id = None if _blank(r.item_id) else str(r.item_id)
            for fld, msg in problems:
                _report(errors, out.quarantine, r.file, r.row, row_id, fld, msg, r.raw)
            good += ratings
            rated += bool(ratings)
        out.files.append({"file": str(path), "format": fmt, "rows": len(rows), "rated": rated,
                          "annotators": sorted({r.annotator for r in rows})})
    kept = drop_conflicts(good, errors, out.quarantine, out.skipped)
    if fatal or (errors and on_error == "fail"):
        raise DataErrors(fatal + errors)
    out.ratings = unblind(kept, key)
    return out
