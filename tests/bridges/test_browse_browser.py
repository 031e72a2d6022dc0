"""Proves `fgraph browse` works for a person in a real browser (issue 31 item 1, docs/browse.md
decision B2): headless Chromium, driven by Selenium, lands on the store's page, searches
"ada lovelace", follows the links from the hit to the entity, its history and a receipt, and checks
what is on the screen: the visible text, no SQL unless asked for, who and where on the timeline,
the receipt within the window, its meta as a table and its event UUID on one line.

The store is built from the import fixtures (`fgraph import mcp-memory`, `jsonl-log`); the server
is `fgraph browse --port 0` on loopback, started here. Screenshots of every page go to
build/screenshots/ (git-ignored). Without Datasette, Selenium, or a Chromium and its driver on
PATH (Debian: apt-get install chromium chromium-driver), the module is skipped and says which.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.support.browse import CLI, browse_env, start_browse, stop
from tests.support.cli import run_cli

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "import"
SHOTS = REPO / "build" / "screenshots"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVERS = ("chromedriver",)
PAGE_SECONDS = 30     # the longest a page may take to load
WAIT_SECONDS = 15     # the longest an element may take to appear after a click
META = {"ticket": "ISSUE-31", "tool": "mcp memory server",
        "note": "a long note, to see that a receipt keeps a long meta value inside the page " * 3}
# What a canned query's SQL looks like on a page; a person should see none of it unless asked.
SQL_TEXT = re.compile(r"\bselect\b[^.]{0,200}\bfrom\b|\bfgraph_blobs\b|\bwith\s+target\b|\bCAST\(", re.I)


def _missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("datasette") is None:
        return "Datasette is not installed (pip install -e '.[test,browse]')"
    if importlib.util.find_spec("selenium") is None:
        return "Selenium is not installed (pip install -e '.[test,browse]')"
    if not any(shutil.which(name) for name in BROWSERS):
        return "no Chromium on PATH (Debian: apt-get install chromium chromium-driver)"
    if not any(shutil.which(name) for name in DRIVERS):
        return "no chromedriver on PATH (Debian: apt-get install chromium-driver)"
    return None


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("browser") / "people.fgraph"
    for args in (["import", "mcp-memory", str(FIXTURES / "mcp-memory.jsonl"), "--by", "alice",
                  "--source", "memory.jsonl", "--meta", json.dumps(META)],
                 ["import", "jsonl-log", str(FIXTURES / "decisions.clean.jsonl"), "--by", "bob"]):
        run_cli(*args, db=path, executable=CLI, env=browse_env(), check=True)
    return path


@pytest.fixture(scope="module")
def site(store):
    reason = _missing()
    if reason:
        pytest.skip(reason)
    proc, url = start_browse(store)
    try:
        yield url
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def browser(site, tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(shutil.which(name) for name in BROWSERS if shutil.which(name))
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,900", "--lang=en-US", "--no-first-run", "--disable-extensions",
                     f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(argument)
    driver_path = next(shutil.which(name) for name in DRIVERS if shutil.which(name))
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        driver.set_page_load_timeout(PAGE_SECONDS)
        driver.set_script_timeout(WAIT_SECONDS)
        SHOTS.mkdir(parents=True, exist_ok=True)
        yield driver
    finally:
        driver.quit()


# ----------------------------------------------------------------- what a person sees

def visible_text(driver) -> str:
    return driver.find_element("tag name", "body").text


def shoot(driver, name: str) -> None:
    """A screenshot of the whole page (the window grown to its height, up to 3000 px)."""
    width = driver.execute_script("return window.innerWidth")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(max(width, 400), min(max(height + 120, 600), 3000))
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    driver.set_window_size(1280, 900)


def open_page(driver, url: str) -> None:
    driver.get(url)
    wait(driver, lambda d: d.execute_script("return document.readyState") == "complete")


def wait(driver, condition):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, WAIT_SECONDS).until(condition)


def follow(driver, text: str) -> None:
    """Click the link whose visible text is ``text`` and wait for the next page."""
    before = driver.current_url
    driver.find_element("link text", text).click()
    wait(driver, lambda d: d.current_url != before and d.execute_script("return document.readyState") == "complete")


def overflow(driver) -> dict:
    """How far the page, and each table on it, is wider than its box (0: it fits)."""
    return driver.execute_script("""
        const root = document.documentElement;
        const out = {page: root.scrollWidth - root.clientWidth};
        document.querySelectorAll('.table-wrapper').forEach((w, i) => { out['table' + i] = w.scrollWidth - w.clientWidth; });
        return out;""")


def assert_no_sql(driver) -> None:
    shown = visible_text(driver)
    assert not SQL_TEXT.search(shown), f"SQL on the page {driver.current_url}: {SQL_TEXT.search(shown).group(0)!r}"


# ----------------------------------------------------------------- the pages

def test_the_landing_page_offers_search_and_the_recent_changes(browser, site):
    open_page(browser, site)
    shown = visible_text(browser)
    assert "Find an entity" in shown and "Recent changes" in shown, shown[:1000]
    assert browser.find_element("css selector", "input[type=search][name=q]").is_displayed()
    assert "alice" in shown and "bob" in shown and "memory.jsonl:1" in shown   # who and where of each change
    assert "Grace Hopper" in shown                                            # what changed, by name
    for link in ("Entities", "Attributes", "Event stream"):
        assert browser.find_element("link text", link).is_displayed()
    assert "fgraph_facts" not in shown            # the raw tables are folded away
    assert_no_sql(browser)
    assert overflow(browser)["page"] <= 0
    shoot(browser, "1-landing")
    open_page(browser, site.removesuffix("/fgraph") + "/")   # the server's root is the same page
    assert browser.current_url.rstrip("/").endswith("/fgraph") and "Recent changes" in visible_text(browser)


def test_a_person_goes_from_search_to_entity_to_history_to_receipt(browser, site):
    open_page(browser, site)
    box = browser.find_element("css selector", "input[type=search][name=q]")
    box.send_keys("ada lovelace\n")
    wait(browser, lambda d: "/-/search" in d.current_url and d.find_elements("css selector", ".fgraph-hits li"))
    hits = [a.text for a in browser.find_elements("css selector", ".fgraph-hits .fgraph-hit-name")]
    assert hits[0] == "Ada Lovelace", hits                       # lower case finds the name, first
    assert_no_sql(browser)
    shoot(browser, "2-search")

    follow(browser, "Ada Lovelace")
    shown = visible_text(browser)
    assert browser.find_element("tag name", "h1").text == "Ada Lovelace"
    assert "Daughter of Lord Byron" in shown and "Charles Babbage" in shown        # its facts, refs by name
    assert "What refers to it" in shown
    referrers = [a.text for a in browser.find_elements("css selector", ".fgraph-incoming .fgraph-referrer")]
    assert referrers == ["Grace Hopper"]                                             # rel/inspired_by
    assert browser.find_element("link text", "Its transactions (receipts)").is_displayed()
    assert_no_sql(browser)
    assert overflow(browser)["page"] <= 0
    shoot(browser, "3-entity")

    follow(browser, "History")
    headers = [th.text for th in browser.find_elements("css selector", ".rows-and-columns thead th")]
    assert {"tx", "at", "change", "attribute", "value", "by", "source"} <= set(headers), headers
    by = [td.text for td in browser.find_elements("css selector", "td.col-by")]
    source = [td.text for td in browser.find_elements("css selector", "td.col-source")]
    assert by and set(by) == {"alice"} and "memory.jsonl:1" in source
    assert_no_sql(browser)
    shoot(browser, "4-history")

    first_tx = browser.find_element("css selector", "td.col-tx a")
    first_tx.click()
    wait(browser, lambda d: "/receipt" in d.current_url and d.find_elements("css selector", "td.col-event"))
    check_receipt(browser)


def check_receipt(browser) -> None:
    shown = visible_text(browser)
    assert "alice" in shown and "memory.jsonl:1" in shown
    keys = browser.find_elements("css selector", "dl.fgraph-meta dt")
    values = browser.find_elements("css selector", "dl.fgraph-meta dd")
    meta = {key.text: value.text for key, value in zip(keys, values)}
    assert len(keys) == len(values) == 3 and keys[0].location["y"] == values[0].location["y"]   # key beside value
    assert meta["ticket"] == "ISSUE-31" and meta["tool"] == "mcp memory server"   # meta as a small table
    uuid = browser.find_element("css selector", "td.col-event code.fgraph-id")
    assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", uuid.text)
    assert "mono" in uuid.value_of_css_property("font-family").lower()
    lines = browser.execute_script("return arguments[0].getClientRects().length", uuid)
    line_height = browser.execute_script(
        "const s = getComputedStyle(arguments[0]); return parseFloat(s.lineHeight) || 1.5 * parseFloat(s.fontSize)",
        uuid)
    assert lines == 1 and uuid.size["height"] <= 1.5 * line_height, (lines, uuid.size, line_height)
    assert_no_sql(browser)
    for width in (1280, 760):                      # a laptop and a narrow window alike
        browser.set_window_size(width, 900)
        assert all(v <= 0 for v in overflow(browser).values()), (width, overflow(browser))
        assert browser.execute_script("return arguments[0].getClientRects().length", uuid) == 1
    browser.set_window_size(1280, 900)
    shoot(browser, "5-receipt")


def test_the_sql_shows_only_when_asked_for(browser, site):
    open_page(browser, f"{site}/entity?entity=Ada+Lovelace")
    assert_no_sql(browser)
    follow(browser, "show the SQL")
    sql = browser.find_element("id", "sql-query").text
    assert "fgraph_now" in sql and SQL_TEXT.search(visible_text(browser))
    follow(browser, "hide the SQL")
    assert_no_sql(browser)


def test_attributes_have_their_own_page_and_entities_list_none(browser, site):
    open_page(browser, f"{site}/entities")
    entities = {td.text for td in browser.find_elements("css selector", "td.col-entity")}
    assert {"Ada Lovelace", "Grace Hopper"} <= entities
    assert not {e for e in entities if e.startswith(("memory/", "rel/", "decision/"))}, entities
    assert_no_sql(browser)
    shoot(browser, "6-entities")
    follow(browser, "Attributes")
    attributes = {td.text: td for td in browser.find_elements("css selector", "td.col-attribute")}
    assert {"memory/name", "memory/observation", "rel/inspired_by", "decision/what"} <= set(attributes)
    assert "Ada Lovelace" not in attributes
    assert_no_sql(browser)
    shoot(browser, "7-attributes")
    attributes["memory/name"].find_element("tag name", "a").click()
    wait(browser, lambda d: "/entity" in d.current_url)
    assert "An attribute." in visible_text(browser)


def test_an_entitys_transactions_link_to_their_receipts(browser, site):
    open_page(browser, f"{site}/entity?entity=Ada+Lovelace")
    follow(browser, "Its transactions (receipts)")
    rows = browser.find_elements("css selector", ".rows-and-columns tbody tr")
    assert len(rows) == 4, len(rows)     # its own creation and the three relations made from it
    assert {td.text for td in browser.find_elements("css selector", "td.col-by")} == {"alice"}
    assert_no_sql(browser)
    shoot(browser, "8-receipts")
    browser.find_elements("css selector", "td.col-tx a")[-1].click()   # the oldest: the one with the meta
    wait(browser, lambda d: "/receipt" in d.current_url and d.find_elements("css selector", "td.col-event"))
    check_receipt(browser)


def test_a_search_that_finds_nothing_or_is_too_long_says_so(browser, site):
    open_page(browser, f"{site}/-/search?q=zzyzx+qwertyuiop")
    assert "No entity matches" in visible_text(browser)
    open_page(browser, f"{site}/-/search?q=" + "a" * 300)
    assert "at most 200 characters" in visible_text(browser)
    assert "Traceback" not in browser.page_source
