"""``fgraph proposals list|accept|reject``: a person decides what an agent proposed through
``fgraph mcp --propose FILE`` (issue 51, docs/proposals.md); it registers itself on the ``cli``
group when imported (``COMMAND_HOMES``)."""

from __future__ import annotations

import os

import click

from fgraph.cli.base import (DB_KEY, EXIT_ERROR, EXIT_OK, JSON_KEY, RW, cli, common_options, open_and_call,
                             print_result, write_line)
from fgraph.cli.completion import PATH
from fgraph.cli.paths import resolve_db_path
from fgraph.core import settings


def _show(ctx, result, text) -> int:
    if ctx.meta.get(JSON_KEY):
        print_result(ctx, result)
    else:
        write_line(text(result))
    return EXIT_ERROR if result.get("conflicts") or result.get("dropped") else EXIT_OK


def _db_path(ctx) -> str:
    return resolve_db_path(ctx.meta.get(DB_KEY), os.environ)


def _decide(ctx, call):
    """``call(db)`` on the store, which must exist: deciding against a new file would create it."""
    from fgraph.bridges.reviewing import require_receiver
    require_receiver(_db_path(ctx))
    return open_and_call(ctx, RW, call)


@cli.group()
@common_options
def proposals():
    """Decide the writes an agent proposed (`fgraph mcp --propose FILE`): list, accept, reject.

    Every command first finishes a decision a killed command left unfinished. Accepted proposals
    are applied to the store exactly as reviewed; decided ones move to FILE.decided.ndjson.

    \b
    Example: fgraph --db project.db proposals list proposals.ndjson
    """


@proposals.command("list")
@common_options
@click.argument("file", type=PATH)
@click.argument("ids", nargs=-1)
@click.pass_context
def list_(ctx, file, ids):
    """The pending proposals (or those named) and the digest accepting them needs.

    \b
    Example: fgraph --db project.db proposals list proposals.ndjson
    """
    from fgraph.bridges.proposals import decide, show
    result = _decide(ctx, lambda db: decide.listing(db, file, list(ids)))
    return _show(ctx, result, lambda r: show.listing_text(r, _db_path(ctx)))


def _decision_options(f):
    f = click.option("--by", metavar="WHO", envvar=settings.BY, show_envvar=True,
                     help="Who decides (kept in the audit record).")(f)
    f = click.option("--all", "every", is_flag=True, help="Every pending proposal instead of the ids named.")(f)
    f = click.argument("ids", nargs=-1)(f)
    f = click.argument("file", type=PATH)(f)
    return common_options(f)


@proposals.command()
@_decision_options
@click.option("--expect-digest", metavar="DIGEST", required=True,
              help="The digest `fgraph review FILE` or `fgraph proposals list FILE ID…` printed for this selection; "
              "other bytes (an edited file, another selection) are refused.")
@click.pass_context
def accept(ctx, file, ids, every, by, expect_digest):
    """Apply the selected proposals to the store, exactly as reviewed, and record the decision.

    Proposals planned on an older store are checked again: a conflict is shown (exit 1) and
    nothing is written.

    \b
    Example: fgraph --db project.db proposals accept proposals.ndjson p-0123456789abcdef01234567 --expect-digest blake3:…
    """
    from fgraph.bridges.proposals import decide, show
    result = _decide(ctx, lambda db: decide.decide(db, file, list(ids), every=every, accept=True,
                                                   expect_digest=expect_digest, by=by))
    return _show(ctx, result, show.decision_text)


@proposals.command()
@_decision_options
@click.option("--reason", metavar="TEXT", help="Why (kept in the audit record).")
@click.pass_context
def reject(ctx, file, ids, every, by, reason):
    """Drop the selected proposals from the pending file and record the decision; the store is not changed.

    \b
    Example: fgraph --db project.db proposals reject proposals.ndjson --all --reason "not now"
    """
    from fgraph.bridges.proposals import decide, show
    result = _decide(ctx, lambda db: decide.decide(db, file, list(ids), every=every, accept=False,
                                                   by=by, reason=reason))
    return _show(ctx, result, show.decision_text)
