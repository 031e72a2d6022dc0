"""The CLI commands that ask questions (specs 12 and 13): ``q``, ``explain``, ``datoms``,
``search``, ``schema``, the ``schema/1`` manifest commands, ``shape`` and ``validate``. Each
parses its arguments and makes one library call through ``run_and_print``."""

from __future__ import annotations

import sys

import click

from fgraph.core.errors import ValueTypeError
from fgraph.core.limits import (CONTEXT_BUDGET, CONTEXT_LIMIT, CONTEXT_MAX_BUDGET, CONTEXT_MAX_LIMIT, CONTEXT_MIN_BUDGET,
                                DATOMS_LIMIT, DATOMS_MAX_LIMIT, SEARCH_EXPAND, SEARCH_K, SEARCH_MAX_EXPAND, SEARCH_MAX_K)
from fgraph.bridges.add import ingest
from fgraph.cli.completion import DATOMS_INDEXES, DATOMS_SOURCES, PATH, DataText, Words
from fgraph.cli.base import (AT_HELP, JSON_KEY, RO, RW, parse_json_argument, flag_pair, parse_ref, run_and_print, open_and_call,
                             print_result, run_and_write_text, TimeParam, WhenParam, cli, common_options)


def _view(db, at):
    return db if at is None else db.at(at)


def _query_arguments(text: str, args: str | None):
    """QUERY (inline JSON, @file or -) and --args (a JSON object or null) as values."""
    query = parse_json_argument(ingest.read_data_argument(text, sys.stdin), "QUERY")
    bound = None if args is None else parse_json_argument(args, "--args")
    if bound is not None and not isinstance(bound, dict):
        raise ValueTypeError("--args must be a JSON object keyed by the in variables", 'pass --args \'{"?min": 34}\'')
    return query, bound


@cli.command()
@common_options
@click.argument("query", metavar="QUERY", type=DataText())
@click.option("--args", "args", metavar="JSON", help="Values of the query's in variables, as a JSON object.")
@click.option("--at", type=WhenParam(), help=AT_HELP)
@click.pass_context
def q(ctx, query, args, at):
    """Answer a Datalog query (inline JSON, @file or - for stdin)."""
    query, bound = _query_arguments(query, args)
    run_and_print(ctx, RO, lambda db: _view(db, at).q(query, bound).to_dict())


@cli.command()
@common_options
@click.argument("query", metavar="QUERY", type=DataText())
@click.option("--args", "args", metavar="JSON", help="Values of the query's in variables, as a JSON object.")
@click.option("--at", type=WhenParam(), help=AT_HELP)
@click.pass_context
def explain(ctx, query, args, at):
    """Print the plan q would follow: clause order, index access, warnings."""
    query, bound = _query_arguments(query, args)
    run_and_print(ctx, RO, lambda db: _view(db, at).explain(query, bound))


@cli.command()
@common_options
@click.argument("index", required=False, default="eavt", type=Words(*DATOMS_INDEXES))
@click.option("--components", metavar="JSON", help="Leading key components as a JSON array, e.g. '[\"ada\"]'.")
@click.option("--source", default="current", show_default=True, type=Words(*DATOMS_SOURCES),
              help="current or history.")
@click.option("--limit", type=int, default=DATOMS_LIMIT, show_default=True,
              help=f"Items per page (1-{DATOMS_MAX_LIMIT}).")
@click.option("--cursor", metavar="C", help="The next_cursor of the previous page.")
@click.option("--at", type=WhenParam(), help=AT_HELP)
@click.pass_context
def datoms(ctx, index, components, source, limit, cursor, at):
    """Page one index (eavt, avet, vaet) in key order."""
    parts = [] if components is None else parse_json_argument(components, "--components")
    if not isinstance(parts, list):
        raise ValueTypeError("--components must be a JSON array", "pass --components '[\"ada\", \"person/name\"]'")
    run_and_print(ctx, RO, lambda db: _view(db, at).datoms(index, parts, source=source, limit=limit, cursor=cursor))


