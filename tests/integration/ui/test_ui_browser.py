"""The inspector in a real browser: Debian's Chromium, headless, through Selenium, against the real uvicorn server.

Open a store, search, see the expected hit first with its channels, open its thread, forget a message with the
run's token, and see it gone from the store. Set ``SGMEM_UI_SCREENSHOT=docs/images/ui.png`` to also write the
search page's screenshot there (docs/ui.md shows it). Under ``CI=true`` a missing browser fails these tests.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sgmem
from tests.integration.ui.sample import ANSWER, QUESTION, free_port, make_store

pytestmark = pytest.mark.integration

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
TOKEN = "browser-test-token-42"


def _need_browser() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    try:
        import selenium  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        missing.append(f"python package {exc.name}")
    if missing:
        why = f"the browser tests need {', '.join(missing)} (apt-get install chromium chromium-driver; pip install -e '.[dev]')"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1200,1000",
    ):
        options.add_argument(arg)
    # the driver is the system's: Selenium Manager is never asked to download one
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def served(tmp_path: Path, embedder: sgmem.Embedder) -> Iterator[tuple[str, sgmem.Memory]]:
    """The real uvicorn server, in a thread, over a fresh store opened for writing with the test token."""
    _need_browser()
    import uvicorn

    from sgmem.ui import create_app
    from sgmem.ui.guard import allowed_hosts

    store = make_store(tmp_path / "store", embedder)
    port = free_port()
    with sgmem.Memory(store, embedder=embedder) as mem:
        app = create_app(mem, hosts=allowed_hosts("127.0.0.1", port), write=True, token=TOKEN)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}", mem
        finally:
            server.should_exit = True
            thread.join(10)


def test_search_explain_and_forget_in_a_browser(browser: Any, served: tuple[str, sgmem.Memory], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    base, mem = served
    browser.get(f"{base}/")
    browser.find_element(By.LINK_TEXT, "alice").click()
    assert "chat-1" in browser.find_element(By.ID, "threads").text

    browser.find_element(By.ID, "q").send_keys(QUESTION)
    Select(browser.find_element(By.ID, "mode")).select_by_value("hybrid")
    browser.find_element(By.ID, "search").click()
    first = browser.find_element(By.ID, "hit-1")
    assert first.find_element(By.CSS_SELECTOR, "mark.why-sentence").text == ANSWER
    channels = {row.get_attribute("data-channel") for row in first.find_elements(By.CSS_SELECTOR, "tr.channel")}
    assert {"sentence", "turn", "lexical", "graph"} <= channels
    assert "cutoff: relevance ≥" in browser.find_element(By.ID, "cutoff").text
    shot = tmp_path / "ui.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if os.environ.get("SGMEM_UI_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["SGMEM_UI_SCREENSHOT"])

    first.find_element(By.CSS_SELECTOR, "a.graph-link").click()  # the hit's neighbourhood, drawn
    graph = browser.find_element(By.ID, "graph")
    assert graph.size["width"] > 300 and graph.size["height"] > 100
    assert "Thanks for telling me." in browser.find_element(By.ID, "links").text  # the next turn of the thread
    browser.back()
    first = browser.find_element(By.ID, "hit-1")

    first.find_element(By.CSS_SELECTOR, "a.thread-link").click()
    message = browser.find_element(By.ID, "m-c1-1")
    assert "focus" in message.get_attribute("class")
    acts = {s.get_attribute("title") for s in message.find_elements(By.CSS_SELECTOR, "span.act")}
    assert {"filler", "statement", "question"} <= acts

    message.find_element(By.CSS_SELECTOR, "button.forget-message").click()  # no token: refused
    assert "needs the token" in browser.find_element(By.ID, "error").text
    assert len(mem.get(scope="alice", message_ids=["c1-1"])) == 1

    browser.back()
    message = browser.find_element(By.ID, "m-c1-1")
    message.find_element(By.CSS_SELECTOR, "input.token").send_keys(TOKEN)
    message.find_element(By.CSS_SELECTOR, "button.forget-message").click()
    # an element only the receipt has, found first: the thread page's own <h1> may still be there while it loads
    assert "Scrubbed" in browser.find_element(By.ID, "scrubbed").text
    assert "Forgot message c1-1" in browser.find_element(By.TAG_NAME, "h1").text

    assert mem.get(scope="alice", message_ids=["c1-1"]) == []
    assert all("c1-1" not in h.message_ids for h in mem.search(QUESTION, scope="alice", min_score=0))
    browser.get(f"{base}/thread?s=alice&t=chat-1")
    assert not browser.find_elements(By.ID, "m-c1-1")
