"""`prbench score`: one RM on a pairs file, a released-benchmark layout or a hub id, outside DVC —
the same per-item scores and leaderboard artifacts as the DAG, printed as a table."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from tasks.stages import ingest, leaderboard, profiles, score
from tasks.core import layout
from tasks.core.artifacts import read_table, write_json, write_table
from tasks.core import numerics, results
from tasks.core.errors import ConfigError
from tasks.core.progress import bar as progress_bar
from tasks.models.resources import Resources
from tasks.models.rms.registry import make_rm
from tasks.models.strategies import check

OURS = "personalised"   # the benchmark this module scores (another one: tasks/stages/benchmarks/cli.py)

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


def _ingest_released(data: str, params: dict) -> dict:
    """Ingest a released-benchmark layout (files or hub id) once: the tables go to the LLM/embedding cache
    folder (keyed by the data and the ingest params), so a rerun or another RM reuses them and no results
    folder gets a copy."""
    import hashlib
    import json

    from tasks.core.artifacts import tree_hash

    p = {**params["ingest"], "layout": "rewardbench", "splits": ["test"], "pair_source": Path(data).name or data}
    p.update({"source": "files", "path": data} if data_source(data) == "files" else {"source": "hub", "hub_id": data})
    if p["source"] == "hub":   # read at the sha main names now: a moved main is new data, never a stale cache
        from tasks.stages import hub

        p["revision"] = hub.resolve("--data", data, p.get("revision"))
    content = tree_hash([Path(data)]) if p["source"] == "files" else p["revision"]
    key = hashlib.sha256(json.dumps([content, p], sort_keys=True, default=str).encode()).hexdigest()[:16]
    work = Path(params["common"]["cache_dir"]) / "score-data" / key
    out_i = {k: str(work / v) for k, v in layout.INGEST.items()}
    if not all(Path(out_i[k]).exists() for k in ("questions", "profiles", "pairs")):
        ingest.run(p, out_i, int(params["common"]["seed"]))
    return {"questions": out_i["questions"], "profiles": out_i["profiles"], "profile_context": None,
            "pairs": out_i["pairs"], "inferred_rubrics": None}


def resolve_data(data: str | None, params: dict) -> dict:
    project = {"questions": layout.INGEST["questions"], "profile_context": layout.PROFILES["profile_context"],
               "inferred_rubrics": layout.RUBRICS["inferred_rubrics"]}
    if data is None:
        data = layout.PAIRS["selected_pairs"]
    if data.endswith(".parquet") and Path(data).is_file() and "question_id" in pq.read_schema(data).names:
        missing = [v for k, v in project.items() if k != "inferred_rubrics" and not Path(v).exists()]
        if missing:
            raise ConfigError(f"--data {data}: a pairs artifact needs the project's {missing} (run `dvc repro profiles`)")
        return {**project, "pairs": data}
    return _ingest_released(data, params)


def select_pairs(pairs: list[dict], questions: dict, params: dict, limit: int | None) -> list[dict]:
    """What the DAG's score stage scores (scoring.splits, scoring.per_domain_limit), then the first
    `limit` of those (--limit: a quick try)."""
    s = params["scoring"]
    kept = [p for p in pairs if p["split"] in s["splits"] and p["question_id"] in questions]
    kept = ingest.first_per_domain(kept, s.get("per_domain_limit"))
    return kept[:limit] if limit else kept


def _ranked_texts(path: str, params: dict, qids: set[str], fidelity: str) -> dict[str, str]:
    """The project's ranked posts laid out as `fidelity` says (--fidelity other than the pipeline's)."""
    from tasks.stages.rubrics import top_items

    p = params["profiles"]
    ranked = [r for r in read_table(path, "ranked_profile").to_pylist() if r["question_id"] in qids]
    items = top_items(ranked, min(p.get("context_k") or p["k"], p["k"]))
    return {q: profiles.profile_block(fidelity, items.get(q, []), p["max_words_per_post"]) for q in qids}


def profile_texts(src: dict, params: dict, res: Resources, qids: set[str], built_as: str | None = None) -> dict[str, str]:
    """question id -> the raw_profile context, for the scored questions only: a released layout ranks just
    their posts (through the embedding cache), not every question's. `built_as`: the fidelity the project's
    profile context was built under; another one re-lays the project's ranked posts."""
    if src["profile_context"] and built_as not in (None, res.fidelity):
        return _ranked_texts(layout.PROFILES["ranked_profile"], params, qids, res.fidelity)
    if src["profile_context"]:
        return {r["question_id"]: r["profile_text"]
                for r in read_table(src["profile_context"], "profile_context").to_pylist() if r["question_id"] in qids}
    p = params["profiles"]
    questions = [q for q in read_table(src["questions"], "questions").to_pylist() if q["id"] in qids]
    posts = [r for r in read_table(src["profiles"], "profiles").to_pylist() if r["question_id"] in qids]
    needs = profiles.RETRIEVERS.lookup(p["retriever"], "profiles.retriever").needs_encoder
    _, contexts = profiles.rank_profiles(questions, posts, retriever=p["retriever"], k=p["k"],
                                         max_words_per_post=p["max_words_per_post"],
                                         encoder=res.encoder(p["encoder"]) if needs else None,
                                         context_k=p.get("context_k"), fidelity=res.fidelity)
    return {c["question_id"]: c["profile_text"] for c in contexts}


