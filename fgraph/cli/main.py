"""The ``fgraph`` command line: a thin skin over the library (spec 09).

A command parses its arguments, hands ``run_and_print`` the open mode and one library
call, and ``run_and_print`` resolves the path (``fgraph.cli.paths``), opens the database,
makes the call and prints the result. Outcomes become exit codes in one place,
``run()``: 0 success, 1 a typed error (``Name: message``) or an internal error,
2 a usage error; no traceback ever reaches the user (``FGRAPH_DEBUG=1``
re-raises unexpected exceptions for debugging).

Adding a command takes a few lines::

    @cli.command()
    @common_options
    @click.argument("ref")
    @click.pass_context
    def thing(ctx, ref):
        \"\"\"One-line purpose.\"\"\"
        run_and_print(ctx, RO, lambda db: db.thing(parse_ref(ref)))

Every command of the contract (spec 09, and ``mcp`` of spec 10) is defined.

This module holds the commands that write, read entities and history, stream and operate;
the question commands (q, explain, datoms, search, schema, shapes) are in
``fgraph.cli.questions`` and the shared plumbing in ``fgraph.cli.base``. No command
holds logic of its own.
"""

from __future__ import annotations

import os
import sys

import click

import fgraph
from fgraph.core import settings
from fgraph.core.limits import DEFAULT_QUERY_BUDGET, MAX_BATCH_SIZE
from fgraph.bridges.add import ingest
from fgraph.core.canonical import dumps
from fgraph.core.sqlite_errors import as_typed
from fgraph.cli.base import (AT_HELP, BUDGET_KEY, DB_KEY, JSON_KEY, connect, EXIT_ERROR, EXIT_INTERRUPT, EXIT_OK,
                             EXIT_PIPE, EXIT_USAGE, RO, RW, Escaped, parse_json_argument, resolve_loose_ref, flag_pair,
                             parse_ref, stdout_is_terminal, print_result, run_and_print, TimeParam, WhenParam,
                             write_line, cli, common_options, db_option, provenance_options)
from fgraph.cli.completion import PATH, VALUE_TYPES, DataText, Words
from fgraph.cli.paths import resolve_db_path
from fgraph.cli import long_running
from fgraph.cli.progress import beside, counted, progress


# ----------------------------------------------------------------- commands

@cli.command()
@common_options
@click.pass_context
def init(ctx):
    """Create the database if needed and print its statistics."""
    run_and_print(ctx, RW, lambda db: db.stats())


@cli.command()
@common_options
@click.option("--digest", is_flag=True, help="Also print basis_tx (the latest committed transaction) and the logical digest there.")
@click.option("--content-digest", is_flag=True,
              help="Also print basis_tx and the content digest there: equal in two copies holding the same events, "
                   "whatever their local receipt times and arrival order (docs/replication.md).")
@click.pass_context
def info(ctx, digest, content_digest):
    """Print the statistics of an existing database and its latest transaction."""
    run_and_print(ctx, RO, lambda db: db.info(digest, content_digest))


@cli.command()
@common_options
@click.argument("data", type=DataText())
@click.option("--operation-id", help="Idempotency key of the one transaction.")
@click.option("--operation-id-prefix", help="Batch k gets operation id PREFIX:k (8 digits); needs --batch-size.")
@click.option("--batch-size", type=click.IntRange(1, MAX_BATCH_SIZE), help="Transact records in batches of at most N.")
@click.option("--if-basis-tx", type=int, help="Fail with Conflict unless this is the latest committed transaction.")
@click.option("--reports", is_flag=True, help="NDJSON: print every record's report (the published output), "
              "not the summary.")
@provenance_options
@click.pass_context
def add(ctx, data, operation_id, operation_id_prefix, batch_size, if_basis_tx, reports, provenance=None):
    """Transact JSON or NDJSON given inline, as @file, or on stdin with '-'.

    One document prints its report; NDJSON prints {"transactions": N, "last_tx": ...} (--reports:
    every report); --batch-size prints the batch summary. Progress on a terminal."""
    if operation_id_prefix is not None and operation_id is not None:
        raise click.UsageError("choose --operation-id for one transaction or --operation-id-prefix for batches", ctx)
    if operation_id_prefix is not None and batch_size is None:
        raise click.UsageError("--operation-id-prefix requires --batch-size", ctx)
    long_running.add(ctx, data, reports=reports, operation_id=operation_id, operation_id_prefix=operation_id_prefix,
                     batch_size=batch_size, if_basis_tx=if_basis_tx, provenance=provenance)


