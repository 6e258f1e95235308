"""`dvc plots show` renders offline: the page template (.dvc/config plots.html_template) inlines the
vendored vega, vega-lite and vega-embed (vendor/vega/), so with every network request refused the
charts still draw — found as SVG in the DOM of headless Chromium."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import browser_page, screenshot
from tests.conftest import ROOT


def _build():
    spec = importlib.util.spec_from_file_location("vega_build", ROOT / "vendor/vega/build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_template_is_what_the_vendored_files_build_and_loads_nothing_remote():
    build = _build()
    assert build.TARGET.read_text(encoding="utf-8") == build.render(), "run `python vendor/vega/build.py`"
    page = build.TARGET.read_text(encoding="utf-8")
    assert "{plot_divs}" in page and "{scripts}" not in page, "DVC's CDN <script> tags must have nowhere to go"
    assert "cdn.jsdelivr" not in page and "<script src" not in page
    assert "html_template = plots/offline.html" in (ROOT / ".dvc/config").read_text()
    for name in build.LIBS:
        assert (ROOT / f"vendor/vega/LICENSE.{name}").read_text().startswith("Copyright"), name


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_dvc_plots_show_renders_its_charts_with_no_network(tmp_path):
    dvc = Path(sys.executable).with_name("dvc")
    proc = subprocess.run([str(dvc), "plots", "show", "-o", str(tmp_path / "plots")], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = tmp_path / "plots" / "index.html"
    remote = []
    with browser_page() as (tab, errors):
        def route(r):
            if r.request.url.startswith(("file:", "data:", "blob:")):
                return r.continue_()
            remote.append(r.request.url)
            return r.abort()
        tab.route("**/*", route)
        tab.goto(page.as_uri())
        tab.wait_for_function("document.querySelectorAll('svg.marks').length > 0", timeout=60000)
        tab.wait_for_timeout(1000)   # every chart embedded, not only the first
        # per chart: the marks its data draws (vega's role-mark groups; axes, grid and legends are other roles); a
        # mark at a NaN position (a text column on a quantitative axis) has no path and draws nothing
        charts = tab.evaluate("""[...document.querySelectorAll('svg.marks')].map(svg => [
            svg.closest('[id]') ? svg.closest('[id]').id : '?',
            [...svg.querySelectorAll('g.role-mark > *')].filter(m => !(m.getAttribute('aria-label') || '').includes('NaN')
                && (m.tagName !== 'path' || (m.getAttribute('d') || '').length > 0)).length])""")
        screenshot(tab, "dvc-plots-offline")
    html = page.read_text(encoding="utf-8")
    empty = set(re.findall(r'<div id = "([^"]+)">\s*<script type = "text/javascript">\s*var spec = \{\};', html))
    # a CSV with no rows gives an empty spec and no chart: rl_train runs only for the RMs rl.rms trains, so none is empty
    assert len(charts) == html.count("vegaEmbed('#") >= 2, charts
    assert not empty, f"charts with no data: {sorted(empty)}"
    assert all(n > 0 for c, n in charts), f"charts of data with no marks: {charts}"
    assert not remote, f"the page asked the network for {remote}"
    assert not [e for e in errors if "sourcemap" not in e.lower()], errors
