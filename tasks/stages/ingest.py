"""The ingest stage: raw LaMP-QA rows -> questions, profiles, (reference) pairs, quarantine."""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from tasks.core.progress import bar as progress_bar

from tasks.core.errors import ConfigError, DataError, DataErrors
from tasks.stages.sources import CONFIGS, SOURCES, SPLITS, check_config, discover, read_rows
from tasks.core.validate import has_pairs, row_problems

LAYOUTS = ("auto", "lamp_qa", "rewardbench")


@dataclass
class IngestResult:
    questions: list[dict] = field(default_factory=list)
    profiles: list[dict] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    quarantine: list[dict] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)


def word_count(text: str) -> int:
    return len(text.split())


def first_per_domain(rows: list[dict], limit: int | None) -> list[dict]:
    """Cost control: the first `limit` rows of each domain (all when None), order kept."""
    if not limit:
        return rows
    seen: dict[str, int] = defaultdict(int)
    kept = []
    for r in rows:
        seen[r["domain"]] += 1
        if seen[r["domain"]] <= limit:
            kept.append(r)
    return kept


def pair_record(question_id, domain, split, chosen, rejected, generator) -> dict:
    cw, rw = word_count(chosen), word_count(rejected)
    return {"question_id": question_id, "domain": domain, "split": split, "chosen": chosen,
            "rejected": rejected, "generator": generator, "chosen_words": cw,
            "rejected_words": rw, "length_ratio": cw / rw if rw else float("inf")}


def resolve_sources(params: dict):
    configs = [check_config(c, "ingest.configs") for c in params["configs"]]
    for s in params["splits"]:
        if s not in SPLITS:
            raise ConfigError(f"ingest.splits: unknown split '{s}'; valid: {', '.join(SPLITS)}")
    layout = params.get("layout", "auto")
    if layout not in LAYOUTS:
        raise ConfigError(f"ingest.layout: unknown layout '{layout}'; valid: {', '.join(LAYOUTS)}")
    return SOURCES.lookup(params["source"], "ingest.source")(params, configs, params["splits"])


def prompt_sources(params: dict):
    """ingest.rl_prompts: a second source read for RL training prompts only (e.g. LaMP-QA's train questions
    beside the released test pairs), in its own splits. None = no second source."""
    rp = params.get("rl_prompts")
    if not rp:
        return [], None
    both = sorted(set(rp.get("splits") or ()) & set(params["splits"]))
    if both:
        raise ConfigError(f"ingest.rl_prompts.splits: '{both[0]}' is also in ingest.splits; read each split from "
                          "one source")
    try:
        return resolve_sources({**rp, "configs": params["configs"], "layout": "auto"}), rp.get("limit_per_split")
    except ConfigError as exc:   # the same checks as the main source's: name the key they are about
        raise ConfigError(str(exc).replace("ingest.", "ingest.rl_prompts.", 1)) from None


def ingest(sources, *, layout: str = "auto", on_error: str = "fail", limit_per_split: int | None = None,
           pair_source: str = "reference", prompts=((), None)) -> IngestResult:
    """Validate every row of every source; raise DataErrors (fail) or quarantine bad rows. prompts:
    (sources, limit) read for RL prompts only: question and profile kept, narrative and rubric dropped."""
    if on_error not in ("fail", "quarantine"):
        raise ConfigError(f"ingest.on_error: unknown value '{on_error}'; valid: fail, quarantine")
    out, errors, fatal = IngestResult(), [], []
    seen: dict[str, str] = {}
    bar = progress_bar(desc="ingest rows", unit="row")
    jobs = [(src, layout, limit_per_split, False) for src in sources]
    jobs += [(src, "lamp_qa", prompts[1], True) for src in prompts[0]]
    for src, src_layout, limit, prompts_only in jobs:
        try:
            _ingest_source(src, out, errors, seen, bar, src_layout, limit, pair_source, prompts_only)
        except DataError as exc:   # the file itself is unreadable: quarantine cannot keep it
            fatal.append(exc)
    bar.close()
    if fatal or (errors and on_error == "fail"):
        raise DataErrors(fatal + errors)
    return out


def _ingest_source(src, out, errors, seen, bar, layout, limit_per_split, pair_source, prompts_only=False):
    domain, kept, with_pairs = CONFIGS[src.config], 0, layout == "rewardbench"
    label, revision = src.label, None
    for raw in read_rows(src):
        label, revision = raw.file, raw.revision
        bar.update()
        if limit_per_split is not None and kept >= limit_per_split:
            break
        if raw.index == 0 and layout == "auto":
            with_pairs = has_pairs(raw.row) and not prompts_only
        row_id = raw.row.get("id") if isinstance(raw.row, dict) else None
        row_id = row_id if isinstance(row_id, str) else None
        problems = ([("", raw.error.message)] if raw.error
                    else row_problems(raw.row, with_pairs=with_pairs, prompts_only=prompts_only))
        if not problems and row_id in seen:
            problems = [("id", f"duplicate id, first seen at {seen[row_id]}")]
        if problems:
            bad = [DataError(raw.file, msg, row=raw.index, row_id=row_id, field=f or None)
                   for f, msg in problems]
            errors.extend(bad)
            raw_json = json.dumps(raw.row, ensure_ascii=True, default=str)  # escapes bad bytes
            out.quarantine.extend({"file": raw.file, "row": raw.index, "id": row_id,
                                   "field": e.field, "reason": e.message, "raw": raw_json} for e in bad)
            continue
        seen[row_id] = f"{raw.file} row {raw.index}"
        kept += 1
        _emit(out, raw.row, domain, src.split, with_pairs, pair_source, prompts_only)
    out.files.append({"file": label, "config": src.config, "split": src.split, "rows": kept,
                      "role": "rl_prompts" if prompts_only else "benchmark", **({"revision": revision} if revision else {})})


