"""The report's wide tables scroll in their own box on a narrow window: none runs past the page's edge and
every column can be scrolled into view. The committed page's content, with the stylesheet the report stage
inlines today (so a CSS change is tested without a pipeline run)."""
import pytest

from tests.browser import browser_page, screenshot
from tests.conftest import ROOT

WIDTH = 800


def _page_with_current_css(tmp_path):
    page = (ROOT / "report/index.html").read_text(encoding="utf-8")
    css = (ROOT / "tasks/ops/report/templates/report.css").read_text(encoding="utf-8")
    start, end = page.index("<style>") + len("<style>"), page.index("</style>")
    out = tmp_path / "index.html"
    out.write_text(page[:start] + "\n" + css + page[end:], encoding="utf-8")
    return out


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_wide_tables_scroll_instead_of_running_off_the_page(tmp_path):
    with browser_page(width=WIDTH, height=900) as (tab, errors):
        tab.goto(_page_with_current_css(tmp_path).as_uri())
        doc = tab.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        tables = tab.evaluate("""[...document.querySelectorAll('main table')].map(t => {
            const box = t.getBoundingClientRect();
            const wide = t.scrollWidth > t.clientWidth + 1;
            t.scrollLeft = t.scrollWidth;   // the last column scrolled into view, inside the table's own box
            const cells = t.querySelectorAll('tr:first-child > *');
            const last = cells.length ? cells[cells.length - 1].getBoundingClientRect() : box;
            return {id: t.id || t.className || '?', right: box.right, wide: wide,
                    overflow: getComputedStyle(t).overflowX, lastVisible: last.right <= t.getBoundingClientRect().right + 1};
        })""")
        screenshot(tab, "report-narrow-window")
    assert doc[0] <= doc[1], f"the page itself scrolls sideways: {doc}"
    assert [t for t in tables if t["wide"]], "no wide table at this width: the test checks nothing"
    assert all(t["right"] <= WIDTH + 1 for t in tables), [t["id"] for t in tables if t["right"] > WIDTH + 1]
    for t in (t for t in tables if t["wide"]):
        assert t["overflow"] in ("auto", "scroll") and t["lastVisible"], t
    assert errors == []