def score_all(rm, pairs: list[dict], questions: dict, contexts: dict, chunk: int) -> list[dict]:
    """Every strategy's rows, in fixed slices of `chunk` pairs (scale.chunk_size: the DAG's batch mates),
    with a progress bar over the answers."""
    from tasks.models import chunks

    rows = []
    with progress_bar(total=2 * len(pairs) * len(contexts), desc=f"score {rm.name}", unit="answer") as bar:
        for strategy, context in contexts.items():
            for a, b in chunks.slices(len(pairs), chunk):
                rows += score.score_rows(rm, "personalised", strategy, pairs[a:b], questions, context)
                bar.update(2 * (b - a))
    return rows


def quick_score(params: dict, *, entry: dict, name: str, data: str | None, strategies: list[str], out: Path,
                limit: int | None = None, source: str = "params.yaml", fidelity: str | None = None) -> str:
    """Score, write out/{scores,leaderboard}.parquet + out/results.json (once, at the end), return the
    printable table. `source`: where the params came from (recorded); `fidelity` (None = the params'
    common.fidelity): what the RM is shown and how."""
    from tasks.core.fidelity import of
    from tasks.models import chunks
    from tasks.models.strategies import contexts as build_contexts

    built_as = of(params)
    if fidelity is not None:
        params = {**params, "common": {**params["common"], "fidelity": of({"common": {"fidelity": fidelity}})}}
    res = Resources(params)
    rm = make_rm(name, entry, res)
    src = resolve_data(data, params)
    if "planner" in strategies and not (src["inferred_rubrics"] and Path(src["inferred_rubrics"]).exists()):
        raise ConfigError("--strategy planner needs the rubrics stage's output for these questions; "
                          "run `dvc repro rubrics` or leave planner out")
    questions = {q["id"]: q for q in read_table(src["questions"], "questions").to_pylist()}
    pairs = select_pairs(_pairs_from_file(Path(src["pairs"])), questions, params, limit)
    if not pairs:
        raise ConfigError(f"--data: no pairs in splits {params['scoring']['splits']}")
    qids = {p["question_id"] for p in pairs}
    profile_text = profile_texts(src, params, res, qids, built_as) if "raw_profile" in strategies else {}
    inferred = ({r["question_id"]: r["aspects"] for r in read_table(src["inferred_rubrics"], "inferred_rubrics").to_pylist()}
                if "planner" in strategies else {})
    contexts = {s: build_contexts(s, questions, profile_text, inferred, res.fidelity) for s in check(strategies)}
    rows = score_all(rm, pairs, questions, contexts, chunks.chunk_size(params))
    lb = leaderboard.leaderboard_rows(rows, params["leaderboard"], params["common"]["seed"])
    write_table(rows, out / "scores.parquet", "scores")
    write_table(lb, out / "leaderboard.parquet", "leaderboard")
    lp = params["leaderboard"]
    config = {"strategies": list(contexts), "limit": limit, "per_domain_limit": params["scoring"].get("per_domain_limit"),
              "splits": params["scoring"]["splits"], "tie_policy": lp["tie_policy"], "bootstrap": lp["bootstrap"],
              "ci": lp["ci"], "seed": params["common"]["seed"], "fidelity": res.fidelity}
    doc = results.document(benchmark=OURS, model={"name": name, "entry": entry, "identity": rm.identity(),
                                                  "scoring": rm.numerics()},
                           data=data or layout.PAIRS["selected_pairs"], params=source, config=config, n=len(pairs),
                           results=leaderboard.leaderboard_metrics(lb, rows, lp), run=res.stats(),
                           numerics=numerics.describe())
    write_json(doc, out / results.FILE)
    return format_table(lb, params["scoring"].get("per_domain_limit"), limit, res.fidelity, rm.numerics())


