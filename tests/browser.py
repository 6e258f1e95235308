"""Headless Chromium for tests of what people look at (the report page, the Prefect UI).

Drives Debian's `chromium` (installed by `make browser`, which `make test` and `.ci/run` call)
through Playwright's Python client; Playwright's own browser download does not work offline.
Screenshots are test outputs under `test-outputs/` (gitignored).

Only a test marked `slow` may open one: `make test-fast` runs where `make browser` never ran, so a fast
test needing Chromium would fail there on every run (tests/conftest.py tells this module the running test)."""
from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OUTPUTS = ROOT / "test-outputs"
# without these, Chromium tries Google's hosts at start and on a closed network that costs seconds
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


RUNNING: list = []   # the pytest item being run, set by tests/conftest.py (empty outside pytest)


def _refuse_unless_slow() -> None:
    item = RUNNING[-1] if RUNNING else None
    if item is not None and not item.get_closest_marker("slow"):
        pytest.fail(f"{item.nodeid} opens Chromium but is not marked slow: `make test-fast` runs without a browser "
                    "(`make browser` is part of `make test` only). Mark it @pytest.mark.slow with its own "
                    "@pytest.mark.timeout(seconds).", pytrace=False)


def chromium_path() -> str:
    _refuse_unless_slow()
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:   # a failure, not a skip: `make test` installs it, so its absence is a broken set-up
        pytest.fail("Debian's chromium is not installed: run `make browser` (apt-get install -y chromium)")
    return path


@contextlib.contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    """Yield (page, console_errors): a fresh page whose console errors and page errors are collected."""
    _refuse_unless_slow()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page, errors
        finally:
            browser.close()


def screenshot(page, name: str) -> Path:
    """Keep a full-page screenshot as a test output: test-outputs/<name>.png."""
    OUTPUTS.mkdir(exist_ok=True)
    path = OUTPUTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