@cli.command()
@common_options
@click.option("--text", help="Words that must all occur (keyword list, BM25 order).")
@click.option("--vector", metavar="JSON", help="The query embedding as a JSON array (vector list, cosine order).")
@click.option("--k", type=int, default=SEARCH_K, show_default=True, help=f"Hits to return (1-{SEARCH_MAX_K}).")
@click.option("--expand", type=int, default=SEARCH_EXPAND, show_default=True,
              help=f"Levels of ref neighbours to add (0-{SEARCH_MAX_EXPAND}).")
@click.option("--vector-attribute", metavar="ATTR", help="The vector attribute to search (needed with --vector).")
@click.option("--text-attribute", "text_attributes", metavar="ATTR", multiple=True,
              help="Search only this text attribute; repeatable.")
@click.option("--filter", "filters", metavar="JSON", multiple=True,
              help='Keep entities holding a value, e.g. \'["note/kind","guide"]\'; repeatable.')
@click.option("--embed-cmd", metavar="CMD", type=PATH, help="Embedder turning --text into the vector: an executable or a "
              "JSON argv array; reads the text on stdin, prints a JSON array.")
@click.option("--match", type=click.Choice(["fact", "entity", "fill"]), default="fact", show_default=True,
              help="fact: every word in one fact (the published rule); entity: the words across an entity's "
              "facts and the names it refers to, stems included; fill: fact hits, then entity hits up to --k.")
@click.pass_context
def search(ctx, text, vector, k, expand, vector_attribute, text_attributes, filters, embed_cmd, match):
    """Keyword, vector or hybrid search over the current facts, fused by reciprocal rank."""
    from fgraph.bridges import embed  # its subprocess machinery only for this command
    options = embed.search_options(
        text=text, embed_cmd=embed_cmd, k=k, expand=expand, vector_attribute=vector_attribute,
        vector=None if vector is None else parse_json_argument(vector, "--vector"),
        filters=[parse_json_argument(pair, "--filter") for pair in filters], text_attributes=list(text_attributes),
        match=match)
    result = open_and_call(ctx, RO, lambda db: db.search(**options))
    print_result(ctx, result)
    if match == "fact" and options["text"] and options["text"].strip() and not result["hits"]:
        # stdout stays the published answer; the hint is for the person reading (decision S2)
        click.echo("no hits: no one fact holds every word (the published rule); --match fill also finds "
                   "entities holding the words across their facts, stems and near spellings included", err=True)


@cli.command()
@common_options
@click.argument("prefix", required=False)
@click.option("--system", is_flag=True, help="Include the fgraph/ system attributes.")
@click.pass_context
def schema(ctx, prefix, system):
    """Print the schema page: attributes (declared, effective, observed), shapes and their digest."""
    run_and_print(ctx, RO, lambda db: db.schema(prefix, include_system=system))


@cli.command("schema-export")
@common_options
@click.pass_context
def schema_export(ctx):
    """Print the declared schema as a schema/1 manifest (for review in git)."""
    run_and_print(ctx, RO, lambda db: db.schema_manifest())


@cli.command("schema-check")
@common_options
@click.argument("src", metavar="SRC", type=DataText(plain_paths=True))
@click.pass_context
def schema_check(ctx, src):
    """Compare a schema/1 manifest (a file, inline JSON, @file or -) with the database; exits 0 on drift."""
    manifest = ingest.read_json_argument(src, sys.stdin, "SRC")
    run_and_print(ctx, RO, lambda db: db.check_schema_manifest(manifest))


@cli.command("schema-apply")
@common_options
@click.argument("src", metavar="SRC", type=DataText(plain_paths=True))
@click.option("--operation-id", help="Idempotency key of the transaction.")
@click.option("--if-basis-tx", type=int, help="Fail with Conflict unless this is the latest committed transaction.")
@click.pass_context
def schema_apply(ctx, src, operation_id, if_basis_tx):
    """Make the declared schema equal a schema/1 manifest (a file, inline JSON, @file or -), in one transaction."""
    manifest = ingest.read_json_argument(src, sys.stdin, "SRC")
    run_and_print(ctx, RW, lambda db: db.apply_schema_manifest(manifest, operation_id=operation_id,
                                                               if_basis_tx=if_basis_tx))


