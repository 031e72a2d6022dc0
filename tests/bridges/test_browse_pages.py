"""Proves the pages of `fgraph browse` for people (fgraph/bridges/browse/pages.py, issue 31 item 1,
docs/browse.md decision B2) over HTTP: the store's page with its search box and recent changes,
the search by the library's entity-level recall, the entity card with what refers to it, the
canned queries' SQL hidden unless asked for, and a receipt's meta as a table. What a person sees
in a browser is tests/bridges/test_browse_browser.py's."""

from __future__ import annotations

import html
import importlib.util
import re
import urllib.parse

import pytest

from tests.support.browse import build_store, fetch, page, start_browse, stop, texts

needs_datasette = pytest.mark.skipif(importlib.util.find_spec("datasette") is None,
                                     reason="Datasette is not installed (pip install -e '.[test,browse]')")


class Site:
    """The served store's URL and the reports of its transactions."""

    def __init__(self, url: str, reports: dict):
        self.url, self.reports = url, reports


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if importlib.util.find_spec("datasette") is None:
        pytest.skip("Datasette is not installed (pip install -e '.[test,browse]')")
    path = tmp_path_factory.mktemp("pages") / "team.fgraph"
    reports = build_store(path)
    import fgraph
    with fgraph.connect(str(path)) as db:
        reports["meta"] = db.transact({"id": "grace", "person/name": "Grace Hopper"}, by="importer",
                                      meta={"ticket": "ISSUE-31", "note": "<b>not html</b>", "n": 3})
    proc, url = start_browse(path)
    try:
        yield Site(url, reports)
    finally:
        stop(proc)


def text_of(markup: str) -> str:
    """The page's text without its tags, scripts and styles, whitespace collapsed."""
    markup = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.S | re.I)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def get(site: Site, path: str) -> tuple[int, str]:
    return fetch(site.url.removesuffix("/fgraph") + path)


@needs_datasette
def test_the_store_page_has_a_search_box_and_the_recent_changes(site):
    status, markup = get(site, "/fgraph")
    assert status == 200
    assert 'action="/fgraph/-/search"' in markup and 'name="q"' in markup
    shown = text_of(markup)
    assert "Recent changes" in shown and "ada-importer" in shown and "notes/ada.md" in shown and "editor" in shown
    assert f'href="/fgraph/receipt?tx={site.reports["retract"]["tx"]}"' in markup
    assert 'href="/fgraph/entity?entity=ada"' in markup                 # what changed, linked by name
    assert "select * from" not in markup and 'name="sql"' not in markup  # no SQL box without --sql
    assert get(site, "/fgraph/-/search")[0] == 200
    status, root = get(site, "/")
    assert status == 200 and "Recent changes" in text_of(root)         # the root follows to the store's page


@needs_datasette
def test_search_finds_an_entity_by_its_name_in_any_case(site):
    status, markup = get(site, "/fgraph/-/search?q=" + urllib.parse.quote("ada LOVELACE"))
    assert status == 200
    names = re.findall(r'class="fgraph-hit-name" href="([^"]+)">([^<]+)</a>', markup)
    assert names[0] == ("/fgraph/entity?entity=ada", "ada")
    status, markup = get(site, "/fgraph/-/search?q=babbage")
    assert ("/fgraph/entity?entity=charles", "charles") in \
        re.findall(r'class="fgraph-hit-name" href="([^"]+)">([^<]+)</a>', markup)


@needs_datasette
@pytest.mark.parametrize("words", ['"ada', "ada*", "</script><b>x", "NOT AND OR", "ada)(", "%", "\u00e9\u6771"])
def test_search_takes_any_words_and_escapes_them(site, words):
    status, markup = get(site, "/fgraph/-/search?q=" + urllib.parse.quote(words))
    assert status == 200 and "Traceback" not in markup, markup[-1000:]
    assert "<b>x" not in markup


@needs_datasette
def test_a_search_too_long_is_refused_in_words(site):
    status, markup = get(site, "/fgraph/-/search?q=" + "a" * 201)
    assert status == 200 and "a search is at most 200 characters" in text_of(markup)


