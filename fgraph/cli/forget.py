"""The ``fgraph excise`` command; it registers itself on the ``cli`` group when imported.

Without ``--reach`` it is the published command: ``Db.excise``, its receipt summarised without a
value (``fgraph.bridges.receipts``; ``--published-receipt`` prints it whole, docs/forgetting.md F6).
With ``--reach`` the work is ``fgraph.bridges.sync.reach.excise_and_reach`` (issue 33, docs/forgetting.md F4).
"""

from __future__ import annotations

import os

import click

from fgraph.bridges import receipts
from fgraph.core.errors import FgraphError
from fgraph.bridges.sync import adapters
from fgraph.cli.base import DB_KEY, RW, cli, common_options, parse_ref, print_result, run_and_print
from fgraph.cli.completion import PATH
from fgraph.cli.paths import resolve_db_path


@cli.command()
@common_options
@click.argument("ref")
@click.option("--operation-id", required=True, help="Idempotency key (required: an excision is never repeated blindly).")
@click.option("--if-basis-tx", type=int, required=True, help="Fail with Conflict unless this is the latest committed transaction.")
@click.option("--reach", "reach", multiple=True, metavar="TARGET", type=PATH,
              help=f"Then carry the excision to this store or log ({adapters.url_forms()}) at once, as "
              "`sync --from DB --to TARGET` would (repeatable); the report lists where it was carried out.")
@click.option("--erase-name", is_flag=True,
              help="Erase its name too: afterwards the name is unknown everywhere, as if it never existed "
              "(ours; docs/forgetting.md F5).")
@click.option("--published-receipt", is_flag=True,
              help="Print the published receipt, which lists every erased value, instead of the summary "
              "(docs/forgetting.md F6).")
@click.option("--signing-key", metavar="PATH", type=PATH,
              help="With --reach: the key that seals the excision on its way [default: DB.signing-key, created "
              "owner-only on first use; never printed] (docs/forgetting.md T1).")
@click.option("--insecure-plaintext-credentials", is_flag=True, default=None,
              help=f"With --reach and a {adapters.url_forms('insecure_plaintext_credentials')} URL: send the "
              "credentials of the settings to another machine over plain text (nats://), as `sync` does with it.")
@click.pass_context
def excise(ctx, ref, operation_id, if_basis_tx, reach, erase_name, published_receipt, signing_key,
           insecure_plaintext_credentials):
    """Erase an entity from the present and from history, and scrub its bytes from disk.

    Prints what was erased, counted by attribute, and the redacted events, never an erased value;
    --published-receipt prints the published receipt with the values."""
    if signing_key is not None and not reach:
        raise click.UsageError("--signing-key applies with --reach only", ctx)
    if insecure_plaintext_credentials and not reach:
        raise click.UsageError("--insecure-plaintext-credentials applies with --reach only", ctx)
    if not reach:
        def call(db):
            report = db.excise(parse_ref(ref), operation_id=operation_id, if_basis_tx=if_basis_tx,
                               erase_name=erase_name)
            return report if published_receipt else receipts.redacted(db, report)
        run_and_print(ctx, RW, call)
        return
    from fgraph.bridges.sync import reach as forget
    try:
        report = forget.excise_and_reach(resolve_db_path(ctx.meta.get(DB_KEY), os.environ), parse_ref(ref),
                                         operation_id=operation_id, if_basis_tx=if_basis_tx, reach=reach,
                                         erase_name=erase_name, published_receipt=published_receipt,
                                         signing_key=signing_key,
                                         insecure_plaintext_credentials=insecure_plaintext_credentials)
    except FgraphError as exc:   # a target not reached: the receipt of what was done, then the error
        if getattr(exc, "receipt", None) is None:
            raise
        print_result(ctx, exc.receipt)
        raise
    print_result(ctx, report)
