"""``fgraph browse``: a read-only web view of one store, served by Datasette (issue 16).

Datasette runs in this process on uvicorn. Three things make it fgraph's view:

- the file is attached through ``ReadOnlyFile``, whose every connection, including the one
  Datasette would write through, is ``fgraph.query.browse.sql.connect_read_only``: ``mode=ro``
  (so committed transactions still in the WAL are seen, which ``immutable=1`` would miss)
  with ``query_only``;
- canned queries (entities, attributes, entity, history, receipts, incoming, receipt, changes,
  events), whose SQL lives in ``fgraph.query.browse.sql`` and ``fgraph.query.browse.pages_sql`` because the face
  holds none, shown as pages for people by ``fgraph.bridges.browse.pages`` (its templates, the
  store's page with a search box and the recent changes, decision B2);
- ``CellRenderer``, a Datasette plugin registered for the life of the server, which renders a
  ``value`` by the ``tag`` beside it (refs as links to their entity, instants as RFC 3339,
  bytes, vectors and JSON in their wire form) and links transactions to their receipt.

What one request may take is bounded (issue 29 item 7, docs/browse.md §Limits): arbitrary SQL is
off unless ``allow_sql`` (Datasette's ``default_allow_sql``; ``SqlRefusal`` words the 403), every
connection carries the bounds of ``browse_sql.connect_read_only`` under one ``Guard`` per server,
the SQLite library's heap is limited for the process, and SIGTERM or Ctrl-C stops the guard
(interrupting every running statement) before uvicorn's shutdown, which waits at most
``BROWSE_STOP_SECONDS`` for the answers in flight.

Only ``fgraph.cli.browse`` imports this module, and only once it knows Datasette is there.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import urllib.parse
import webbrowser

import uvicorn
from datasette import Response, hookimpl
from datasette.app import Datasette
from datasette.database import Database
from datasette.plugins import pm
from datasette.utils.asgi import Base400
from datasette.views.base import DatasetteError
from markupsafe import Markup, escape

from fgraph.core.canonical import dumps
from fgraph.core.errors import FgraphError
from fgraph.core.limits import BROWSE_HEAP_BYTES, BROWSE_STOP_SECONDS, BROWSE_TIME_LIMIT_MS
from fgraph.core.values import INDIRECT_TAGS, TAG_REF, format_instant, logical_name, render
from fgraph.bridges.browse import pages as browse_pages
from fgraph.bridges.browse.pages import DATABASE, metadata
from fgraph.query.browse import sql as browse_sql

PLUGIN_NAME = "fgraph-browse-cells"
REFUSAL_NAME = "fgraph-browse-sql"
ERRORS_NAME = "fgraph-browse-errors"
DATASETTE_ERRORS = "datasette.handle_exception"   # the default plugin ErrorPages stands in for while serving
READ_METHODS = frozenset({"GET", "HEAD"})
LABEL_CACHE_LIMIT = 10_000   # identities whose labels are remembered (names are permanent, ids never reused)
SETTINGS = {
    "default_cache_ttl": 0,       # the file may change under the view at any moment: never cache a page
    "suggest_facets": False,      # facet suggestions run extra queries on every table page
    "allow_download": False,      # the view shows the store; copying the file is `fgraph backup`'s job
    "sql_time_limit_ms": BROWSE_TIME_LIMIT_MS,   # Datasette's own deadline; the Guard's watchdog keeps the same one
}
SQL_OFF = ("fgraph browse runs no SQL of your own unless it was started with --sql: use the pages "
           "(search, entities, attributes, entity, history, receipt, changes, events) and the table pages, "
           "or restart it as "
           "`fgraph browse --sql`")


# ----------------------------------------------------------------- configuration

class ReadOnlyFile(Database):
    """A Datasette database whose every connection is read-only inside SQLite itself, and bounded."""

    def __init__(self, ds: Datasette, path: str, guard: browse_sql.Guard):
        super().__init__(ds, path=path, is_mutable=True)  # mutable: Datasette re-reads the schema as the file grows
        self.guard = guard

    def connect(self, write: bool = False):
        conn = browse_sql.connect_read_only(self.path, self.guard)
        self._all_file_connections.append(conn)
        return conn


def build(path: str, *, allow_sql: bool = False, guard: browse_sql.Guard | None = None) -> Datasette:
    """A Datasette serving ``path`` alone, read-only, under ``/fgraph``; arbitrary SQL only if ``allow_sql``."""
    ds = Datasette(metadata=metadata(path), settings={**SETTINGS, "default_allow_sql": allow_sql},
                   template_dir=browse_pages.TEMPLATES)
    for name in list(ds.databases):
        if name != "_internal":
            ds.remove_database(name)  # the empty in-memory database Datasette adds when given no files
    ds.add_database(ReadOnlyFile(ds, os.path.abspath(path), guard or browse_sql.Guard()), name=DATABASE)
    return ds


class SqlRefusal:
    """The Datasette plugin that words the 403 of a request for SQL when ``--sql`` was not given:
    Datasette's own page says only "execute-sql"."""

    __name__ = REFUSAL_NAME

    @hookimpl
    def forbidden(self, datasette, request, message):
        if message != "execute-sql":
            return None

        async def refusal():
            if request.path.endswith(".json"):
                return Response.json({"ok": False, "error": SQL_OFF, "status": 403, "title": "SQL is off"},
                                     status=403)
            if request.path.endswith(".csv"):
                return Response.text(SQL_OFF + "\n", status=403)
            page = await datasette.render_template("error.html", {"title": "SQL is off", "error": SQL_OFF},
                                                   request=request)
            return Response.html(page, status=403)
        return refusal


