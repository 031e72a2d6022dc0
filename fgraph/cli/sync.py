"""The ``fgraph sync`` command (issue 16); it registers itself on the ``cli`` group when imported.

The work is ``fgraph.bridges.sync.sync``; this module parses the options, turns Ctrl-C and SIGTERM
into a clean stop of ``--follow`` (the batch under way commits or rolls back, the cursor is saved,
the summary is printed, exit 0) and prints the summary like every other command.
"""

from __future__ import annotations

import contextlib
import os

import click

from fgraph.core.errors import ValueTypeError
from fgraph.bridges import sync as _sync
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
@click.pass_context
def sync(ctx, sources, target, batch_size, follow, interval):
    """Fan several stores' events into one target, resumably and idempotently.

    \b
    Example: fgraph sync --from a.db --from b.db --to central.db --follow
    """
    if not sources:
        raise click.UsageError("pass at least one --from PATH", ctx)
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
