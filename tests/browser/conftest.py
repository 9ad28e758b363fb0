"""Headless Chromium (Debian's, driven by Playwright) against a real ``tulving serve`` on
127.0.0.1. Without a Chromium the browser tests skip, except in CI, where they fail: CI
installs it (``.ci/run``). On failure each test leaves a screenshot of its page in
``test-output/inspector/``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.e2e.conftest import ROOT
from tests.http.conftest import Server, start_server, stop_server

OUTPUT = ROOT / "test-output" / "inspector"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[FAILED] = report.failed


FAILED = pytest.StashKey[bool]()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("inspector"))
    yield running
    stop_server(running)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_path()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Chromium for the inspector tests (.ci/run installs it)")
        pytest.skip("no Chromium on this machine: apt-get install chromium")
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=executable, args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    if request.node.stash.get(FAILED, False):
        OUTPUT.mkdir(parents=True, exist_ok=True)
        opened.screenshot(path=str(OUTPUT / f"{request.node.name}.png"), full_page=True)
    context.close()


def api(server: Server, who: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    response = httpx.request(method, f"{server.url}/v1{path}", headers=server.headers(who),
                             timeout=30, **kwargs)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def login(page: Page, server: Server, who: str, view: str = "#/curate") -> None:
    page.goto(f"{server.url}/ui/{view}")
    page.fill("#token", server.tokens[who])
    page.click("#login button[type=submit]")