@cli.command()
@common_options
@click.argument("ref")
@click.argument("attr", required=False)
@click.argument("value", required=False)
@click.option("--operation-id", help="Idempotency key of the transaction.")
@click.option("--if-basis-tx", type=int, help="Fail with Conflict unless this is the latest committed transaction.")
@provenance_options
@click.pass_context
def retract(ctx, ref, attr, value, operation_id, if_basis_tx, provenance=None):
    """Retract one fact (VALUE is JSON), an attribute, or a whole entity."""
    rest = () if attr is None else (attr,) if value is None else (attr, parse_json_argument(value, "retract value"))
    # The retract operation itself: a JSON null VALUE must reach the planner (TypeError, or a no-op for an
    # unknown entity), while the library's retract(value=None) means "every value", as in fgraph 1.x.
    run_and_print(ctx, RW, lambda db: db.transact(["retract", parse_ref(ref), *rest], operation_id=operation_id,
                                                  if_basis_tx=if_basis_tx, **(provenance or {})))


@cli.command()
@common_options
@click.argument("attr")
@click.option("--type", "type_", type=Words(*VALUE_TYPES),
              help="Value type: bool, bytes, float, instant, int, json, ref, text, vector.")
@click.option("--ref/--no-ref", default=False, help="Declare a reference attribute (type ref).")
@click.option("--many", is_flag=True, help="Cardinality many.")
@click.option("--one", is_flag=True, help="Cardinality one.")
@click.option("--unique", is_flag=True, help="Values identify their entity.")
@click.option("--not-unique", is_flag=True, help="Values are not unique.")
@click.option("--nohistory", is_flag=True, help="Retracted values are deleted, not kept.")
@click.option("--history", is_flag=True, help="Retracted values are kept.")
@click.option("--dims", type=int, help="Vector dimensions.")
@click.option("--doc", help="Documentation text.")
@click.option("--vector-model", help="Name of the embedding model.")
@click.option("--operation-id", help="Idempotency key of the transaction.")
@click.option("--if-basis-tx", type=int, help="Fail with Conflict unless this is the latest committed transaction.")
@provenance_options
@click.pass_context
def declare(ctx, attr, type_, ref, many, one, unique, not_unique, nohistory, history, dims, doc, vector_model,
            operation_id, if_basis_tx, provenance=None):
    """Declare the schema of one attribute."""
    flags = dict(many=flag_pair(ctx, many, one, "--many", "--one"),
                 unique=flag_pair(ctx, unique, not_unique, "--unique", "--not-unique"),
                 nohistory=flag_pair(ctx, nohistory, history, "--nohistory", "--history"))
    run_and_print(ctx, RW, lambda db: db.declare(attr, type=type_, ref=ref, dims=dims, doc=doc,
                                                 vector_model=vector_model, operation_id=operation_id,
                                                 if_basis_tx=if_basis_tx, **flags, **(provenance or {})))


@cli.command()
@common_options
@click.argument("ref")
@click.option("--depth", type=int, default=1, show_default=True, help="Pull referenced entities this deep.")
@click.option("--at", type=TimeParam(), help=AT_HELP)
@click.option("--incoming", is_flag=True, help="Also list what refers to it (ours): {entity, incoming, incoming_truncated}.")
@click.pass_context
def get(ctx, ref, depth, at, incoming):
    """Print one entity's live attributes.

    With --incoming: the entity and each entity whose current facts refer to it, by attribute then entity."""
    read = ((lambda view: view.about(resolve_loose_ref(view, ref), depth)) if incoming
            else (lambda view: view.entity(resolve_loose_ref(view, ref), depth)))
    run_and_print(ctx, RO, lambda db: read(db if at is None else db.at(at)))


