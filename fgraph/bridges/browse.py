"""``fgraph browse``: a read-only web view of one store, served by Datasette (issue 16).

Datasette runs in this process on uvicorn. Three things make it fgraph's view:

- the file is attached through ``ReadOnlyFile``, whose every connection, including the one
  Datasette would write through, is ``fgraph.query.browse_sql.connect_read_only``: ``mode=ro``
  (so committed transactions still in the WAL are seen, which ``immutable=1`` would miss)
  with ``query_only``;
- canned queries (entity, history, receipt, changes, events, entities), whose SQL lives in
  ``fgraph.query.browse_sql`` because the face holds none;
- ``CellRenderer``, a Datasette plugin registered for the life of the server, which renders a
  ``value`` by the ``tag`` beside it (refs as links to their entity, instants as RFC 3339,
  bytes, vectors and JSON in their wire form) and links transactions to their receipt.

Only ``fgraph.cli.browse`` imports this module, and only once it knows Datasette is there.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import urllib.parse
import webbrowser

import uvicorn
from datasette import hookimpl
from datasette.app import Datasette
from datasette.database import Database
from datasette.plugins import pm
from markupsafe import Markup, escape

from fgraph.core.canonical import dumps
from fgraph.core.errors import FgraphError
from fgraph.core.values import INDIRECT_TAGS, TAG_REF, format_instant, logical_name, render
from fgraph.query import browse_sql

DATABASE = "fgraph"          # the database's route: every page is under /fgraph
PLUGIN_NAME = "fgraph-browse-cells"
READ_METHODS = frozenset({"GET", "HEAD"})
LABEL_CACHE_LIMIT = 10_000   # identities whose labels are remembered (names are permanent, ids never reused)
SETTINGS = {
    "default_cache_ttl": 0,       # the file may change under the view at any moment: never cache a page
    "suggest_facets": False,      # facet suggestions run extra queries on every table page
    "allow_download": False,      # the view shows the store; copying the file is `fgraph backup`'s job
    "sql_time_limit_ms": 2000,
}


# ----------------------------------------------------------------- configuration

def canned_queries() -> dict:
    """Datasette's ``queries`` block: the pages of the view, in the order the database page lists them."""
    return {
        "entities": {"sql": browse_sql.ENTITIES, "title": "Entities",
                     "description": f"Identities that are not transactions, {browse_sql.PAGE_SIZE} at a time; "
                                    "page on with after = the last id shown."},
        "entity": {"sql": browse_sql.ENTITY, "title": "Entity: current state",
                   "description": "The live facts of one entity, given by name, id or UUID, with the "
                                  "transaction that asserted each."},
        "history": {"sql": browse_sql.HISTORY, "title": "Entity: history",
                    "description": "Every assertion and retraction of one entity (optionally one attribute), "
                                   "as a timeline of transactions."},
        "receipt": {"sql": browse_sql.RECEIPT, "title": "Transaction receipt",
                    "description": "One transaction: its event UUID and hash, time, by, source, meta and "
                                   "operation id, and how many facts it asserted and retracted."},
        "changes": {"sql": browse_sql.CHANGES, "title": "Transaction changes",
                    "description": "The facts one transaction asserted and retracted."},
        "events": {"sql": browse_sql.EVENTS, "title": "Event stream",
                   "description": f"Committed events after transaction since (exclusive, as `fgraph tail --since`), "
                                  f"{browse_sql.PAGE_SIZE} at a time; page on with since = the last tx shown."},
    }


def metadata(path: str) -> dict:
    """Datasette metadata: the title, a short guide on the home page and the canned queries."""
    base = f"/{DATABASE}"
    guide = (f'Read-only. Start at <a href="{base}/entities">entities</a> or the '
             f'<a href="{base}/events">event stream</a>; look one entity up on '
             f'<a href="{base}/entity">entity</a> or <a href="{base}/history">history</a>.')
    return {
        "title": f"fgraph: {os.path.basename(path)}",
        "description_html": guide,
        "databases": {DATABASE: {"description_html": guide, "queries": canned_queries()}},
    }


class ReadOnlyFile(Database):
    """A Datasette database whose every connection is read-only inside SQLite itself."""

    def __init__(self, ds: Datasette, path: str):
        super().__init__(ds, path=path, is_mutable=True)  # mutable: Datasette re-reads the schema as the file grows

    def connect(self, write: bool = False):
        conn = browse_sql.connect_read_only(self.path)
        self._all_file_connections.append(conn)
        return conn


def build(path: str) -> Datasette:
    """A Datasette serving ``path`` alone, read-only, under ``/fgraph``."""
    ds = Datasette(metadata=metadata(path), settings=SETTINGS)
    for name in list(ds.databases):
        if name != "_internal":
            ds.remove_database(name)  # the empty in-memory database Datasette adds when given no files
    ds.add_database(ReadOnlyFile(ds, os.path.abspath(path)), name=DATABASE)
    return ds


# ----------------------------------------------------------------- rendering

