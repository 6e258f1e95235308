"""`prbench score`: one RM on a pairs file, a released-benchmark layout or a hub id, outside DVC —
the same per-item scores and leaderboard artifacts as the DAG, printed as a table."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from tasks import ingest, layout, leaderboard, profiles, score
from tasks.artifacts import read_table, write_json, write_table
from tasks.errors import ConfigError
from tasks.resources import Resources
from tasks.rms.registry import make_rm
from tasks.strategies import check, load_contexts


def _pairs_from_file(path: Path) -> list[dict]:
    names = pq.read_schema(path).names
    if "valid" in names:
        return read_table(path, "judged_pairs").to_pylist()
    if "question_id" in names:   # an ingest pairs table: not judged, all kept
        return [{**p, "source": "reference", "judge_chosen": None, "judge_rejected": None, "valid": True}
                for p in read_table(path, "pairs").to_pylist()]
    raise ConfigError(f"{path}: not a pairs artifact (expected data/pairs/selected.parquet or data/ingest/pairs.parquet)")


def data_source(data: str) -> str:
    """'files' or 'hub' for a --data value; a local-looking path that does not exist is an error, never
    looked up on the hub (a hub id is owner/name, and its owner is no folder here)."""
    import re

    if Path(data).exists():
        return "files"
    owner = data.split("/")[0]
    if re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", data) and not Path(owner).exists() \
            and Path(data).suffix not in (".parquet", ".json", ".jsonl"):
        return "hub"
    raise ConfigError(f"--data: no such file or folder '{data}'")


def _ingest_released(data: str, params: dict, work: Path) -> dict:
    """Ingest a released-benchmark layout (files or hub id) and rank its profiles into `work`."""
    p = {**params["ingest"], "layout": "rewardbench", "splits": ["test"], "pair_source": Path(data).name or data}
    p.update({"source": "files", "path": data} if data_source(data) == "files" else {"source": "hub", "hub_id": data})
    out_i = {k: str(work / v) for k, v in layout.INGEST.items()}
    ingest.run(p, out_i)
    out_p = {k: str(work / v) for k, v in layout.PROFILES.items()}
    profiles.run(params["profiles"], params["common"], {"questions": out_i["questions"], "profiles": out_i["profiles"]},
                 out_p)
    return {"questions": out_i["questions"], "profile_context": out_p["profile_context"], "pairs": out_i["pairs"],
            "inferred_rubrics": None}


def resolve_data(data: str | None, params: dict, work: Path) -> dict:
    project = {"questions": layout.INGEST["questions"], "profile_context": layout.PROFILES["profile_context"],
               "inferred_rubrics": layout.RUBRICS["inferred_rubrics"]}
    if data is None:
        data = layout.PAIRS["selected_pairs"]
    if data.endswith(".parquet") and Path(data).is_file() and "question_id" in pq.read_schema(data).names:
        missing = [v for k, v in project.items() if k != "inferred_rubrics" and not Path(v).exists()]
        if missing:
            raise ConfigError(f"--data {data}: a pairs artifact needs the project's {missing} (run `dvc repro profiles`)")
        return {**project, "pairs": data}
    return _ingest_released(data, params, work)


def quick_score(params: dict, *, entry: dict, name: str, data: str | None, strategies: list[str], out: Path) -> str:
    """Score, write out/{scores,leaderboard}.parquet + out/metrics.json, return the printable table."""
    res = Resources(params)
    rm = make_rm(name, entry, res)
    src = resolve_data(data, params, out / "work")
    if "planner" in strategies and not (src["inferred_rubrics"] and Path(src["inferred_rubrics"]).exists()):
        raise ConfigError("--strategy planner needs the rubrics stage's output for these questions; "
                          "run `dvc repro rubrics` or leave planner out")
    questions = {q["id"]: q for q in read_table(src["questions"], "questions").to_pylist()}
    pairs = [p for p in _pairs_from_file(Path(src["pairs"])) if p["split"] in params["scoring"]["splits"]
             and p["question_id"] in questions]
    if not pairs:
        raise ConfigError(f"--data: no pairs in splits {params['scoring']['splits']}")
    rows = []
    for strategy in check(strategies):
        context = load_contexts(strategy, src["questions"], src["profile_context"], src["inferred_rubrics"])
        rows += score.score_rows(rm, "personalised", strategy, pairs, questions, context)
    write_table(rows, out / "scores.parquet", "scores")
    lb = leaderboard.leaderboard_rows(rows, params["leaderboard"], params["common"]["seed"])
    write_table(lb, out / "leaderboard.parquet", "leaderboard")
    write_json({"rm": name, "entry": entry, "identity": rm.identity(), "data": data or layout.PAIRS["selected_pairs"],
                **leaderboard.leaderboard_metrics(lb, rows, params["leaderboard"]), "run": res.stats()},
               out / "metrics.json")
    return leaderboard.format_table(lb)