@needs_datasette
def test_the_entity_page_has_a_card_its_links_and_what_refers_to_it(site):
    status, markup = get(site, "/fgraph/entity?entity=ada")
    assert status == 200
    shown = text_of(markup)
    assert "What refers to it" in shown and "through its person/friend" in shown
    assert re.search(r'class="fgraph-referrer" href="/fgraph/entity\?entity=charles">charles</a>', markup)
    for target in ("history?entity=ada", "receipts?entity=ada"):
        assert f'href="/fgraph/{target}"' in markup
    assert texts(page(site, "entity", entity="ada"), "attribute") == [("person/born",), ("person/name",)]
    assert "An attribute." in text_of(get(site, "/fgraph/entity?entity=person/name")[1])
    status, markup = get(site, "/fgraph/entity?entity=nobody")
    assert status == 200 and "No entity is called “nobody”" in text_of(markup)
    assert 'href="/fgraph/-/search?q=nobody"' in markup


@needs_datasette
def test_the_receipts_and_incoming_pages_list_by_entity(site):
    reports = site.reports
    rows = page(site, "receipts", entity="ada")
    assert texts(rows, "tx", "by") == [(str(reports["born"]["tx"]), ""), (str(reports["retract"]["tx"]), "editor"),
                                       (str(reports["ada"]["tx"]), "ada-importer")]
    assert rows[0]["tx"][1] == f"/fgraph/receipt?tx={reports['born']['tx']}"
    assert texts(page(site, "incoming", entity="ada"), "attribute", "entity") == [("person/friend", "charles")]


@needs_datasette
def test_canned_queries_hide_their_sql_unless_asked(site):
    for query, params in (("entity", "entity=ada"), ("history", "entity=ada"), ("receipt", "tx=70"),
                          ("attributes", ""), ("entities", ""), ("events", "")):
        status, markup = get(site, f"/fgraph/{query}?{params}")
        assert status == 200 and 'id="sql-query"' not in markup and "fgraph_facts" not in text_of(markup), query
        assert "show the SQL" in text_of(markup)
        status, markup = get(site, f"/fgraph/{query}?{params}&_show_sql=1")
        assert status == 200 and 'id="sql-query"' in markup, query


@needs_datasette
def test_a_receipt_shows_meta_as_a_table_and_its_uuid_as_an_id(site):
    report = site.reports["meta"]
    [row] = page(site, "receipt", tx=str(report["tx"]))
    assert row["meta"][0] == "n3note<b>not html</b>ticketISSUE-31"   # the keys in order, each beside its value
    status, markup = get(site, f"/fgraph/receipt?tx={report['tx']}")
    assert '<dl class="fgraph-meta">' in markup and "&lt;b&gt;not html&lt;/b&gt;" in markup
    assert f'<code class="fgraph-id">{report["event"]}</code>' in markup
    assert '<code class="fgraph-hash">' in markup


@needs_datasette
def test_meta_tables_escape_cut_and_leave_other_json_alone():
    from fgraph.bridges.browse import pages as browse_pages
    assert browse_pages.meta_table('[1, 2]') is None and browse_pages.meta_table("not json") is None
    assert browse_pages.meta_table("{}") is None
    table = str(browse_pages.meta_table('{"a": "<i>", "b": {"c": [1]}}'))
    assert "<dt>a</dt><dd>&lt;i&gt;</dd>" in table and '<dt>b</dt><dd>{&#34;c&#34;: [1]}</dd>' in table
    many = str(browse_pages.meta_table("{" + ", ".join(f'"k{i:02}": {i}' for i in range(25)) + "}"))
    assert many.count("<dt>") == browse_pages.META_SHOWN + 1 and "and 5 more keys" in many


@needs_datasette
def test_every_canned_query_hides_its_sql_and_says_what_it_shows():
    from fgraph.bridges.browse import pages as browse_pages
    queries = browse_pages.canned_queries()
    assert {"entities", "attributes", "entity", "history", "receipts", "incoming", "receipt", "changes",
            "events"} == set(queries)
    assert all(q["hide_sql"] and q["title"] and q["description"] for q in queries.values())
