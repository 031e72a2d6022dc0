"""How the NATS adapter finds a store's own records on its subject among foreign messages (issue 48
item 3, docs/replication.md "Foreign and unverifiable messages (issue 48 item 3)").

Another application may publish on ``STREAM.<store id>``. A publisher resumes after the store's last
*fgraph* record there (``last_before``), and an append refused for the subject's last sequence goes
on after what came meanwhile when that is only foreign messages (``foreign_since``); an fgraph
record of the store among them is another publisher. Every read is bounded: at most ``MAX_SCAN``
messages of one subject.
"""

from __future__ import annotations

from fgraph.core.errors import Conflict

MAX_SCAN = 10_000         # messages of one subject read when stepping over foreign ones
FOREIGN_RETRIES = 16      # appends retried while foreign messages keep landing on the subject


async def scan(js, not_found, stream: str, subject: str, first: int, below: int | None):
    """The messages on ``subject`` from sequence ``first`` (below ``below``), at most ``MAX_SCAN``;
    ``not_found`` is the client's NotFoundError."""
    seq = first
    for _ in range(MAX_SCAN):
        try:
            message = await js.get_msg(stream, seq=seq, subject=subject, next=True)
        except not_found:
            return
        if below is not None and message.seq >= below:
            return
        yield message
        seq = message.seq + 1
    raise Conflict(f"subject {subject} of stream {stream} holds more than {MAX_SCAN} messages that are no fgraph "
                   "record of its store", f"remove them (nats stream rmm {stream} SEQ) or publish into a new "
                   "stream; nothing but `fgraph sync` may publish on a store's subject")


async def last_before(js, not_found, stream: str, subject: str, below: int, ours):
    """The last message on ``subject`` before sequence ``below`` for which ``ours(message)`` holds
    (None when none is), read backwards a widening window at a time."""
    window = 64
    while below > 1:
        low, found = max(1, below - window), None
        async for message in scan(js, not_found, stream, subject, low, below):
            if ours(message):
                found = message
        if found is not None:
            return found
        below, window = low, window * 4
    return None


async def foreign_since(js, not_found, stream: str, subject: str, after: int, ours) -> int | None:
    """The sequence of the last message on ``subject`` after ``after`` when none of those is
    ``ours`` (only foreign messages came: append after them); None when one is ours, or none came."""
    last = None
    async for message in scan(js, not_found, stream, subject, after + 1, None):
        if ours(message):
            return None
        last = message.seq
    return last
