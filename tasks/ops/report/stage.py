"""The report stage as flows/stage.py runs it: its inputs (what exists of what the page reads), the code
version the page names, the line it prints."""
from __future__ import annotations

from tasks.core import layout
from tasks.ops.report import build, provenance, sources


def stage_inputs(params: dict, key: None, declared: dict) -> dict:
    return sources.run_inputs(params)


def run(params: dict, inputs: dict, out: dict) -> dict:
    version = provenance.code_version(".", layout.REPORT_CODE_VERSION)   # templates are code too, not only *.py
    return build.run(params, inputs, version, out)


def stage_summary(out: dict, metrics: dict) -> str:
    return f"report: open {out['page']} in a browser (sections: {', '.join(metrics['sections'])})"
