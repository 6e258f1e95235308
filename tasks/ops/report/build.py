"""Render the report page: the run page from the stage outputs (the `report` stage) and the pages'
shared Jinja2 environment. One self-contained file: CSS, script and charts inline, nothing fetched."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jinja2

from tasks.core import layout
from tasks.core.artifacts import file_hash, write_json, write_text
from tasks.core.rm_labels import NULL_BASELINE, POSITIVE_CONTROL, role
from tasks.ops.report import benchmarks, board, downstream, explain, explorer, headline, methods, provenance
from tasks.ops.report.sources import DATASET, Sources

TEMPLATES = Path(__file__).resolve().parent / "templates"


def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def render(template: str, context: dict) -> str:
    return environment().get_template(template).render(**context)


def _shown(v) -> str:
    return "(absent)" if v is provenance.MISSING else json.dumps(v, sort_keys=True, ensure_ascii=False)


def provenance_context(params: dict, src: Sources, code_version: str, machines: list[dict] | None = None) -> dict:
    refs = provenance.load_references(src.prefixed("reference"))
    diffs = provenance.params_differences(params, refs)
    score_metrics = {rm: src.json(f"score_metrics:{rm}") for rm in src.prefixed("score_metrics")}
    dataset = {n: src.inputs[n] for n in DATASET if src.has(n)}
    return {"code_version": code_version, "code_paths": layout.REPORT_CODE_VERSION,
            "params_hash": hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest(),
            "references": [{"label": label, "path": path,
                            "differing": sum(d["references"][label] != d["run"] for d in diffs)}
                           for label, path in src.prefixed("reference").items()],
            "differences": [{"key": d["key"], "run": _shown(d["run"]),
                             "references": [_shown(d["references"][label]) for label in refs]} for d in diffs],
            "rms": provenance.rm_rows(params["scoring"]["rms"], params.get("llms") or {}, score_metrics,
                                      src.json("train_rm_metrics")), "rms_open": board.MAX_RMS_SHOWN,   # more: folded
            "dataset": provenance.dataset_hash(dataset) if dataset else None,
            "revisions": provenance.revisions(src.json("ingest_metrics"),
                                              {b: src.json(f"bench_metrics:{b}") for b in src.prefixed("bench_metrics")}),
            "packages": provenance.package_versions(),
            "numerics": provenance.numerics(machines),
            "inputs": [{"name": n, "path": p, "sha256": file_hash(p)} for n, p in sorted(src.inputs.items())]}


def run_context(params: dict, inputs: dict, code_version: str, machines: list[dict] | None = None) -> dict:
    """Everything the run page shows, as text and pixel positions; sections without inputs are None.
    `machines`: runs/numerics/ records, for a page outside DVC only (`prbench report`)."""
    src = Sources(inputs)
    rms = params["scoring"]["rms"]
    lb_rows, lb_metrics = src.rows("leaderboard"), src.json("leaderboard_metrics")
    roles = {rm: role(e) for rm, e in rms.items()}
    controls = {rm for rm, r in roles.items() if r == POSITIVE_CONTROL}   # the positive-control ladder
    nulls = {rm for rm, r in roles.items() if r == NULL_BASELINE}          # length-only and random scorers
    lboard = board.leaderboard(lb_rows or [], src.columns("leaderboard"), lb_metrics, controls, nulls) if lb_metrics \
        else None
    if lboard:
        from tasks.core.fidelity import of

        lboard["fidelity"] = of(params)   # what the RMs were shown and how: prbench's or the release's
    return {
        "title": (params.get("report") or {}).get("title") or "prbench report",
        "mode": "run",
        "headline": headline.headline(lboard, rms) if lboard else None,
        "leaderboard": lboard,
        "heatmaps": board.heatmaps(lb_rows, params.get("leaderboard", {}).get("heatmap_strategy"), nulls) if lb_rows
        else None,
        "explain": explain.section(src.json("explain_metrics"), rms, params.get("leaderboard", {}).get("heatmap_strategy")),
        "validity": downstream.validity(src.json("pairs_metrics"), src.json("generic_pairs_metrics"), params),
        "human": downstream.human_eval(src.json("human_eval_metrics")),
        "downstream": methods.sections(src, params),   # one section per downstream method (its registry)
        "correlation": downstream.correlation(src.rows("correlation"), src.rows("correlation_points"),
                                              src.json("correlation_metrics")),
        "benchmark_matrix": benchmarks.matrix(src.json("correlation_metrics")),
        "benchmark_boards": benchmarks.leaderboards({b: json.loads(Path(p).read_text(encoding="utf-8"))
                                                     for b, p in src.prefixed("bench_metrics").items()}),
        "data": downstream.data_card(src.json("ingest_metrics"), params),
        "provenance": provenance_context(params, src, code_version, machines),
    }


def run(params: dict, inputs: dict, code_version: str, out: dict) -> dict:
    """The report stage: report/index.html from the outputs named in `inputs` ({name: path})."""
    context = run_context(params, inputs, code_version)
    html = render("run.html.j2", context)
    write_text(html, out["page"])
    explorer_bytes = write_explorer(params, inputs, out["pairs"]) if out.get("pairs") else None
    if out.get("headline"):   # the short head of `dvc metrics diff` (tasks/downstream/correlation/headline.py)
        from tasks.downstream.correlation.headline import headline_metrics

        src = Sources(inputs)
        write_json(headline_metrics(src.json("leaderboard_metrics"), src.json("correlation_metrics")), out["headline"])
    fixed = [("headline", "headline"), ("leaderboard", "leaderboard"), ("domains", "heatmaps"), ("explain", "explain"),
             ("validity", "validity")]
    present = [s for s, key in fixed if context[key] is not None]
    present += [d["name"] for d in context["downstream"] if d["context"] is not None]
    present += [s for s in ("correlation", "data", "provenance") if context[s] is not None]
    present += ["benchmarks"] if context["benchmark_matrix"] or context["benchmark_boards"] else []
    return {"sections": present, "run": {"page_bytes": len(html.encode("utf-8")), "explorer_bytes": explorer_bytes}}


def explorer_page(params: dict, inputs: dict) -> str:
    """report/pairs.html: the pair explorer from the explain stage's outputs (a page that says so without them)."""
    src = Sources(inputs)
    title = (params.get("report") or {}).get("title") or "prbench report"
    return render("pairs.html.j2", explorer.context(src.rows("explain_cells"), src.rows("explain_pairs"),
                                                    src.json("explain_metrics"), title))


def write_explorer(params: dict, inputs: dict, path) -> int:
    html = explorer_page(params, inputs)
    write_text(html, path)
    return len(html.encode("utf-8"))
