"""The pages of ``fgraph browse`` for people (issue 31 item 1, docs/browse.md decision B2).

Datasette's own ways, nothing patched: templates shipped with the package (``templates/``:
the store's page, a layout for the canned queries, the search page), the canned queries with their
SQL hidden (``hide_sql``; "show the SQL" brings it back), and ``PeoplePages``, a plugin that

- routes ``/`` to the store's page and serves ``/fgraph/-/search``, which asks the library's
  entity-level recall (``Db.search(match="fill")``, docs/search.md decision S1) on a read-only
  handle of its own, in a worker thread, bounded by the words it takes and the search's work budget;
- gives the store's page its recent changes and the entity page its card (what it is, its links)
  and what refers to it, read with ``fgraph.query.browse.pages_sql`` on Datasette's own bounded
  connections, so docs/browse.md §Limits holds for them;
- renders UUIDs as monospace ids that do not wrap and a receipt's meta as a small key/value table.

``fgraph.bridges.browse.app`` registers it for the life of the server, beside ``CellRenderer``, whose
label lookup it borrows to name entities.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import urllib.parse

from datasette import Response, hookimpl
from datasette.database import QueryInterrupted
from markupsafe import Markup, escape

from fgraph.core.errors import FgraphError
from fgraph.core.values import format_instant
from fgraph.query.browse import pages_sql
from fgraph.query.browse import sql as browse_sql

DATABASE = "fgraph"          # the database's route: every page is under /fgraph
PAGES_NAME = "fgraph-browse-pages"
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
SEARCH_CHARS = 200           # the longest search a visitor may type
SEARCH_HITS = 20             # entities one search lists
META_SHOWN = 20              # keys of a receipt's meta shown as rows; the rest are counted
TOO_LONG_SEARCH = (f"a search is at most {SEARCH_CHARS} characters; search for a few words of the name "
                   "or of its facts")
READ_FAILED = "could not be read ({error}); reload the page, and if this persists check the file with `fgraph doctor`"


# ----------------------------------------------------------------- configuration

def canned_queries() -> dict:
    """Datasette's ``queries`` block: the pages of the view, their SQL hidden unless asked for."""
    page = browse_sql.PAGE_SIZE
    queries = {
        "entities": ("Entities", f"Identities that are not transactions or attributes, {page} at a time; "
                                 "page on with After = the last id shown.", browse_sql.ENTITIES),
        "attributes": ("Attributes", f"The attributes of the store by name, with their type, cardinality and "
                                     f"number of live facts, {page} at a time; page on with After = the last "
                                     "name shown.", pages_sql.ATTRIBUTES),
        "entity": ("Entity", "The live facts of one entity, given by name, id or UUID, with the transaction "
                             "that asserted each, and what refers to it.", browse_sql.ENTITY),
        "history": ("History", "Every assertion and retraction of one entity (optionally one attribute), as a "
                               "timeline of transactions with who made each and where it came from.",
                    browse_sql.HISTORY),
        "receipts": ("Transactions of an entity", f"The transactions that asserted or retracted facts of one "
                                                  f"entity, newest first, the last {page}.", pages_sql.RECEIPTS),
        "incoming": ("What refers to it", f"The entities whose live facts refer to one entity, by attribute, "
                                          f"the first {page}.", pages_sql.INCOMING),
        "receipt": ("Transaction receipt", "One transaction: its event UUID and hash, time, who, where, meta and "
                                           "operation id, and how many facts it asserted and retracted.",
                    browse_sql.RECEIPT),
        "changes": ("Transaction changes", "The facts one transaction asserted and retracted.", browse_sql.CHANGES),
        "events": ("Event stream", f"Committed events after a transaction (exclusive, as `fgraph tail --since`), "
                                   f"{page} at a time; page on with Since = the last tx shown.", browse_sql.EVENTS),
    }
    return {name: {"sql": sql, "title": title, "description": description, "hide_sql": True}
            for name, (title, description, sql) in queries.items()}


