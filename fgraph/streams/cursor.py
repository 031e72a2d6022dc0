"""Where a collector stopped (issue 49 item 1, decision S1 in docs/streams.md): the cursor file of
``tail --cursor`` and the check of a collected file's end against the events that follow.

- ``event_tx``: the local transaction of an event UUID, through the receipts (a local, imported,
  applied or redacted event alike), so ``--after UUID`` resumes exactly after it.
- The cursor file is one JSON object, ``{"fgraph": "tail-cursor/1", "store": ID, "event": UUID,
  "output": {"dev", "ino", "size"} | null}``, replaced atomically (``fgraph.core.files``: never
  through a link, never onto a FIFO, device or directory, never half written). ``output`` is the
  regular file stdout was when the cursor was written and its size then.
- ``settle``: the bytes of a collected file after the position known to be good (the cursor's
  size, the chain's last line) can only be lines this tail printed before it was killed (a kill
  between a line and its record). Whole lines that are exactly the next events are adopted, a
  trailing part of the next line is cut, anything else is refused with the command that cuts it.
"""

from __future__ import annotations

import os
import stat

from fgraph.core import files, sidecars
from fgraph.core.canonical import dumps
from fgraph.core.catalog import Catalog
from fgraph.core.errors import Conflict, FgraphError, FormatError, NotFound, TooLarge
from fgraph.core.identity import check_event_uuid, uuid_to_gid
from fgraph.streams.events import iter_event_lines

CURSOR_FORMAT = "tail-cursor/1"
CURSOR_LIMIT = 4096
#: the most bytes after a good position that are examined (a killed tail leaves one batch at most)
SETTLE_LIMIT = 64 << 20


def event_tx(conn, uuid: str, what: str = "--after") -> int:
    """The local transaction whose event is ``uuid``; NotFound naming it when this store has none."""
    check_event_uuid(uuid, f"{what} event")
    cat = Catalog(conn)
    found = cat.id_by_gid(uuid_to_gid(uuid))
    if found is None or not cat.is_transaction(found) or cat.event_row(found) is None:
        raise NotFound(f"event {uuid} is not in this store",
                       "pass the \"event\" of a line `tail` printed from this store (the last line of the "
                       "collected file), or start with --since")
    return found


# ------------------------------------------------------------------ the output (stdout or --collected)

