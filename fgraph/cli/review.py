"""The reviewed-stream commands (issue 35): ``review``, ``render`` and ``verify-stream``; they
register themselves on the ``cli`` group when imported (``COMMAND_HOMES``)."""

from __future__ import annotations

import os
import sys

import click

from fgraph.bridges import reviewing
from fgraph.cli.base import (DB_KEY, JSON_KEY, EXIT_ERROR, EXIT_OK, RW, print_result, remember_in_meta,
                             open_and_call, write_line, cli, common_options)
from fgraph.cli.completion import PATH
from fgraph.cli.paths import resolve_db_path


@cli.command()
@common_options
@click.argument("stream", type=PATH)
@click.option("--against", metavar="DB", type=PATH, expose_value=False, callback=remember_in_meta(DB_KEY),
              help="The receiver to review against (the same as --db).")
@click.option("--digest", is_flag=True, help="Print only the BLAKE3 digest of the stream's exact bytes "
              "(for apply --expect-digest); no database is opened.")
@click.pass_context
def review(ctx, stream, digest):
    """Report what applying an event/1 stream (file or '-') would do; write nothing.

    Markdown for people (--json for tools): per entity the facts asserted and retracted, the
    receiver's values they replace, unique collisions, names that unify, events already applied
    and every line apply would refuse. Exit 1 when apply would refuse the stream.

    \b
    Example: fgraph --db replica.db review memory.events.ndjson
    """
    if digest:
        result = reviewing.digest_stream(stream, sys.stdin)
        write_line(result["digest"]) if not ctx.meta.get(JSON_KEY) else print_result(ctx, result)
        return EXIT_OK
    reviewing.require_receiver(resolve_db_path(ctx.meta.get(DB_KEY), os.environ))
    result = open_and_call(ctx, RW, lambda db: reviewing.review_stream(db, stream, sys.stdin))
    if ctx.meta.get(JSON_KEY):
        print_result(ctx, result)
    else:
        write_line(reviewing.review_markdown(result))
    return EXIT_OK if result["would_apply"] else EXIT_ERROR


@cli.command()
@click.argument("stream", default="-", type=PATH)
def render(stream):
    """Print an event/1 stream (file or '-') as stable text, one fact per line.

    Made for git: `git config diff.fgraph.textconv "fgraph render"` (docs/streams.md).

    \b
    Example: fgraph render memory.events.ndjson
    """
    sys.stdout.flush()
    reviewing.render_stream(stream, sys.stdin, sys.stdout.buffer)


@cli.command("verify-stream")
@common_options
@click.argument("stream", type=PATH)
@click.option("--chain", "chain", metavar="FILE", type=PATH, required=True,
              help="The hash chain `fgraph tail --chain FILE` wrote beside the stream.")
@click.pass_context
def verify_stream(ctx, stream, chain):
    """Check a collected stream against its hash chain; exit 1 when truncated, reordered or edited.

    \b
    Example: fgraph verify-stream memory.events.ndjson --chain memory.chain
    """
    result = reviewing.verify_chained(stream, chain, sys.stdin)
    print_result(ctx, result)
    return EXIT_OK if result["intact"] else EXIT_ERROR