class ErrorPages:
    """Datasette's error pages without its console dump. Datasette prints every exception it turns
    into a page, a 400 for a query stopped at its time limit included, as a traceback with locals
    on stdout: the CLI's output (the URL line), and, when nothing reads it, a pipe that fills after
    a few dozen errors and freezes the server. The pages are the same; an unexpected exception
    (a 500) is one line on stderr, and its page names it and says what to do."""

    __name__ = ERRORS_NAME

    @hookimpl(trylast=True)
    def handle_exception(self, datasette, request, exception):
        async def page():
            title = None
            if isinstance(exception, Base400):
                status, info, message = exception.status, {}, exception.args[0]
            elif isinstance(exception, DatasetteError):
                status, info, title = exception.status, dict(exception.error_dict), exception.title
                message = Markup(exception.message) if exception.message_is_html else exception.message
            else:
                status, info, title = 500, {}, "fgraph browse could not answer"
                message = (f"{type(exception).__name__}: {exception}; reload the page, and if this persists "
                           "check the file with `fgraph doctor`")
                sys.stderr.write(f"fgraph browse: {request.path}: {message}\n")
            info.update({"ok": False, "error": message, "status": status, "title": title})
            if request.path.endswith(".json"):
                return Response.json(info, status=status)
            return Response.html(await datasette.render_template([f"{status}.html", "error.html"], info,
                                                                 request=request), status=status)
        return page


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


def serve(path: str, sock: socket.socket, url: str, *, open_browser: bool = False, allow_sql: bool = False) -> None:
    """Serve ``path`` on the listening ``sock`` until SIGINT or SIGTERM; uvicorn shuts down gracefully,
    after the running statements are interrupted, within ``BROWSE_STOP_SECONDS``."""
    renderer = CellRenderer()
    pm.register(renderer, name=PLUGIN_NAME)
    pm.register(browse_pages.PeoplePages(renderer.label), name=browse_pages.PAGES_NAME)
    pm.register(SqlRefusal(), name=REFUSAL_NAME)
    default_errors = pm.unregister(name=DATASETTE_ERRORS)
    pm.register(ErrorPages(), name=ERRORS_NAME)
    try:
        server = asyncio.run(_serve(path, sock, url, open_browser, allow_sql))
    finally:
        for name in (PLUGIN_NAME, browse_pages.PAGES_NAME, REFUSAL_NAME, ERRORS_NAME):
            pm.unregister(name=name)
        if default_errors is not None:
            pm.register(default_errors, name=DATASETTE_ERRORS)
        sock.close()
    if server.interrupted:
        # uvicorn re-raises a captured SIGINT after its graceful shutdown, but asyncio.run only turns
        # it into KeyboardInterrupt when the main task has not finished yet: a race, so say it here.
        raise KeyboardInterrupt


