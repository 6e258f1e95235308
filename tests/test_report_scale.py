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


def _visible(page, selector: str = "#leaderboard-table tbody tr[data-rm]") -> list[dict]:
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
        first = _visible(page)   # the null baselines folded into one summary row per strategy until asked for
        assert len(first) == PAGE_SIZE and shown.inner_text() == f"rows 1–{PAGE_SIZE} of {(RMS - NULLS) * 4} (of {ROWS})"
        assert not any(r["role"] == "null baseline" for r in first), "the first page is what a reader came for"
        folded = page.locator("#leaderboard-table tr.null-summary")
        assert len(_visible(page, "#leaderboard-table tr.null-summary")) == 4, "one per strategy"
        assert folded.first.inner_text().startswith(f"{NULLS} null baselines (length-longer, length-shorter, "
                                                    f"random × {NULLS - 2}) · none: micro accuracy 0.0–100.0%")
        assert len(_visible(page, "tr")) <= SHOWN_CAP, "what the page shows before any click"
        page.check("#board-nulls")   # listed one by one: every row again
        assert shown.inner_text() == f"rows 1–{PAGE_SIZE} of {ROWS}" and not folded.first.is_visible()

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
        page.select_option("#board-strategy", "planner")
        assert [r["strategy"] for r in _visible(page, "#leaderboard-table tr.null-summary")] == ["planner"], \
            "the summary row of the strategy picked"
        page.select_option("#board-strategy", "")
        page.check("#board-nulls")

        page.select_option("#board-strategy", "raw_profile")
        page.click("#leaderboard-table th[data-key=micro]")   # the sort keeps the filter and starts at page 1
        rows = _visible(page)
        every = page.evaluate("""() => Array.from(document.querySelectorAll('#leaderboard-table tbody tr[data-rm]'))
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


EXPLORER_CAP = 500_000   # bytes of report/pairs.html at 100 extra RMs (15 pairs)


def _explain_outputs(root):
    import json

    from tasks.core import layout
    from tasks.core.artifacts import read_table

    cells = read_table(root / layout.EXPLAIN["cells"], "explain_cells").to_pylist()
    pairs = read_table(root / layout.EXPLAIN["pairs"], "explain_pairs").to_pylist()
    return cells, {p["question_id"]: p for p in pairs}, json.loads((root / layout.EXPLAIN["metrics"]).read_text())


def _ids(page) -> list[str]:
    return page.evaluate("""() => Array.from(document.querySelectorAll('#pairs-table tr.pair'))
        .filter(tr => tr.checkVisibility()).map(tr => tr.dataset.id)""")


def expected_ids(cells, pairs, rms, strategies, outcome="", query="") -> list[str]:
    """The pairs the explorer should list: scored by an RM in scope, passing the outcome (cells.py's rules)."""
    from tasks.stages.explain.cells import by_pair, pair_outcomes

    rights = by_pair(cells)
    return [q for q in sorted(rights) if any(k[0] in rms and k[1] in strategies for k in rights[q])
            and (not outcome or outcome in pair_outcomes(rights[q], rms, strategies, pairs[q]["length_relation"]))
            and (query.lower() in q.lower() or query.lower() in pairs[q]["question"].lower())]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_pair_explorer_at_100_extra_rms_filters_searches_and_opens_a_pair_in_chromium(page100):
    import time

    from tasks.stages.explain.cells import OUTCOMES, by_pair
    from tasks.stages.explain.diff import word_diff

    explorer = page100.with_name("pairs.html")
    cells, pairs, metrics = _explain_outputs(page100.parent)
    size = explorer.stat().st_size
    every = sorted({c["rm"] for c in cells})
    contestants = sorted({c["rm"] for c in cells if c["role"] == "contestant"})
    strategies = metrics["strategies"]
    with browser_page(width=1400) as (page, errors):
        start = time.monotonic()
        page.goto(explorer.as_uri())
        page.wait_for_selector("#pairs-table tr.pair")
        print(f"pair explorer at {EXTRA} extra RMs: {size} bytes, {len(pairs)} pairs, {len(every)} RMs, "
              f"loaded and drawn in {time.monotonic() - start:.2f} s")
        assert size < EXPLORER_CAP
        assert _ids(page) == expected_ids(cells, pairs, contestants, strategies), "opens on the contestants' pairs"
        seen = {o: set() for o in OUTCOMES}
        for rm_value, rms in (("", contestants), ("*", every), ("bradley-terry", ["bradley-terry"]),
                              ("random-000", ["random-000"])):
            page.select_option("#pairs-rm", rm_value)
            for st_value, sts in (("", strategies), ("none", ["none"]), ("planner", ["planner"])):
                page.select_option("#pairs-strategy", st_value)
                for outcome in ("", *OUTCOMES):
                    page.select_option("#pairs-outcome", outcome)
                    want = expected_ids(cells, pairs, rms, sts, outcome)
                    assert _ids(page) == want, (rm_value, st_value, outcome)
                    if outcome:
                        seen[outcome] |= {(rm_value, st_value, q) for q in want}
        assert all(seen.values()), "every outcome filter lists pairs somewhere, so a wrong rule shows"
        assert any(len({st for rm, st, _ in seen[o]}) > 1 for o in OUTCOMES[:4]), "outcomes differ by strategy"
        # an RM right under one profile strategy and wrong under another: with the profile it was right at least
        # once (only with, when wrong under none), and not always (only without, when right under none)
        rights = by_pair(cells)
        for outcome, without in ((OUTCOMES[2], False), (OUTCOMES[3], True)):
            rm, q = next((rm, q) for q, r in sorted(rights.items()) for rm in every if r.get((rm, "none")) is without
                         and {r.get((rm, x)) for x in strategies if x != "none"} == {True, False})
            page.select_option("#pairs-rm", rm)
            page.select_option("#pairs-strategy", "")
            page.select_option("#pairs-outcome", outcome)
            assert q in _ids(page) and _ids(page) == expected_ids(cells, pairs, [rm], strategies, outcome), (rm, q)

        page.select_option("#pairs-outcome", "")
        page.select_option("#pairs-strategy", "")
        page.select_option("#pairs-rm", "*")
        page.fill("#pairs-search", "Q1")   # a user's id, any case
        assert _ids(page) == expected_ids(cells, pairs, every, strategies, query="q1") and len(_ids(page)) > 1
        page.fill("#pairs-search", "about topic 3?")   # words of a question
        assert _ids(page) == ["q3"]
        page.select_option("#pairs-domain", "Art")
        assert _ids(page) == ["q3"] and pairs["q3"]["domain"] == "Art"
        page.select_option("#pairs-domain", "Lifestyle")
        assert _ids(page) == [] and page.locator("#pairs-shown").inner_text() == f"no pair matches (of {len(pairs)})"
        page.select_option("#pairs-domain", "")
        page.fill("#pairs-search", "")

        page.select_option("#pairs-rm", "bradley-terry")
        page.click("#pairs-table tr.pair[data-id=q0]")
        detail = page.locator("#pairs-table tr.detail[data-id=q0]")
        chosen, rejected = word_diff(pairs["q0"]["chosen"], pairs["q0"]["rejected"])
        assert detail.locator(".side.chosen mark").all_inner_texts() == [r.strip() for r in chosen[1::2]]
        assert detail.locator(".side.rejected mark").all_inner_texts() == [r.strip() for r in rejected[1::2]]
        assert detail.locator("ul.aspects li").all_inner_texts() == pairs["q0"]["aspects"]
        assert detail.locator("details.context").count() == len(strategies)
        mine = {c["strategy"]: c["margin"] for c in cells if c["rm"] == "bradley-terry" and c["question_id"] == "q0"}
        shown = {td.get_attribute("data-strategy"): td.inner_text() for td in
                 detail.locator("table.margins tr[data-rm=bradley-terry] td.margin").all()}
        assert shown == {s: f"{m:+g}" for s, m in mine.items()}, "each strategy's margin, its sign kept"
        assert "human" in detail.locator("table.human").inner_text(), "the pair humans rated"
        analysis = page.locator("#pairs-analysis table.analysis")
        row = analysis.locator("tr", has_text="picked the longer answer").locator("td[data-strategy=none]")
        want = metrics["rms"]["bradley-terry"]["strategies"]["none"]["picked_longer"]
        assert row.inner_text().startswith(f"{100 * want['value']:.1f}% (n = {want['n']}")
        screenshot(page, "explorer-scale")
        assert errors == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_why_rms_fail_at_100_extra_rms_shows_the_length_rules_as_defined(page100):
    with browser_page(width=1400) as (page, errors):
        page.goto(page100.as_uri())
        block = page.locator(".explain-block:not([hidden])")
        assert block.get_attribute("data-strategy") == "raw_profile", "the heatmap's strategy first"
        picked = lambda rm: block.locator(f"tr[data-rm={rm}] td[data-key=picked_longer]").inner_text()  # noqa: E731
        assert picked("length-longer").startswith("100.0%") and picked("length-shorter").startswith("0.0%")
        folded = block.locator("tr.folded-summary").all_inner_texts()
        controls = sum(e["kind"] == "mixture" for e in scale_report.params_with(EXTRA)["scoring"]["rms"].values())
        assert [t.split(" (")[0] for t in folded] == [f"{controls} positive controls", f"{NULLS - 2} other null baselines"]
        assert block.locator("tr[data-role='null baseline']:not(.folded-summary)").count() == 2, "the two length rules"
        assert block.locator("tbody tr[data-rm]").count() == 3 + 2, "the contestants and the length rules"
        page.select_option("#explain-strategy", "planner")
        assert page.locator(".explain-block:not([hidden])").get_attribute("data-strategy") == "planner"
        assert page.locator("#explorer-link").get_attribute("href") == "pairs.html"
        page.locator("#explain").screenshot(path=str(screenshot(page, "explain-scale").with_name("explain-section.png")))
        assert errors == []