class CellRenderer:
    """The Datasette plugin that renders the cells of the fgraph database by column name and value tag."""

    def __init__(self):
        self.__name__ = PLUGIN_NAME  # Datasette lists plugins by the module-style name it expects each to have
        self.labels: dict[int, tuple[str, str]] = {}

    @hookimpl
    def render_cell(self, row, value, column, table, database, datasette):
        if database != DATABASE or value is None:
            return None
        columns = row.keys()
        try:
            if column == browse_sql.VALUE_COLUMN and browse_sql.TAG_COLUMN in columns:
                return self.render_value(row[browse_sql.TAG_COLUMN], value, datasette)
            if column == browse_sql.TAG_COLUMN and browse_sql.VALUE_COLUMN in columns:
                return Markup(escape(logical_name(value)))
            if column in browse_sql.INSTANT_COLUMNS and type(value) is int:
                return _instant(value)
            if column in browse_sql.TX_COLUMNS and type(value) is int:
                return _link(datasette, "receipt", "tx", str(value), value)
            if column in browse_sql.ENTITY_COLUMNS and type(value) is int:
                return self.entity_link(value, datasette)
            if column in browse_sql.ATTRIBUTE_COLUMNS and isinstance(value, str):
                return _link(datasette, "entity", "entity", value, value)
            if column in browse_sql.CHANGE_COUNT_COLUMNS and type(value) is int and "tx" in columns:
                return _link(datasette, "changes", "tx", str(row["tx"]), value)
            if column in browse_sql.JSON_COLUMNS and isinstance(value, str):
                return _code(value, datasette)
        except (FgraphError, ValueError, TypeError):
            return None  # a damaged cell shows as stored; `fgraph doctor` is the place to diagnose it
        return None

    def render_value(self, tag, value, datasette):
        """One stored value by its tag; an awaitable for refs, whose label needs a lookup."""
        if tag == TAG_REF:
            return self.entity_link(value, datasette)
        indirect = tag in INDIRECT_TAGS  # the canned queries and views resolve these to their blob
        wire = render(tag, None if indirect else value, value if indirect else None, ref=lambda eid: eid)
        if isinstance(wire, str):
            return Markup(escape(_shorten(wire, datasette)))
        if isinstance(wire, dict) and "instant" in wire:
            return _instant(value)
        if isinstance(wire, dict):
            return _code(dumps(wire), datasette)
        return Markup(escape(dumps(wire)))

    def entity_link(self, eid: int, datasette):
        async def link():
            selector, label = await self.label(eid, datasette)
            return _link(datasette, "entity", "entity", selector, label)
        return link

    async def label(self, eid: int, datasette) -> tuple[str, str]:
        """An identity's (selector for the entity page, text of its link): its name, else its UUID."""
        known = self.labels.get(eid)
        if known is not None:
            return known
        result = await datasette.get_database(DATABASE).execute(browse_sql.IDENTITY_LABEL, [eid])
        row = result.first()
        if row is None:
            return str(eid), f"#{eid}"  # not cached: a damaged file, or a row Datasette read mid-change
        name, hexed = row
        found = (name, name) if name is not None else (str(eid), str(_uuid_text(hexed)))
        if len(self.labels) >= LABEL_CACHE_LIMIT:
            self.labels.clear()
        self.labels[eid] = found
        return found


def _link(datasette, query: str, parameter: str, argument: str, text) -> Markup:
    """A link to canned query ``query`` with its one parameter set."""
    url = f"{datasette.urls.query(DATABASE, query)}?{parameter}={urllib.parse.quote(argument, safe='')}"
    return Markup(f'<a href="{escape(url)}">{escape(str(text))}</a>')


def _uuid_text(hexed: str) -> str:
    return f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"


def _instant(us: int) -> Markup:
    text = format_instant(us)
    return Markup(f'<time datetime="{text}">{text}</time>')


def _shorten(text: str, datasette) -> str:
    limit = datasette.setting("truncate_cells_html") or 0
    if limit and len(text) > limit:
        return f"{text[:limit]}… ({len(text)} characters)"
    return text


def _code(text: str, datasette) -> Markup:
    return Markup(f"<code>{escape(_shorten(text, datasette))}</code>")


# ----------------------------------------------------------------- serving

def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: one the system picks); OSError when it is taken."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    """The address people type: the host as given (bracketed when IPv6), the port actually bound."""
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/{DATABASE}"


def serve(path: str, sock: socket.socket, url: str, *, open_browser: bool = False) -> None:
    """Serve ``path`` on the listening ``sock`` until SIGINT or SIGTERM; uvicorn shuts down gracefully."""
    renderer = CellRenderer()
    pm.register(renderer, name=PLUGIN_NAME)
    try:
        server = asyncio.run(_serve(path, sock, url, open_browser))
    finally:
        pm.unregister(name=PLUGIN_NAME)
        sock.close()
    if server.interrupted:
        # uvicorn re-raises a captured SIGINT after its graceful shutdown, but asyncio.run only turns
        # it into KeyboardInterrupt when the main task has not finished yet: a race, so say it here.
        raise KeyboardInterrupt


class _Server(uvicorn.Server):
    """uvicorn's server, remembering whether Ctrl-C (SIGINT) ended it, so the CLI exits 130 either way."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self.interrupted = False

    def handle_exit(self, sig, frame) -> None:
        if sig == signal.SIGINT:
            self.interrupted = True
        super().handle_exit(sig, frame)


def refuse_writes(app):
    """The ASGI app ``app`` answering 405 to every method but GET and HEAD, before Datasette sees it.

    Nothing behind it could write (every connection is read-only in SQLite), but Datasette's
    POST handlers would still run and, for a read-only canned query, fail with a 500; a plain
    refusal says what the view is."""
    async def guarded(scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in READ_METHODS:
            body = b"fgraph browse is read-only: only GET and HEAD are served\n"
            await send({"type": "http.response.start", "status": 405,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"allow", b"GET, HEAD"),
                                    (b"content-length", str(len(body)).encode("ascii"))]})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)
    return guarded


async def _serve(path: str, sock: socket.socket, url: str, open_browser: bool) -> _Server:
    ds = build(path)
    await ds.invoke_startup()
    if open_browser:
        webbrowser.open(url)
    config = uvicorn.Config(refuse_writes(ds.app()), lifespan="on", log_level="warning", access_log=False)
    server = _Server(config)
    try:
        await server.serve(sockets=[sock])
    finally:
        for database in ds.databases.values():
            database.close()
    return server