class BrowseServer(uvicorn.Server):
    """uvicorn's server, remembering whether Ctrl-C (SIGINT) ended it, so the CLI exits 130 either way,
    and stopping the guard of its statements on either signal: the running ones are interrupted and
    answered at once, so the graceful shutdown has nothing long to wait for."""

    def __init__(self, config: uvicorn.Config, guard: browse_sql.Guard | None = None):
        super().__init__(config)
        self.interrupted = False
        self.guard = guard

    def handle_exit(self, sig, frame) -> None:
        if sig == signal.SIGINT:
            self.interrupted = True
        if self.guard is not None:
            self.guard.stop()
        super().handle_exit(sig, frame)


def refuse_writes(app):
    """The ASGI app ``app`` answering 405 to every method but GET and HEAD, before Datasette sees it.

    Nothing behind it could write (every connection is read-only in SQLite), but Datasette's
    POST handlers would still run and, for a read-only canned query, fail with a 500; a plain
    refusal says what the view is."""
    async def guarded(scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in READ_METHODS:
            await _plain(send, 405, "fgraph browse is read-only: only GET and HEAD are served",
                         [(b"allow", b"GET, HEAD")])
            return
        await app(scope, receive, send)
    return guarded


def answer_when_cut(app):
    """The ASGI app ``app`` answering 503 to a request the shutdown cuts.

    uvicorn cancels the requests still running ``BROWSE_STOP_SECONDS`` after SIGTERM or Ctrl-C (a
    statement SQLite could not interrupt); left alone, it logs a traceback and answers "Internal
    Server Error". A cancelled request is said to be cut by the shutdown instead."""
    async def answering(scope, receive, send):
        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, tracked)
        except asyncio.CancelledError:
            if scope["type"] != "http":
                raise
            if not started:
                await _plain(send, 503, "fgraph browse stopped before this request was answered; "
                                        "ask again once it is running")
    return answering


async def _plain(send, status: int, text: str, headers: list | None = None) -> None:
    body = (text + "\n").encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), *(headers or []),
                            (b"content-length", str(len(body)).encode("ascii"))]})
    await send({"type": "http.response.body", "body": body})


async def _serve(path: str, sock: socket.socket, url: str, open_browser: bool, allow_sql: bool) -> BrowseServer:
    if not browse_sql.limit_heap(BROWSE_HEAP_BYTES):   # process-wide: set here, in the server, only
        sys.stderr.write("fgraph browse: this Python's sqlite3 cannot limit SQLite's heap; the length, "
                         "answer and time limits still apply\n")
    guard = browse_sql.Guard()
    ds = build(path, allow_sql=allow_sql, guard=guard)
    await ds.invoke_startup()
    if open_browser:
        webbrowser.open(url)
    # A statement SQLite cannot interrupt (one call of a function over long values) may outlast the
    # guard's stop; uvicorn then gives up on its answer after BROWSE_STOP_SECONDS and the process ends.
    config = uvicorn.Config(refuse_writes(answer_when_cut(ds.app())), lifespan="on", log_level="warning", access_log=False,
                            timeout_graceful_shutdown=BROWSE_STOP_SECONDS)
    server = BrowseServer(config, guard)
    try:
        await server.serve(sockets=[sock])
    finally:
        # After Ctrl-C a step SQLite could not interrupt may still run on one connection: closing it
        # under the step would crash the process, so they are left to the exit, which waits for it.
        if guard.idle(BROWSE_STOP_SECONDS):
            for database in ds.databases.values():
                database.close()
    return server