def validate_path(path: str, layout: str = "auto") -> list[str]:
    """`prbench validate`: every problem in a file or folder, one line each (empty = valid)."""
    try:
        ingest(discover(path, CONFIGS, SPLITS), layout=layout, on_error="fail")
    except DataErrors as exc:
        return [e.line() for e in exc.errors]
    except (DataError, ConfigError) as exc:
        return [str(exc)]
    return []


def _emit(out: IngestResult, row: dict, domain: str, split: str, with_pairs: bool, pair_source: str,
          prompts_only: bool = False):
    qid = row["id"]
    out.questions.append({   # an RL-prompt row keeps no narrative or rubric: nothing downstream can leak them
        "id": qid, "domain": domain, "split": split, "category": row["category"],
        "question": row["question"].strip(), "narrative": "" if prompts_only else row["narrative"],
        "rubric_aspects": [] if prompts_only else [{k: a[k] for k in ("aspect", "evidence", "reason")}
                                                   for a in row["rubric_aspects"]],
    })
    out.profiles.extend({"question_id": qid, "item_id": item["id"], "position": pos,
                         "category": item["category"], "text": item["text"]}
                        for pos, item in enumerate(row["profile"]))
    if with_pairs:
        out.pairs.append(pair_record(qid, domain, split, row["chosen"], row["rejected"],
                                     f"reference:{pair_source}"))


def ingest_metrics(res: IngestResult) -> dict:
    per = defaultdict(lambda: {"questions": 0, "profile_items": 0, "aspects": 0, "pairs": 0})
    for q in res.questions:
        m = per[f"{q['domain']}/{q['split']}"]
        m["questions"] += 1
        m["aspects"] += len(q["rubric_aspects"])
    domain_of = {q["id"]: f"{q['domain']}/{q['split']}" for q in res.questions}
    for p in res.profiles:
        per[domain_of[p["question_id"]]]["profile_items"] += 1
    for p in res.pairs:
        per[f"{p['domain']}/{p['split']}"]["pairs"] += 1
    for m in per.values():
        m["mean_profile_items"] = round(m.pop("profile_items") / max(m["questions"], 1), 2)
        m["mean_aspects"] = round(m.pop("aspects") / max(m["questions"], 1), 2)
    bad_rows = {(q["file"], q["row"]) for q in res.quarantine}
    return {
        "questions": len(res.questions),
        "profile_items": len(res.profiles),
        "pairs": len(res.pairs),
        "quarantined_rows": len(bad_rows),
        "rl_prompt_questions": sum(f["rows"] for f in res.files if f.get("role") == "rl_prompts"),
        "quarantine_reasons": dict(sorted(Counter(re.sub(r"\[\d+\]", "[]", q["field"] or "row")
                                                for q in res.quarantine).items())),
        "per_domain_split": dict(sorted(per.items())),
        "files": res.files,
        **revisions(res.files),
    }


def revisions(files: list[dict]) -> dict:
    """{"revision": {hub id: commit sha read}} when anything came from the hub (local files: DVC hashes them)."""
    read = {f["file"][len("hf://"):].split("@")[0]: f["revision"] for f in files if f.get("revision")}
    return {"revision": dict(sorted(read.items()))} if read else {}


def ingest_from_params(p: dict) -> IngestResult:
    sources, prompts = resolve_sources(p), prompt_sources(p)   # both checked before any row is read
    return ingest(sources, layout=p.get("layout", "auto"), on_error=p.get("on_error", "fail"),
                  limit_per_split=p.get("limit_per_split"), pair_source=p.get("pair_source", "reference"),
                  prompts=prompts)


def run(p: dict, out: dict, seed: int) -> dict:
    """Ingest stage end to end: read, validate, write every artifact atomically. Returns metrics.
    `halves` records which test questions score and which go downstream (tasks/core/halves.py)."""
    from tasks.core import halves
    from tasks.core.artifacts import write_table
    from tasks.core.runlog import write_metrics

    res = ingest_from_params(p)
    for name in ("questions", "profiles", "pairs", "quarantine"):
        write_table(getattr(res, name), out[name], name)
    write_table(halves.assign(res.questions, p.get("downstream_share") or 0, seed), out["halves"], "halves")
    metrics = ingest_metrics(res)
    write_metrics(metrics, out["metrics"])
    plot_profile_sizes(res, out["plot"])
    return metrics


def plot_profile_sizes(res: IngestResult, path) -> None:
    from tasks.core.plots import profile_sizes

    sizes = Counter(p["question_id"] for p in res.profiles)
    by_domain = defaultdict(list)
    for q in res.questions:
        by_domain[q["domain"]].append(sizes[q["id"]])
    profile_sizes(dict(by_domain), path)


# --- the stage as flows/stage.py runs it ------------------------------------------------------------

def stage_run(params: dict, inputs: dict, out: dict) -> dict:
    return run(params["ingest"], out, int(params["common"]["seed"]))


def source_key(s: dict):
    """Local files: their content hash; hub data is not hashable up front: its id (+ the params). A path that
    does not exist is the stage's error to report."""
    import os

    from tasks.core.artifacts import tree_hash

    if s["source"] == "files" and os.path.exists(s.get("path") or ""):
        return tree_hash([s["path"]])
    return f"{s.get('hub_id')}@{s.get('revision') or 'main'}" if s["source"] == "hub" else s.get("path")


def stage_cache_extra(params: dict, key: None) -> dict:
    """The second source (RL prompts) is no declared dep: its content, or its hub id, keys the cache."""
    p = params["ingest"]
    return {"rl_prompts": source_key(p["rl_prompts"]) if p.get("rl_prompts") else None}