@cli.command()
@common_options
@click.argument("ref")
@click.argument("attr", required=False)
@click.option("--at", type=TimeParam(), help=AT_HELP)
@click.pass_context
def history(ctx, ref, attr, at):
    """Print every fact ever asserted for an entity (or one attribute).

    On a terminal each fact also shows at_time (RFC 3339) and the transaction's meta; piped
    output and --json print the published fields only (at in microseconds)."""
    details = not ctx.meta.get(JSON_KEY) and stdout_is_terminal()

    def read(view):
        return view.history(resolve_loose_ref(view, ref), attr, details=details)
    run_and_print(ctx, RO, lambda db: read(db if at is None else db.at(at)))


@cli.command()
@common_options
@click.argument("ref")
@click.argument("attr", required=False)
@click.pass_context
def why(ctx, ref, attr):
    """Print an entity's live facts with the transactions that asserted them."""
    run_and_print(ctx, RO, lambda db: db.why(resolve_loose_ref(db, ref), attr))


@cli.command()
@common_options
@click.argument("t1", type=WhenParam())
@click.argument("t2", type=WhenParam())
@click.pass_context
def diff(ctx, t1, t2):
    """Print the facts asserted and retracted after T1 (exclusive) through T2 (inclusive).

    T1 and T2 are transaction ids, µs instants, RFC 3339 times or durations before now; a duration
    longer than the store's life is its beginning.

    \b
    Example: fgraph diff 24h 0s
    """
    run_and_print(ctx, RO, lambda db: db.diff(t1, t2))


@cli.command("tx")
@common_options
@click.argument("transaction", type=int)
@click.pass_context
def tx(ctx, transaction):
    """Print the receipt of one transaction."""
    run_and_print(ctx, RO, lambda db: db.receipt(transaction))


def _stream(ctx: click.Context, lines_of, *, flush_each: bool, out=None) -> None:
    """Open read-only and write every line the library yields, LF-terminated (on ``out``: stdout)."""
    path = resolve_db_path(ctx.meta.get(DB_KEY), os.environ)
    out = sys.stdout.buffer if out is None else out
    with connect(path, read_only=True, query_budget=ctx.meta.get(BUDGET_KEY, DEFAULT_QUERY_BUDGET)) as db:
        for line in lines_of(db):
            out.write(line.encode("utf-8") + b"\n")
            if flush_each:
                out.flush()
    out.flush()


@cli.command()
@common_options
@click.argument("src", default="-", type=PATH)
@click.option("--dry-run", is_flag=True, help="Validate and report what would change; commit nothing.")
@click.option("--expect-digest", metavar="D", help="Refuse, writing nothing, unless the bytes have digest D (review --digest).")
@click.pass_context
def apply(ctx, src, dry_run, expect_digest):
    """Merge an event/1 stream (file or '-' for stdin), all or nothing.

    \b
    Example: fgraph --db replica.db apply reviewed.ndjson
    """
    long_running.apply(ctx, src, dry_run, expect_digest)


@cli.command()
@common_options
@click.argument("transaction", type=int)
@click.option("--operation-id", help="Idempotency key of the transaction.")
@click.option("--if-basis-tx", type=int, help="Fail with Conflict unless this is the latest committed transaction.")
@provenance_options
@click.pass_context
def undo(ctx, transaction, operation_id, if_basis_tx, provenance=None):
    """Write the audited inverse of one transaction."""
    run_and_print(ctx, RW, lambda db: db.undo(transaction, operation_id=operation_id, if_basis_tx=if_basis_tx,
                                              **(provenance or {})))


@cli.command()
@db_option
@click.pass_context
def snapshot(ctx):
    """Write the exact logical copy of the database as snapshot/1 NDJSON."""
    with progress("snapshot", unit="lines", stream=beside(sys.stdout)) as bar:
        _stream(ctx, lambda db: counted(db.iter_snapshot(), bar), flush_each=False)


@cli.command()
@common_options
@click.argument("src", default="-", type=PATH)
@click.pass_context
def restore(ctx, src):
    """Restore a snapshot (file or '-' for stdin) into a new, empty database."""
    long_running.restore(ctx, src)


@cli.command()
@common_options
@click.argument("dest", type=PATH)
@click.pass_context
def backup(ctx, dest):
    """Copy the database to the new file DEST, verified; print its path, basis_tx and digest."""
    long_running.backup(ctx, dest)


@cli.command()
@common_options
@click.option("--repair", is_flag=True, help="Rebuild the full-text index and drop orphaned blobs (writable).")
@click.option("--expect-digest", metavar="D", help="Also prove the logical digest equals D (from backup).")
@click.option("--digests", is_flag=True,
              help="Also print the logical and content digests at one basis (`digests` beside the report's 13 keys; "
                   "ours, docs/replication.md).")