def metadata(path: str) -> dict:
    """Datasette metadata: the title, a short guide and the canned queries."""
    base = f"/{DATABASE}"
    guide = (f'Read-only. <a href="{base}">Search</a> for an entity, or start at '
             f'<a href="{base}/entities">entities</a>, <a href="{base}/attributes">attributes</a> or the '
             f'<a href="{base}/events">event stream</a>.')
    return {
        "title": f"fgraph: {os.path.basename(path)}",
        "description_html": guide,
        "databases": {DATABASE: {"description_html": guide, "queries": canned_queries()}},
    }


# ----------------------------------------------------------------- the plugin

class PeoplePages:
    """The Datasette plugin of the pages for people: the routes, the data of the store's page and
    of the entity card, and the cells it renders (UUIDs, meta)."""

    __name__ = PAGES_NAME

    def __init__(self, label):
        self.label = label   # async (entity id, datasette) -> (selector, text): CellRenderer.label

    @hookimpl
    def register_routes(self, datasette):
        return [(r"^/$", self.home), (rf"^/{DATABASE}/-/search$", self.search)]

    async def home(self, datasette):
        return Response.redirect(datasette.urls.database(DATABASE))

    async def search(self, datasette, request):
        """The search page: the entities whose names or facts hold the words of ``q``."""
        text = " ".join((request.args.get("q") or "").split())
        context = {"q": text, "hits": [], "error": None}
        if len(text) > SEARCH_CHARS:
            context["error"] = TOO_LONG_SEARCH
        elif text:
            try:
                result = await asyncio.to_thread(_search, datasette.get_database(DATABASE).path, text)
            except FgraphError as exc:
                context["error"] = str(exc)   # the library's words: what went wrong and what to do
            else:
                context["hits"] = [await self._hit(hit, datasette) for hit in result["hits"]]
        page = await datasette.render_template("fgraph-search.html", context, request=request)
        return Response.html(page)

    @hookimpl
    def extra_template_vars(self, template, database, request, datasette):
        if database not in (DATABASE, None) or request is None:
            return None

        async def more():
            found = {"fgraph_search_url": datasette.urls.path(f"/{DATABASE}/-/search"),
                     "fgraph_urls": {name: datasette.urls.query(DATABASE, name) for name in canned_queries()}}
            if template == f"database-{DATABASE}.html":
                found.update(await self._recent(datasette))
            elif template == f"query-{DATABASE}-entity.html":
                found.update(await self._card(request.args.get("entity") or "", datasette))
            return found
        return more

    @hookimpl(tryfirst=True)
    def render_cell(self, row, value, column, table, database, datasette):
        if database != DATABASE or table is not None:
            return None
        if column in pages_sql.ID_COLUMNS and isinstance(value, str):
            return Markup(f'<code class="fgraph-id">{escape(value)}</code>')
        if column in pages_sql.HASH_COLUMNS and isinstance(value, str):
            return Markup(f'<code class="fgraph-hash">{escape(value)}</code>')
        if column == "meta" and isinstance(value, str):
            return meta_table(value)
        return None

    # ------------------------------------------------------------- the data of the pages

    async def _recent(self, datasette) -> dict:
        """The store page's recent changes: one item per transaction, newest first."""
        try:
            rows = (await datasette.get_database(DATABASE).execute(pages_sql.RECENT)).rows
            recent = [await self._change(row, datasette) for row in rows]
        except (sqlite3.Error, QueryInterrupted, FgraphError, ValueError, TypeError) as exc:
            return {"recent": [], "recent_error": f"The recent changes {READ_FAILED.format(error=exc)}"}
        return {"recent": recent, "recent_error": None}

    async def _change(self, row, datasette) -> dict:
        ids = [int(part) for part in (row["entities"] or "").split(",") if part]
        return {"tx": row["tx"], "receipt": query_url(datasette, "receipt", tx=row["tx"]),
                "changes": query_url(datasette, "changes", tx=row["tx"]), "at": _when(row["at"]),
                "by": row["by"], "source": row["source"], "asserted": row["asserted"],
                "retracted": row["retracted"], "more": len(ids) > pages_sql.RECENT_NAMED,
                "entities": [await self._entity(e, datasette) for e in ids[:pages_sql.RECENT_NAMED]]}

    async def _card(self, selector: str, datasette) -> dict:
        """The entity page's card: what the entity is, its links, and what refers to it."""
        if not selector:
            return {"card": None}
        db = datasette.get_database(DATABASE)
        try:
            row = (await db.execute(pages_sql.ENTITY_CARD, {"entity": selector})).first()
            if row is None:
                return {"card": None}
            referrers = (await db.execute(pages_sql.INCOMING, {"entity": selector})).rows
            incoming = [{"attribute": r["attribute"], "attribute_url": query_url(datasette, "entity", entity=r["attribute"]),
                         **await self._entity(r["entity"], datasette)}
                        for r in referrers[:pages_sql.INCOMING_SHOWN]]
        except (sqlite3.Error, QueryInterrupted, FgraphError, ValueError, TypeError) as exc:
            return {"card": None, "card_error": f"This entity's card {READ_FAILED.format(error=exc)}"}
        key = str(row["id"]) if row["name"] is None else row["name"]
        links = {name: query_url(datasette, name, entity=key) for name in ("history", "receipts", "incoming")}
        card = {"id": row["id"], "name": row["name"], "uuid": row["uuid"], "label": row["name"] or row["uuid"],
                "created_tx": row["created_tx"], "created_url": query_url(datasette, "receipt", tx=row["created_tx"]),
                "is_attribute": bool(row["is_attribute"]), "is_transaction": bool(row["is_transaction"]),
                "live_facts": row["live_facts"], "links": links,
                "receipt_url": query_url(datasette, "receipt", tx=row["id"]),
                "uses_url": datasette.urls.table(DATABASE, "fgraph_now") + "?" +
                urllib.parse.urlencode({"attribute": row["name"] or ""}),
                "incoming": incoming, "incoming_more": len(referrers) > pages_sql.INCOMING_SHOWN}
        return {"card": card}

    async def _entity(self, eid: int, datasette) -> dict:
        selector, text = await self.label(eid, datasette)
        return {"label": text, "url": query_url(datasette, "entity", entity=selector), "anonymous": selector == str(eid)}

    async def _hit(self, hit: dict, datasette) -> dict:
        """One search hit for the page: the entity's link and the facts that matched."""
        entity = hit["entity"]
        if isinstance(entity, int):
            found = await self._entity(entity, datasette)
        else:
            found = {"label": entity, "url": query_url(datasette, "entity", entity=entity), "anonymous": False}
        matched = []
        for evidence in hit.get("matched") or ():
            shown = evidence.get("snippet") or evidence.get("v")
            matched.append({"attribute": evidence.get("a"),
                            "text": shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False),
                            "own": evidence.get("e") == entity})
        return {**found, "matched": matched[:3], "by_words": hit.get("how") == "entity"}


