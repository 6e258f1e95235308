"""report: one self-contained HTML page of the run (report/index.html) from the stage outputs."""
from __future__ import annotations

import sys

from prefect import flow

from flows.common import code_hash, hashes, main, run_stage_task, stage_task
from tasks import layout
from tasks.params import load_params
from tasks.report import build, provenance, sources

report_task = stage_task("report", build.run)


@flow(name="report", log_prints=True)
def report_flow(params_path: str | None = None):
    params = load_params(params_path)
    inputs = sources.run_inputs(params)
    version = provenance.code_version(".", layout.REPORT_CODE_VERSION)   # templates are code too, not only *.py
    state = run_stage_task(report_task, args={"params": params, "inputs": inputs, "code_version": version},
                           key={"inputs": hashes(inputs), "code": code_hash("report"), "code_version": version},
                           out=layout.REPORT)
    if state.is_completed():
        print(f"report: open {layout.REPORT['page']} in a browser (sections: {', '.join(state.result()['metrics']['sections'])})")
    return state


if __name__ == "__main__":
    sys.exit(main(report_flow))