@click.pass_context
def doctor(ctx, repair, expect_digest, digests):
    """Check every invariant; exit 1 when the report is not ok (the published runtime exits 0)."""
    path = resolve_db_path(ctx.meta.get(DB_KEY), os.environ)
    with connect(path, read_only=not repair) as db, progress("checking", unit=""):
        diagnosis = db.diagnose(repair, expect_digest=expect_digest, digests=digests)
    write_line(dumps(diagnosis.printed) if ctx.meta.get(JSON_KEY) else diagnosis.describe())
    return EXIT_OK if diagnosis.ok else EXIT_ERROR


@cli.command("restore-backup")
@common_options
@click.argument("backup_file", metavar="BACKUP", type=PATH)
@click.argument("dest", type=PATH)
@click.pass_context
def restore_backup(ctx, backup_file, dest):
    """Install the physical backup BACKUP at DEST (new or empty file), verified."""
    long_running.restore_backup(ctx, backup_file, dest)


@cli.command()
@common_options
@click.argument("src", default="-", type=PATH)
@click.pass_context
def verify(ctx, src):
    """Check a snapshot or event stream file without a database; exit 0 only when it is whole."""
    print_result(ctx, ingest.verify_stream(src, sys.stdin))


@cli.command()
@db_option
@click.option("--write", is_flag=True, help="Offer the write tools (remember, forget, undo); the file may change.")
@click.option("--allow-excise", is_flag=True, help="With --write, offer the excise tool too: an agent may erase data "
              "irreversibly (docs/mcp.md M8).")
@click.option("--propose", metavar="FILE", type=PATH, help="Offer the write tools as proposals: each call is checked "
              "against the store, which stays read-only, and appended to FILE for a person to review (docs/proposals.md).")
@click.option("--embed-cmd", metavar="CMD", type=PATH, help="Embedder for recall and remember: an executable or a JSON argv "
              "array; reads text on stdin, prints a JSON array.")
@click.pass_context
def mcp(ctx, write, allow_excise, propose, embed_cmd):
    """Serve the database to agents over MCP on stdio (read-only unless --write; --propose queues writes for review)."""
    if propose is not None and write:
        raise click.UsageError("--propose and --write exclude each other: a proposing server writes nothing to the store")
    if allow_excise and not write:
        raise click.UsageError("--allow-excise needs --write: a read-only server offers no write tool"
                               + (" (an excision is never proposed)" if propose is not None else ""))
    from fgraph.bridges import embed
    from fgraph.mcp import server as mcp_server  # the SDK loads only for this command
    path = resolve_db_path(ctx.meta.get(DB_KEY), os.environ)
    embed_cmd = embed.configured() if embed_cmd is None else embed_cmd  # FGRAPH_EMBED_CMD
    embedder = None if embed_cmd is None else (lambda text: embed.embed(embed_cmd, text))
    with connect(path, read_only=not write) as db:
        mcp_server.serve(db, write=write, embed=embedder, allow_excise=allow_excise, propose=propose)


@cli.command()
def version():
    """Print the version of this runtime."""
    write_line(fgraph.__version__)


# ----------------------------------------------------------------- outcomes

def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; the one place where outcomes become exit codes."""
    try:
        try:
            result = cli.main(args=argv, prog_name="fgraph", standalone_mode=False)
        except Escaped as escaped:
            raise escaped.original from None
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE if isinstance(exc, click.UsageError) else EXIT_ERROR
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE
    except (KeyboardInterrupt, click.Abort):
        return EXIT_INTERRUPT
    except Exception as exc:
        typed = as_typed(exc)
        if typed is not None:
            _error_line(f"{typed.name}: {typed}")
            return EXIT_ERROR
        if settings.debug():
            raise
        _error_line(f"Error: internal error: {exc!r:.500}; please report it")
        return EXIT_ERROR
    return result if isinstance(result, int) else EXIT_OK


def _error_line(text: str) -> None:
    try:
        click.echo(text, err=True)
    except (OSError, ValueError):
        pass


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not complain about the pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(argv))


if __name__ == "__main__":  # pragma: no cover
    main()
