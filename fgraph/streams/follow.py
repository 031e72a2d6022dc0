"""``tail`` that keeps its place (issue 49 item 1, decision S1 in docs/streams.md).

``collect`` prints the event lines after a position, once or following, and records how far it
got, so that a collector killed at any moment (kill -9, a reboot) resumes exactly: no event lost,
none printed twice. The position comes from, in this order:

- a hash chain (``--chain``) that has links: after the event of its last linked line, found at the
  end of the collected file (``--collected``, or stdout when it is a regular file), whose bytes
  after that line are settled (``fgraph.streams.cursor.settle``) and linked; with neither (a
  pipe), the event is found by its link among this store's events;
- a cursor file (``--cursor``) that exists: after its event, the output's bytes past the recorded
  size settled the same way when it is still the same file;
- else the start given (``--since``, or ``--after UUID`` through ``event_tx``).

A checkpoint follows every batch of lines (when the follower has caught up, and every
``CHECKPOINT_EVERY`` lines): the lines are flushed, stdout is fsynced when it is a regular file,
then the chain's links are appended and fsynced, then the cursor is replaced. So a record never
covers a line that did not reach the output; the lines a kill leaves past the record are found
and settled on the next start.
"""

from __future__ import annotations

import contextlib

from fgraph.core.canonical import loads
from fgraph.core.errors import Conflict, FormatError, NotFound, Unsupported
from fgraph.core.limits import GENESIS_TX
from fgraph.streams import cursor as cursors
from fgraph.streams.chain import ChainWriter, chained_end, link
from fgraph.streams.events import FOLLOW_MAX_INTERVAL, follow_lines, iter_event_lines

CHECKPOINT_EVERY = 512


def collect(conn, out, *, store: str, start_tx: int, follow: bool = False, cursor: str | None = None,
            chain: str | None = None, collected: str | None = None, stop=None,
            longest: float = FOLLOW_MAX_INTERVAL) -> None:
    """Write the event lines after the position (above) on the binary stream ``out``, recording it."""
    if cursor is not None and chain is not None:
        raise Unsupported("--cursor and --chain each keep the collector's place; give one",
                          "with --chain the chain is the record: drop --cursor")
    if collected is not None and cursor is None and chain is None:
        raise Unsupported("--collected is checked against a --cursor or a --chain; neither was given",
                          "add --cursor FILE (or --chain FILE), or drop --collected")
    output = cursors.Output(out, collected)
    with contextlib.ExitStack() as stack:
        writer = None
        if chain is not None:
            writer = ChainWriter(chain)
            stack.callback(lambda: writer.close(keep_pending=False))
            tx, adopted = _chain_position(conn, writer, output, start_tx)
            for line in adopted:
                writer.add(line)
            writer.sync()
        else:
            tx = _cursor_position(conn, cursor, store, output, start_tx) if cursor is not None else start_tx
        _emit(conn, out, tx, output, writer, cursor, store, follow, stop, longest)


def _cursor_position(conn, path: str, store: str, output, start_tx: int) -> int:
    document = cursors.read_cursor(path, store)
    if document is None:
        return start_tx
    try:
        tx = cursors.event_tx(conn, document["event"], "cursor")
    except NotFound:
        raise NotFound(f"the cursor file {path!r} names event {document['event']}, which this store does not hold",
                       "was the store replaced? remove the cursor and restart with --after the \"event\" of the "
                       "last line collected") from None
    offset = cursors.cursor_offset(document, output)
    if offset is None:
        return tx
    cursors.check_cursor_output(path, offset, output)
    adopted, tx = cursors.settle(conn, output, offset, tx, f"the {offset} bytes the cursor recorded")
    if adopted:
        cursors.write_cursor(path, store, _event_of(adopted[-1][1]), output)
    return tx


def _chain_position(conn, writer: ChainWriter, output, start_tx: int) -> tuple[int, list[bytes]]:
    """(the tx to continue after, lines already in the output to link first)."""
    if writer.number == 0:
        if not output.known:
            return start_tx, []
        adopted, tx = cursors.settle(conn, output, 0, start_tx, "the start of the new chain")
        return tx, [line for _, line in adopted]
    if not output.known:
        if output.path is not None:
            raise Conflict(f"the collected file {output.path!r} does not exist, but the chain {writer.path!r} "
                           f"links {writer.number} lines of it",
                           "pass the file this chain was written beside, or start a new chain for a new file")
        return _chained_tx(conn, writer), []
    found = chained_end(output.read, output.size(), writer.previous, writer.last, cursors.SETTLE_LIMIT)
    if found is None:
        raise Conflict(f"{output.name()} does not end with line {writer.number}, the last line the chain "
                       f"{writer.path!r} links (it was cut, edited, or is another stream)",
                       f"see what differs with `fgraph verify-stream FILE --chain {writer.path}`; "
                       "a stream shorter than its chain cannot be continued: collect into a new file and chain")
    offset, line = found
    tx = cursors.event_tx(conn, _event_of(line), "chained")
    adopted, tx = cursors.settle(conn, output, offset, tx, f"line {writer.number}, the last the chain links")
    return tx, [line for _, line in adopted]


def _chained_tx(conn, writer: ChainWriter) -> int:
    """The tx of the event whose line the chain's last link covers, found among this store's events."""
    for tx, text in iter_event_lines(conn, GENESIS_TX):
        if link(writer.previous, text.encode("utf-8") + b"\n") == writer.last:
            return tx
    raise Conflict(f"no event of this store is the line the chain {writer.path!r} last linked",
                   "pass the collected file as --collected FILE, or start a new chain for this store")


def _event_of(line: bytes) -> str:
    try:
        event = loads(line).get("event")
    except (FormatError, ValueError, AttributeError):
        event = None
    if not isinstance(event, str):
        raise FormatError(f"the collected line {line[:120]!r} is not an event/1 line",
                          "pass the file `fgraph tail` appends to")
    return event


def _emit(conn, out, tx: int, output, writer, cursor: str | None, store: str, follow: bool, stop,
          longest: float) -> None:
    last: list[bytes] = []   # the last line written since the previous checkpoint
    keeps = writer is not None or cursor is not None

    def checkpoint() -> None:
        if not last:
            return
        out.flush()
        if keeps:
            output.sync()
        if writer is not None:
            writer.sync()
        if cursor is not None:
            cursors.write_cursor(cursor, store, _event_of(last[0]), output)
        last.clear()

    written = 0
    lines = (follow_lines(conn, tx, stop=stop, longest=longest, caught_up=checkpoint) if follow
             else iter_event_lines(conn, tx))
    for _, text in lines:
        line = text.encode("utf-8") + b"\n"
        out.write(line)
        if writer is not None:
            writer.add(line, before_sync=out.flush)
        if follow:
            out.flush()
        last[:] = [line]
        written += 1
        if written % CHECKPOINT_EVERY == 0:
            checkpoint()
    checkpoint()
    out.flush()
