"""The ``fgraph sync`` command (issue 16); it registers itself on the ``cli`` group when imported.

The work is ``fgraph.bridges.sync.files.sync`` between store files and
``fgraph.bridges.sync.adapters.sync`` when one side is a log URL (the registry of log adapters
supplies the URL forms and the options each reads to the help); this module parses the options, turns Ctrl-C and SIGTERM
into a clean stop of ``--follow`` (the batch under way commits or rolls back, the cursor is saved,
the summary is printed, exit 0) and prints the summary like every other command.
"""

from __future__ import annotations

import contextlib
import os

import click

from fgraph.core.errors import ValueTypeError
from fgraph.core.files import same_file
from fgraph.core.limits import SYNC_BATCH, SYNC_INTERVAL
from fgraph.bridges.sync import adapters, files as _sync
from fgraph.cli.completion import PATH
from fgraph.cli.base import DB_KEY, FiniteFloatRange, cli, common_options, print_result
from fgraph.cli.paths import resolve_db_path


class _Stop:
    """A flag the first SIGINT or SIGTERM raises; a second one interrupts at once."""

    def __init__(self):
        self.requested = False

    def __call__(self) -> bool:
        return self.requested

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    @contextlib.contextmanager
    def installed(self):
        import signal  # only sync installs handlers; other commands start without the module
        previous = {}
        try:
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, self._handle)
        except ValueError:  # not the main thread: leave the defaults
            pass
        try:
            yield self
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _given(text) -> bool:
    """True for a log URL (``--from``/``--to``); a URL of a scheme no adapter serves is a usage error."""
    try:
        return adapters.is_log_url(text)
    except ValueTypeError as exc:
        raise click.UsageError(f"{exc.message}; {exc.hint}") from None


def _reads(option: str, what: str) -> str:
    """The help of an option only some log adapters read: which URLs, what, and its default."""
    defaults = {a.options[option] for a in adapters.DECLARED if option in a.options}
    default = defaults.pop() if len(defaults) == 1 else None
    shown = f" [default: {default:g}]" if default is not None and not isinstance(default, bool) else ""
    return f"With a {adapters.url_forms(option)} URL: {what}{shown}"


INSECURE_HELP = _reads("insecure_plaintext_credentials",
                       "send the credentials of the settings to a server of another machine over plain text "
                       "(a nats:// URL); without it they leave only in TLS or to this machine. Never needed "
                       "with tls://, which never falls back to plain text.")
LOGS = "; ".join(f"{a.url_form} ({a.summary})" for a in adapters.DECLARED)
EXAMPLE_LOG = adapters.DECLARED[0].url_form
HELP = f"""Fan several stores' events into one target, resumably and idempotently.

--from or --to may be a message-log URL, one of: {LOGS}.
Stores publish into the log, or one store consumes it. A log's credentials come from its
settings (docs/settings.md), never from the command line.

A store seals what it publishes with its own key (DB.signing-key, made on first use); a
receiver acts only on records sealed by the key it pinned for that store (TARGET.sync-keys.json)
or that --trust names, and erases only what that store brought to it (docs/forgetting.md T1-T3).

\b
Example: fgraph sync --from a.db --from b.db --to central.db --follow
Example: fgraph sync --from a.db --to {EXAMPLE_LOG} --create-stream
"""


@cli.command(help=HELP)
@common_options
@click.option("--from", "sources", multiple=True, metavar="PATH", type=PATH,
              help=f"A source store, opened read-only (repeat once per source), or one log URL ({adapters.url_forms()}).")
@click.option("--to", "target", metavar="PATH", type=PATH,
              help=f"The target store, created if missing [default: --db], or a log URL ({adapters.url_forms()}).")
@click.option("--batch-size", type=click.IntRange(1, 1_000_000), default=SYNC_BATCH, show_default=True,
              help="At most N events per target transaction.")
@click.option("--follow/--no-follow", default=False, help="Keep syncing new commits until Ctrl-C or SIGTERM.")
@click.option("--interval", type=FiniteFloatRange(0.01, 3600), default=SYNC_INTERVAL, show_default=True,
              help="Seconds between two polls of the sources with --follow.")