class Output:
    """The file a collector's lines end up in: the ``--collected`` path, or else stdout when it is a
    regular file (read back through /proc/self/fd); ``known`` is false for a pipe. ``ours``: the
    file is our stdout, so bytes we wrote past the good position may be cut."""

    def __init__(self, out, collected: str | None = None):
        self.fd = _fileno(out)
        info = os.fstat(self.fd) if self.fd is not None else None
        self.stdout_file = info is not None and stat.S_ISREG(info.st_mode)
        stdout = (info.st_dev, info.st_ino) if info is not None and self.stdout_file else None
        self.path = collected
        self.identity = stdout
        if collected is not None:
            files.refuse_unsafe_target(collected, "collected file")
            try:
                there = os.stat(collected)
            except FileNotFoundError:
                there = None
            except OSError as exc:
                raise files.os_failure(exc, collected, "collected file", "examined") from None
            self.identity = (there.st_dev, there.st_ino) if there is not None else None
        self.ours = stdout is not None and self.identity == stdout

    @property
    def known(self) -> bool:
        return self.identity is not None

    def name(self) -> str:
        return repr(self.path) if self.path is not None else "the file on stdout"

    def size(self) -> int:
        if self.identity is None:
            return 0
        if self.path is not None:
            return os.stat(self.path).st_size
        return os.fstat(self.fd).st_size   # type: ignore[arg-type]

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` (stdout is write-only: it is reopened for reading)."""
        target = self.path if self.path is not None else f"/proc/self/fd/{self.fd}"
        try:
            handle = files.open_regular_input(target, "collected file")
        except FormatError:
            raise Conflict(f"{self.name()} cannot be read back to check where the last run stopped",
                           "pass the file tail appends to as --collected FILE") from None
        with handle:
            handle.seek(offset)
            return handle.read(length)

    def cut(self, offset: int) -> None:
        try:
            os.ftruncate(self.fd, offset)   # type: ignore[arg-type]
            os.lseek(self.fd, offset, os.SEEK_SET)   # type: ignore[arg-type]  # opened without O_APPEND: no hole
        except OSError as exc:
            raise files.os_failure(exc, self.name(), "collected file", "cut back") from None

    def sync(self) -> None:
        """fsync stdout when it is a regular file: its lines reach the disk before their record."""
        if self.stdout_file:
            try:
                os.fsync(self.fd)   # type: ignore[arg-type]
            except OSError as exc:
                raise files.os_failure(exc, self.name(), "collected file", "synced") from None


def _fileno(out) -> int | None:
    try:
        return out.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def settle(conn, output: Output, offset: int, since: int, good: str) -> tuple[list[tuple[int, bytes]], int]:
    """(lines adopted as (tx, bytes with LF), tx after them) for the bytes of ``output`` past
    ``offset``, which must be the events after ``since``, whole, then at most part of the next one
    (cut when the output is ours). ``good`` says what ``offset`` is, for the messages."""
    size = output.size()
    if size <= offset:
        return [], since
    if size - offset > SETTLE_LIMIT:
        raise TooLarge(f"{output.name()} has {size - offset} bytes after {good}, more than one run of tail leaves",
                       _cut_hint(output, offset))
    extra = output.read(offset, size - offset)
    adopted: list[tuple[int, bytes]] = []
    position, tx = 0, since
    for tx_next, text in iter_event_lines(conn, since):
        if position >= len(extra):
            break
        line = text.encode("utf-8") + b"\n"
        piece = extra[position:position + len(line)]
        if piece == line:
            adopted.append((tx_next, line))
            position += len(line)
            tx = tx_next
            continue
        if len(piece) < len(line) and line.startswith(piece) and position + len(piece) == len(extra):
            break   # the last line was being written when the tail was killed: cut it below
        raise Conflict(f"{output.name()} has {len(extra) - position} bytes after {good} and "
                       f"{len(adopted)} line(s) that are not the next events of this store",
                       _cut_hint(output, offset + position))
    else:
        if position < len(extra):
            raise Conflict(f"{output.name()} has {len(extra) - position} bytes after {good} and the "
                           f"{len(adopted)} following line(s), but this store has no later event",
                           _cut_hint(output, offset + position))
    if position < len(extra):
        if not output.ours:
            raise Conflict(f"{output.name()} ends in part of a line (tail was killed while writing it)",
                           _cut_hint(output, offset + position))
        output.cut(offset + position)
    return adopted, tx


def _cut_hint(output: Output, keep: int) -> str:
    where = f"`truncate -s {keep} {output.path}`" if output.path is not None else \
        f"`truncate -s {keep} FILE`, FILE being the file tail appends to"
    return (f"cut it back to the {keep} bytes that were collected exactly: {where} "
            "(keep a copy of the rest if it matters), then restart")


# ------------------------------------------------------------------ the cursor file

def read_cursor(path: str, store: str) -> dict | None:
    """The cursor at ``path`` (None when it does not exist); one of another store or damaged is refused."""
    sidecars.refuse_sidecar_name(path, "cursor file")
    raw = files.read_sidecar(path, "cursor file", CURSOR_LIMIT)
    if raw is None:
        return None
    document = sidecars.marker_document(raw, CURSOR_FORMAT)
    event = document.get("event") if document else None
    output = document.get("output") if document else None
    if (document is None or not isinstance(event, str) or not isinstance(document.get("store"), str)
            or not (output is None or isinstance(output, dict)
                    and all(isinstance(output.get(k), int) and output[k] >= 0 for k in ("dev", "ino", "size")))):
        raise FormatError(f"the cursor file {path!r} is not a tail cursor ({CURSOR_FORMAT}): {raw[:120]!r}",
                          "remove it and restart with --after the \"event\" of the last line collected "
                          "(or without it: from --since)")
    if document["store"] != store:
        raise Conflict(f"the cursor file {path!r} was written for another store ({document['store']}, "
                       f"this one is {store})",
                       "give each store its own cursor file, or remove this one to start from --since/--after")
    try:
        check_event_uuid(event, "cursor event")
    except FgraphError as exc:
        raise FormatError(f"the cursor file {path!r} names no event: {exc.message}",
                          "remove it and restart with --after the \"event\" of the last line collected") from None
    return document


def write_cursor(path: str, store: str, event: str, output: Output) -> None:
    """Record that every line up to ``event`` reached the output (called after it was flushed)."""
    place = None
    if output.known and output.identity is not None:
        place = {"dev": output.identity[0], "ino": output.identity[1], "size": output.size()}
    document = {"event": event, "fgraph": CURSOR_FORMAT, "output": place, "store": store}
    files.write_atomically(path, dumps(document).encode("utf-8") + b"\n", "cursor file")


def cursor_offset(document: dict, output: Output) -> int | None:
    """Where the cursor says the output ended, when the output is still the file it recorded."""
    place = document.get("output")
    if not place or output.identity != (place["dev"], place["ino"]):
        return None
    return int(place["size"])


def check_cursor_output(path: str, offset: int, output: Output) -> None:
    size = output.size()
    if size < offset:
        raise Conflict(f"{output.name()} is {size} bytes, shorter than the {offset} the cursor {path!r} recorded "
                       "(cut, or lost in a machine crash)",
                       "restart with --after the \"event\" of its last line, without --cursor, or "
                       "remove the cursor file")