# ----------------------------------------------------------------- helpers

def _search(path: str, text: str):
    from fgraph.db import connect   # the library's own read-only handle, opened per search
    with connect(path, read_only=True) as db:
        return db.search(text=text, match="fill", k=SEARCH_HITS)


def query_url(datasette, query: str, **params) -> str:
    """The path of canned query ``query`` with its parameters."""
    return f"{datasette.urls.query(DATABASE, query)}?{urllib.parse.urlencode(params)}"


def _when(value):
    return format_instant(value) if type(value) is int else value


def meta_table(text: str):
    """A receipt's meta (a JSON object) as a small table of its keys (a definition list laid out as
    two columns: a table inside the receipt's table would split its row), or None for any other JSON."""
    try:
        meta = json.loads(text)
    except ValueError:
        return None
    if not isinstance(meta, dict) or not meta:
        return None
    rows = []
    for key, value in list(meta.items())[:META_SHOWN]:
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        rows.append(f"<dt>{escape(key)}</dt><dd>{escape(shown)}</dd>")
    if len(meta) > META_SHOWN:
        rows.append(f"<dt>…</dt><dd>and {len(meta) - META_SHOWN} more keys (this page as JSON has them all)</dd>")
    return Markup(f'<dl class="fgraph-meta">{"".join(rows)}</dl>')