@click.option("--create-stream", is_flag=True, default=None, help=_reads("create_stream", "create the log if it is missing."))
@click.option("--replicas", type=click.IntRange(1, 5), help=_reads("replicas", "replicas of a created stream."))
@click.option("--max-age", type=FiniteFloatRange(0, 10**9),
              help=_reads("max_age", "seconds a record of a created stream is kept (0: for ever)."))
@click.option("--ack-wait", type=FiniteFloatRange(0.5, 86400),
              help=_reads("ack_wait", "as --from, seconds before an unacknowledged record is delivered again."))
@click.option("--insecure-plaintext-credentials", is_flag=True, default=None, help=INSECURE_HELP)
@click.option("--signing-key", metavar="PATH", type=PATH,
              help="The key that seals what the one --from store publishes [default: SOURCE.signing-key, "
                   "created owner-only on first use; never printed].")
@click.option("--trust", metavar="FILE", type=PATH,
              help="A trust policy (fgraph-trust/1): the only keys the target accepts, and whether each may erase "
                   "anything [default: trust each store's first key, pinned beside the target].")
@click.option("--accept-key", "accept_keys", multiple=True, metavar="STORE:KEY",
              help="Pin this key for this store at the target (after a rotation its owner told you of); repeatable.")
@click.option("--quarantined", is_flag=True,
              help="List what the target's consumer set aside (messages that are no fgraph record, records it "
                   "refused), with their subject and sequence, instead of syncing; no --from.")
@click.option("--purge-quarantined", is_flag=True,
              help="Drop what the target's consumer set aside (listed first); refused records are then no longer "
                   "retried. No --from.")
@click.pass_context
def sync(ctx, sources, target, batch_size, follow, interval, create_stream, replicas, max_age, ack_wait,
         insecure_plaintext_credentials, signing_key, trust, accept_keys, quarantined, purge_quarantined):
    if quarantined or purge_quarantined:
        if sources:
            raise click.UsageError("--quarantined and --purge-quarantined read the target alone: drop --from", ctx)
        from fgraph.bridges.sync import quarantine
        into = target if target is not None else resolve_db_path(ctx.meta.get(DB_KEY), os.environ)
        if _given(into):
            raise click.UsageError("a quarantine is a receiving store's: pass --to the store a --from URL fills", ctx)
        print_result(ctx, quarantine.listing(into, purge=purge_quarantined))
        return
    if not sources:
        raise click.UsageError("pass at least one --from PATH", ctx)
    keys = {"signing_key": signing_key, "trust": trust, "accept_keys": accept_keys}
    own = {"create_stream": create_stream, "replicas": replicas, "max_age": max_age, "ack_wait": ack_wait,
           "insecure_plaintext_credentials": insecure_plaintext_credentials}
    if (target is not None and _given(target)) or any(_given(s) for s in sources):
        stop = _Stop()
        with stop.installed() if follow else contextlib.nullcontext():
            into = target if target is not None else resolve_db_path(ctx.meta.get(DB_KEY), os.environ)
            result = adapters.sync(sources, into, batch_size=batch_size, follow=follow, interval=interval, stop=stop,
                                   **own, **keys)
        print_result(ctx, result)
        return
    given = sorted(key for key, value in own.items() if value is not None)
    if given:
        raise click.UsageError(f"--{given[0].replace('_', '-')} applies to a log URL only "
                               f"({adapters.url_forms(given[0])}), not to store files", ctx)
    explicit = ctx.meta.get(DB_KEY)
    if target is not None and explicit is not None and not same_file(target, explicit):
        raise click.UsageError(f"--to {target} and --db {explicit} name different targets", ctx)
    target = target if target is not None else resolve_db_path(explicit, os.environ)
    try:
        _sync.check_paths(list(sources), target)
    except ValueTypeError as exc:
        raise click.UsageError(exc.message, ctx) from None
    stop = _Stop()
    with stop.installed() if follow else contextlib.nullcontext():
        result = _sync.sync(sources, target, batch_size=batch_size, follow=follow, interval=interval, stop=stop,
                            **keys)
    print_result(ctx, result)
