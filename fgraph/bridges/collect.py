"""The library behind ``fgraph tail`` (issue 49 item 1, docs/streams.md §Collectors that keep their
place): where the stream starts (``--since``, ``--after UUID``), and the run that records its
position (``--cursor``, ``--chain``) through ``fgraph.streams.follow``."""

from __future__ import annotations

from fgraph.core.limits import GENESIS_TX


def start_tx(db, since, follow: bool, after: str | None = None) -> int:
    """The exclusive local tx bound of a tail: after the event ``after`` when given, else ``since``
    (an integer is a local tx id as in spec 04 §4; text, and any value with --follow, resolves as a
    ``since``: core/timepoints, decision T2 in docs/query.md)."""
    if after is not None:
        from fgraph.streams.cursor import event_tx
        return event_tx(db.connection, after)
    if follow or isinstance(since, str):
        return db.resolve_time(since, since=True)
    return since


def keeps_place(after, cursor, chain, collected) -> bool:
    """Whether a tail needs the position-keeping run (else it is the plain stream of ``lines``)."""
    return any(option is not None for option in (after, cursor, chain, collected))


def lines(db, since, follow: bool):
    """The plain tail: the event lines after ``since``, following when asked."""
    return db.follow_lines(since) if follow else db.iter_events(start_tx(db, since, False))


def collect(db, out, *, since=GENESIS_TX, after: str | None = None, follow: bool = False,
            cursor: str | None = None, chain: str | None = None, collected: str | None = None, stop=None) -> None:
    """Write the event lines after the position on the binary stream ``out`` (stdout), keeping the
    collector's place in ``cursor`` or ``chain``; ``collected`` is the file the lines end up in
    when stdout is not that file itself."""
    from fgraph.bridges.sync.log import store_id
    from fgraph.streams.follow import collect as run
    run(db.connection, out, store=store_id(db), start_tx=start_tx(db, since, follow, after), follow=follow,
        cursor=cursor, chain=chain, collected=collected, stop=stop)
