"""report: one self-contained HTML page of the run (report/index.html) from the stage outputs."""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import main, run_stage, stage_task
from tasks.core import layout
from tasks.ops.params import load_params
from tasks.ops.report import build, provenance, sources


def _run(params: dict, inputs: dict, out: dict) -> dict:
    version = provenance.code_version(".", layout.REPORT_CODE_VERSION)   # templates are code too, not only *.py
    return build.run(params, inputs, version, out)


report_task = stage_task("report", _run)


@flow(name="report", flow_run_name="report", log_prints=True)
def report_flow(params_path: str | None = None):
    params = load_params(params_path)
    state = run_stage(report_task, "report", params, inputs=sources.run_inputs(params))
    if state.is_completed():
        print(f"report: open {layout.REPORT['page']} in a browser (sections: {', '.join(state.result()['metrics']['sections'])})")
    return state


if __name__ == "__main__":
    sys.exit(main(report_flow))
