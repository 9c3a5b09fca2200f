"""A real headless browser for the report tests: Playwright driving the system's Chromium (no browser download).

``browser()`` yields a Playwright page whose console errors, page errors and failed requests are collected;
``visit`` loads a report page, forces every lazy image to load and returns what went wrong; ``screenshot`` saves
a full-page PNG under ``$T2IBENCH_ARTIFACTS`` (default ``artifacts/screenshots`` in the repository: CI keeps it as
an artifact; it is git-ignored). In CI (T2IBENCH_REQUIRE_BROWSER=1) a missing browser fails instead of skipping.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_or_skip() -> str:
    """The system Chromium's path; skip (or fail under T2IBENCH_REQUIRE_BROWSER=1) when it or Playwright is absent."""
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        found = None
    if found is None:
        if os.environ.get("T2IBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium and playwright are required (T2IBENCH_REQUIRE_BROWSER=1) but not installed")
        pytest.skip("no headless chromium / playwright on this machine")
    return found


@dataclass
class Problems:
    """What a page did wrong while it loaded."""

    console: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.console or self.failed or self.broken_images)


@contextlib.contextmanager
def browser(width: int = 1400, height: int = 1000) -> Iterator[tuple[Any, Problems]]:
    """A fresh Chromium page (and the list its problems are collected in)."""
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    problems = Problems()
    with sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=executable, args=FLAGS)
        try:
            page = chrome.new_page(viewport={"width": width, "height": height})
            page.on("console", lambda m: problems.console.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.console.append(str(e)))
            page.on("requestfailed", lambda r: _failed(r, problems))
            yield page, problems
        finally:
            chrome.close()


def _failed(request: Any, problems: Problems) -> None:
    """Record a failed request, except one the browser cancelled itself because the page navigated away (a missing
    file fails with net::ERR_FILE_NOT_FOUND, and an image that never decoded is caught by ``settle``)."""
    reason = request.failure or ""
    if "ERR_ABORTED" not in reason:
        problems.failed.append(f"{request.url} ({reason})")


def visit(page: Any, url: str, problems: Problems) -> Problems:
    """Load ``url``, make every lazy image load, wait for them, and record the images that did not decode."""
    page.goto(url)
    return settle(page, problems)


def follow(page: Any, selector: str, problems: Problems) -> Problems:
    """Click the link at ``selector``, wait for the page it opens, and check its images as ``visit`` does."""
    with page.expect_navigation():
        page.click(selector)
    return settle(page, problems)


def settle(page: Any, problems: Problems) -> Problems:
    """Make every lazy image of the loaded page load, wait for them, and record the images that did not decode."""
    page.wait_for_load_state("load")
    page.evaluate("document.querySelectorAll('img[loading=lazy]').forEach(function (i) { i.loading = 'eager'; })")
    page.wait_for_function("Array.from(document.images).every(function (i) { return i.complete; })", timeout=30_000)
    problems.broken_images += page.evaluate(
        "Array.from(document.images).filter(function (i) { return i.naturalWidth === 0; })"
        ".map(function (i) { return i.getAttribute('src'); })"
    )
    return problems


def screenshot(page: Any, name: str) -> Path:
    """A full-page screenshot under the artifacts folder; returns its path."""
    folder = Path(os.environ.get("T2IBENCH_ARTIFACTS", REPO / "artifacts" / "screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