@cli.command()
@common_options
@click.argument("name")
@click.option("--required", multiple=True, metavar="ATTR", help="An attribute the entity must have (repeatable).")
@click.option("--allowed", multiple=True, metavar="ATTR", help="An attribute a closed shape admits (repeatable).")
@click.option("--closed", is_flag=True, help="Admit only required and allowed attributes.")
@click.option("--open", "open_", is_flag=True, help="Admit any attribute (the default).")
@click.option("--operation-id", help="Idempotency key of the transaction.")
@click.option("--if-basis-tx", type=int, help="Fail with Conflict unless this is the latest committed transaction.")
@click.pass_context
def shape(ctx, name, required, allowed, closed, open_, operation_id, if_basis_tx):
    """Create or replace a shape (required and allowed attributes) in one transaction."""
    closed = bool(flag_pair(ctx, closed, open_, "--closed", "--open"))
    run_and_print(ctx, RW, lambda db: db.declare_shape(name, required=list(required), allowed=list(allowed),
                                                       closed=closed, operation_id=operation_id,
                                                       if_basis_tx=if_basis_tx))


@cli.command()
@common_options
@click.argument("ref")
@click.pass_context
def validate(ctx, ref):
    """Check one entity against its shape; exits 0 even when it is invalid."""
    run_and_print(ctx, RO, lambda db: db.validate(parse_ref(ref)))


@cli.command()
@common_options
@click.option("--since", type=TimeParam(), metavar="TX|TIME",
              help="Only changes after this transaction (one that is no transaction: after the last at or below "
                   "it), event UUID, RFC 3339 time or duration (24h, 7d; before the first transaction: all) "
                   "[default: all].")
@click.option("--limit", type=int, default=CONTEXT_LIMIT, show_default=True,
              help=f"Items at most: changes, or entities with --by entity (1-{CONTEXT_MAX_LIMIT}).")
@click.option("--budget", type=int, default=CONTEXT_BUDGET, show_default=True,
              help=f"Characters at most ({CONTEXT_MIN_BUDGET}-{CONTEXT_MAX_BUDGET}).")
@click.option("--format", "format_", type=click.Choice(["markdown", "json"]), default="markdown",
              show_default=True, help="Markdown text for a prompt, or the same items as JSON.")
@click.option("--entity", metavar="SEL", help="Only changes of this entity (a name or an id).")
@click.option("--by", "by", type=click.Choice(["change", "entity"]), default="entity", show_default=True,
              help="One item per entity changed, newest record time first, with its type, main text, rationale "
                   "and tags (decision C4); or one per fact changed, grouped per transaction.")
@click.option("--type", "type_", metavar="TYPE", multiple=True,
              help="With --by entity: only entities whose */type is TYPE (decision, person; any case); "
                   "repeatable or a comma list (decision,preference).")
@click.pass_context
def context(ctx, since, limit, budget, format_, entity, by, type_):
    """Print what an agent should know at the start of a session, for a prompt.

    One line per changed entity, newest record time first: [Type] its text — because: its
    rationale — tags: the entities it refers to — when (the record's own time for imports),
    who and from which file and line; ids and other bookkeeping left out. --by change prints
    every fact changed instead, grouped per transaction.

    \b
    Example: fgraph context --type decision,preference
    Example: fgraph context --since 7d --type decision
    Example: fgraph context --by change --since 24h --limit 20 --budget 2000
    """
    call = lambda db: db.context(since, budget, limit=limit,  # noqa: E731
                                 entity=None if entity is None else parse_ref(entity),
                                 format=format_, by=by, type=list(type_) or None)
    if format_ == "markdown" and not ctx.meta.get(JSON_KEY):
        run_and_write_text(ctx, RO, lambda db: call(db)["text"])
    else:
        run_and_print(ctx, RO, call)
