"""The ``fgraph sync`` command (issue 16); it registers itself on the ``cli`` group when imported.

The work is ``fgraph.bridges.sync.files.sync``; this module parses the options, turns Ctrl-C and SIGTERM
into a clean stop of ``--follow`` (the batch under way commits or rolls back, the cursor is saved,
the summary is printed, exit 0) and prints the summary like every other command.
"""

from __future__ import annotations

import contextlib
import os

import click

from fgraph.core.errors import ValueTypeError
from fgraph.bridges.sync import files as _sync
from fgraph.cli.completion import PATH
from fgraph.cli.base import _DB, FiniteFloatRange, _print_result, cli, common_options
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


def _is_url(text: str) -> bool:
    return str(text).startswith(("nats://", "tls://"))


@cli.command()
@common_options
@click.option("--from", "sources", multiple=True, metavar="PATH", type=PATH,
              help="A source store, opened read-only (repeat once per source).")
@click.option("--to", "target", metavar="PATH", type=PATH, help="The target store, created if missing [default: --db].")
@click.option("--batch-size", type=click.IntRange(1, 1_000_000), default=_sync.DEFAULT_BATCH, show_default=True,
              help="At most N events per target transaction.")
@click.option("--follow/--no-follow", default=False, help="Keep syncing new commits until Ctrl-C or SIGTERM.")
@click.option("--interval", type=FiniteFloatRange(0.01, 3600), default=_sync.DEFAULT_INTERVAL, show_default=True,
              help="Seconds between two polls of the sources with --follow.")
@click.option("--create-stream", is_flag=True, help="With a nats:// URL: create the stream if it is missing.")
@click.option("--replicas", type=click.IntRange(1, 5), default=1, show_default=True,
              help="With --create-stream: JetStream replicas of the new stream.")
@click.option("--max-age", type=FiniteFloatRange(0, 10**9), default=0, show_default=True,
              help="With --create-stream: seconds a record is kept (0: for ever).")
@click.option("--ack-wait", type=FiniteFloatRange(0.5, 86400), default=30, show_default=True,
              help="With --from a nats:// URL: seconds before an unacknowledged record is delivered again.")
@click.pass_context
def sync(ctx, sources, target, batch_size, follow, interval, create_stream, replicas, max_age, ack_wait):
    """Fan several stores' events into one target, resumably and idempotently.

    --from or --to may be a NATS JetStream URL, nats://host:4222/STREAM (tls:// for TLS):
    stores publish into the stream, or one store consumes it. Credentials come from the
    FGRAPH_NATS_CREDS, FGRAPH_NATS_USER, FGRAPH_NATS_PASSWORD and FGRAPH_NATS_TOKEN settings.

    \b
    Example: fgraph sync --from a.db --from b.db --to central.db --follow
    Example: fgraph sync --from a.db --to nats://hub:4222/EV --create-stream
    """
    if not sources:
        raise click.UsageError("pass at least one --from PATH", ctx)
    if (target is not None and _is_url(target)) or any(_is_url(s) for s in sources):
        from fgraph.bridges.sync.adapters import nats as sync_nats  # the NATS side loads only when a URL is given
        stop = _Stop()
        with stop.installed() if follow else contextlib.nullcontext():
            result = sync_nats.sync(sources, target if target is not None else resolve_db_path(ctx.meta.get(_DB),
                                                                                               os.environ),
                                    create_stream=create_stream, replicas=replicas, max_age=max_age,
                                    ack_wait=ack_wait, batch_size=batch_size, follow=follow, interval=interval,
                                    stop=stop)
        _print_result(ctx, result)
        return
    explicit = ctx.meta.get(_DB)
    if target is not None and explicit is not None and not _sync.same_file(target, explicit):
        raise click.UsageError(f"--to {target} and --db {explicit} name different targets", ctx)
    target = target if target is not None else resolve_db_path(explicit, os.environ)
    try:
        _sync.check_paths(list(sources), target)
    except ValueTypeError as exc:
        raise click.UsageError(exc.message, ctx) from None
    stop = _Stop()
    with stop.installed() if follow else contextlib.nullcontext():
        result = _sync.sync(sources, target, batch_size=batch_size, follow=follow, interval=interval, stop=stop)
    _print_result(ctx, result)
