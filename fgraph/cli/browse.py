"""The ``fgraph browse`` command (issue 16); it registers itself on the ``cli`` group when imported.

The serving is in ``fgraph.bridges.browse.app``, which needs Datasette, an optional extra: this module
imports it only when the command runs, so the rest of the CLI works without it.
"""

from __future__ import annotations

import importlib.util
import os

import click

from fgraph.core.errors import Unsupported
from fgraph.core.canonical import dumps
from fgraph.cli.base import DB_KEY, JSON_KEY, write_line, cli, common_options, connect
from fgraph.cli.paths import resolve_db_path


@cli.command()
@common_options
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0 or :: shows the store to your network).")
@click.option("--port", type=click.IntRange(0, 65535), default=8001, show_default=True,
              help="Port to listen on; 0 picks a free one.")
@click.option("--open", "open_browser", is_flag=True, help="Open the view in a web browser.")
@click.option("--sql", "allow_sql", is_flag=True,
              help="Also run visitors' own read-only SQL (Datasette's SQL box, ?sql=); off: refused with 403.")
@click.pass_context
def browse(ctx, host, port, open_browser, allow_sql):
    """Serve a read-only web view of the database (Datasette) until Ctrl-C.

    \b
    Prints the URL on stdout, then serves pages for people: a search box
    and the recent changes, each entity's facts, history and what refers
    to it, attributes, receipts and the event stream (docs/browse.md).
    Nothing is written to the file. Arbitrary SQL only with --sql; every
    query is bounded in time, length and memory (docs/browse.md, Limits).
    Needs the extra: pip install 'fgraph[browse]'

    \b
    Example:
      fgraph --db team.fgraph browse --port 0 --open
    """
    path = resolve_db_path(ctx.meta.get(DB_KEY), os.environ)
    with connect(path, read_only=True):
        pass  # NotFound for a missing file, FormatError for one that is not fgraph's, before any server starts
    web = _browse_module()
    try:
        sock = web.listen(host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                                   "pick another --port, or --port 0 for a free one") from None
    url = web.url_of(sock, host)
    write_line(dumps({"url": url}) if ctx.meta.get(JSON_KEY) else url)
    web.serve(path, sock, url, open_browser=open_browser, allow_sql=allow_sql)


def _browse_module():
    """``fgraph.bridges.browse.app``, or Unsupported when the ``browse`` extra is not installed."""
    if importlib.util.find_spec("datasette") is None:
        raise Unsupported("fgraph browse needs Datasette, which is not installed",
                          "install the extra: pip install 'fgraph[browse]'")
    from fgraph.bridges.browse import app as browse
    return browse
