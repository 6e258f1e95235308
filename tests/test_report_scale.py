"""The run page at 100 extra RMs (tests/scale_report.py: synthetic stage outputs through the real leaderboard
stage and report code, about 30 s): within its size caps, and the leaderboard's strategy filter, name search,
null-baseline switch, pages and sort as a reader uses them in headless Chromium.

Measured before this page learned to scale (same inputs): 1,127,914 bytes, 750 table rows all shown, the
headline 33.5 KB of null RMs listed one by one, heatmaps 439 KB, Best-of-N 128 KB (121 lines in one chart)."""
import re

import pytest

from tasks.ops.report.board import MAX_RMS_SHOWN, PAGE_SIZE
from tests import scale_report
from tests.browser import browser_page, screenshot

EXTRA = 100
RMS = 18 + EXTRA          # params.yaml's RMs and the extra ones
ROWS = RMS * 4            # × the 4 strategies
NULLS = 3 + EXTRA         # length-longer, length-shorter, random and the extra ones
PAGE_CAP = 800_000        # bytes (measured 0.67 MB; 1.13 MB before)
SHOWN_CAP = 100           # table rows a reader sees without asking for more (750 before)


@pytest.fixture(scope="module")
def page100(tmp_path_factory):
    path, _ = scale_report.page(tmp_path_factory.mktemp("scale"), EXTRA)
    return path


def _section(html: str, name: str) -> str:
    return html.split(f'<section id="{name}"', 1)[1].split("</section>", 1)[0]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_page_at_100_extra_rms_stays_within_its_caps(page100):
    html = page100.read_text(encoding="utf-8")
    size = scale_report.measure(html)
    print(f"page at {EXTRA} extra RMs: {size}")
    assert size["leaderboard_rows"] == ROWS, "every RM × strategy is in the page, for the search and 'show all'"
    assert size["bytes"] < PAGE_CAP, size
    head = _section(html, "headline")
    nulls = re.sub(r' title="[^"]*"', "", head.split('<div class="nulls">', 1)[1].split("</div>", 1)[0])
    assert len(head.encode()) < 8_000 and "random-" not in nulls, "the null RMs summarised (their ends on hover)"
    for grid in re.findall(r'<table class="heat">.*?</table>', _section(html, "domains"), re.S):
        header = grid.split("</thead>", 1)[0]
        assert len(re.findall(r"<th>", header)) <= 1 + MAX_RMS_SHOWN + 1, "domain, the best RMs, the null range"
    bon = _section(html, "bon")
    assert len(re.findall(r"<path ", bon)) <= MAX_RMS_SHOWN + 3, "the best RMs, (oracle), (random), the null range"
    assert len(re.findall(r"<tr[\s>]", bon)) <= RMS - NULLS + 4, "every other RM, the references, the null row"
    assert '<details id="provenance-rms">' in html, "the provenance's 118 RMs folded"


def _visible(page, selector: str = "#leaderboard-table tbody tr") -> list[dict]:
    return page.evaluate(f"""() => Array.from(document.querySelectorAll('{selector}'))
        .filter(tr => tr.checkVisibility())
        .map(tr => ({{rm: tr.dataset.rm, strategy: tr.dataset.strategy, role: tr.dataset.role || "",
                     micro: tr.querySelector('[data-key=micro]') ? Number(tr.querySelector('[data-key=micro]').dataset.v) : null}}))""")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_leaderboard_filter_search_and_pages_in_chromium(page100):
    with browser_page(width=1400) as (page, errors):
        page.goto(page100.as_uri())
        shown = page.locator("#board-shown")
        assert len(_visible(page)) == PAGE_SIZE and shown.inner_text() == f"rows 1–{PAGE_SIZE} of {ROWS}"
        assert len(_visible(page, "tr")) <= SHOWN_CAP, "what the page shows before any click"

        page.select_option("#board-strategy", "planner")
        rows = _visible(page)
        assert len(rows) == PAGE_SIZE and {r["strategy"] for r in rows} == {"planner"}
        assert shown.inner_text() == f"rows 1–{PAGE_SIZE} of {RMS} (of {ROWS})"
        page.click("#board-next")
        assert shown.inner_text() == f"rows {PAGE_SIZE + 1}–{2 * PAGE_SIZE} of {RMS} (of {ROWS})"
        assert {r["rm"] for r in _visible(page)}.isdisjoint(r["rm"] for r in rows), "the next page, not the same"

        page.fill("#board-search", "Bradley")   # part of a name, any case
        assert [(r["rm"], r["strategy"]) for r in _visible(page)] == [("bradley-terry", "planner")]
        assert shown.inner_text() == f"1 row (of {ROWS})"
        page.select_option("#board-strategy", "")
        assert sorted(r["strategy"] for r in _visible(page)) == ["none", "oracle", "planner", "raw_profile"]

        page.fill("#board-search", "random-0")
        assert len(_visible(page)) == PAGE_SIZE
        page.click("#board-all")
        assert len(_visible(page)) == EXTRA * 4 and shown.inner_text() == f"all {EXTRA * 4} rows (of {ROWS})"
        page.click("#board-all")   # back to pages
        page.fill("#board-search", "")

        page.uncheck("#board-nulls")
        assert shown.inner_text() == f"rows 1–{PAGE_SIZE} of {(RMS - NULLS) * 4} (of {ROWS})"
        assert not any(r["role"] == "null baseline" for r in _visible(page))
        page.check("#board-nulls")

        page.select_option("#board-strategy", "raw_profile")
        page.click("#leaderboard-table th[data-key=micro]")   # the sort keeps the filter and starts at page 1
        rows = _visible(page)
        every = page.evaluate("""() => Array.from(document.querySelectorAll('#leaderboard-table tbody tr'))
            .filter(tr => tr.dataset.strategy === 'raw_profile')
            .map(tr => Number(tr.querySelector('[data-key=micro]').dataset.v))""")
        assert [r["micro"] for r in rows] == sorted(every, reverse=True)[:PAGE_SIZE]
        assert {r["strategy"] for r in rows} == {"raw_profile"} and rows[0]["micro"] == 1.0
        page.click("#leaderboard-table th[data-key=micro]")   # ascending: the first page is now the lowest
        assert [r["micro"] for r in _visible(page)] == sorted(every)[:PAGE_SIZE]

        cards = page.locator("#headline .card:not(.chance) .rms").all_inner_texts()
        assert cards and not any(re.search(r"random|length-|ladder-", t) for t in cards), cards
        assert page.locator("#headline .card.best").count() == 0
        assert page.locator("#headline .card.chance .nulls").inner_text().startswith(f"{NULLS} null-baseline RMs")
        screenshot(page, "report-scale")
        assert errors == []