def _scored_with(numerics: dict) -> str:
    """'scores in bfloat16 on cuda (sdpa attention), batch-invariant' for the table's title."""
    if not numerics:
        return ""
    mode = "batch-invariant" if numerics.get("batch_invariant") else "length-sorted batches"
    reward = (f"; {numerics['reward']} reward vs {numerics['reference']}, {numerics['normalize']} over the answer's "
              "tokens" if numerics.get("reward") else "")
    return (f"; scores in {numerics['dtype']} on {numerics['device']} ({numerics['attn_implementation']} attention), "
            f"{mode}{reward}")


def format_table(lb: list[dict], per_domain_limit: int | None, limit: int | None, fidelity: str = "corrected",
                 numerics: dict | None = None) -> str:
    """Per RM x strategy: micro accuracy [CI], n, ties, invalid, truncated, the decisions within the dtype's
    resolution (docs/statistics.md#leaderboard); then one row per domain."""
    dtype = next((r.get("score_dtype") for r in lb if r.get("score_dtype")), None)
    head = ["rm / strategy", "domain", "accuracy [95% CI]", "n", "ties", "invalid", "truncated",
            f"decided within {dtype} resolution" if dtype else "within resolution"]
    lines = [head]
    order = {leaderboard.MICRO: 0, leaderboard.MACRO: 1}
    for r in sorted(lb, key=lambda r: (r["rm"], leaderboard._strategy_key(r["strategy"]),
                                       order.get(r["domain"], 2), r["domain"])):
        acc = "-" if r["accuracy"] is None else leaderboard._fmt(r["accuracy"], r["ci_low"], r["ci_high"])
        lines.append([f"{r['rm']} / {leaderboard.label(r['strategy'])}" if r["domain"] == leaderboard.MICRO else "",
                      r["domain"], acc,
                      str(r["n"]), str(r["ties"]), str(r["invalid"]), str(r["truncated"]),
                      "n/a" if r.get("within_resolution") is None else str(r["within_resolution"])])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    scope = ", ".join(x for x in (f"first {per_domain_limit} per domain (scoring.per_domain_limit)"
                                  if per_domain_limit else "", f"first {limit} (--limit)" if limit else "") if x)
    title = (f"accuracy, tie policy {lb[0]['tie_policy'] if lb else '?'}; pairs: {scope or 'all'}; "
             f"fidelity {fidelity}{_scored_with(numerics or {})}")
    return "\n".join([title, *("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)])
