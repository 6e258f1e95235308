"""The report's Numerics section: the pins (torch's, numpy's, OpenBLAS's) and the rounding rule for decisions
on every page; the machines (runs/numerics/, with the kernels each library chose) only on `prbench report`'s
page, never on the DVC-tracked one, whose bytes must not depend on the machine."""
from __future__ import annotations

import json

import pytest

from tasks.core import numerics
from tasks.ops.params import load_params
from tasks.ops.report import build, provenance
from tests.browser import browser_page, screenshot


def _page(machines=None) -> str:
    return build.render("run.html.j2", build.run_context(load_params(), {}, "0" * 64, machines))


def test_the_dvc_page_shows_the_pins_and_not_the_machine(tmp_path):
    import torch  # noqa: F401 - the record of a stage that computed with it

    html = _page()
    assert 'id="numerics-pins"' in html and "ATEN_CPU_CAPABILITY" in html and "avx2" in html
    assert "<code>NPY_DISABLE_CPU_FEATURES</code>" in html and "X86_V4 AVX512_ICL AVX512_SPR (numpy runs its X86_V3" in html
    assert "<code>OPENBLAS_CORETYPE</code>" in html and "Haswell (numpy&#39;s and scipy&#39;s OpenBLAS" in html
    assert "compares values rounded to 12 decimals" in html
    assert 'id="numerics-machines"' not in html and "runs/numerics/" in html
    cpu = numerics.cpuinfo()["model"]
    assert cpu and cpu not in html, "the DVC page must come out the same on any machine"
    numerics.record(tmp_path, "train_rm")
    assert provenance.machine_records(tmp_path)[0]["label"] == "train_rm"


@pytest.mark.slow   # Chromium: `make browser` is part of `make test` only
@pytest.mark.timeout(120)
def test_prbench_reports_page_shows_each_stage_machine_in_a_browser(tmp_path):
    import scipy.stats  # noqa: F401 - its OpenBLAS, as in a stage that computed with it
    import torch  # noqa: F401

    rec = json.loads(open(numerics.record(tmp_path, "train_rm")).read())
    other = {**rec, "label": "score@bradley-terry", "torch_capability": "AVX512", "replaced": {"ATEN_CPU_CAPABILITY": "avx512"},
             "numpy_dispatch": ["X86_V3", "X86_V4"], "openblas": [{**b, "core": "SkylakeX"} for b in rec["openblas"]]}
    page_file = tmp_path / "report.html"
    page_file.write_text(_page([rec, other]), encoding="utf-8")
    with browser_page() as (page, errors):
        page.goto(page_file.as_uri())
        page.locator("#numerics").scroll_into_view_if_needed()
        rows = page.locator("#numerics-machines tbody tr")
        assert rows.count() == 2 and page.locator("#numerics-machines").is_visible()
        first = rows.nth(1).inner_text()   # sorted by stage: score@..., train_rm
        assert rec["cpu"] in first and "avx2" in first and "AVX2" in first and rec["mkl"] in first
        assert f"numpy X86_V3 · OpenBLAS Haswell (numpy {rec['openblas'][0]['version']}), Haswell (scipy" in first
        assert "ATEN_CPU_CAPABILITY=avx512" in rows.nth(0).inner_text() and "SkylakeX (scipy" in rows.nth(0).inner_text()
        assert page.locator("#numerics-mixed").inner_text().endswith("AVX2, AVX512.")
        mixed = page.locator("#numerics-mixed-kernels").inner_text()
        assert "numpy X86_V3 X86_V4 · OpenBLAS SkylakeX" in mixed and "numpy X86_V3 · OpenBLAS Haswell" in mixed
        assert "ONEDNN_MAX_CPU_ISA" in page.locator("#numerics-pins").inner_text()
        page.locator("#provenance").screenshot(path=str(screenshot(page, "report-numerics")))
        assert errors == []
