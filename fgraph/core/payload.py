"""A stored event payload read back: its bytes, checked against the hash stored beside them.

SQLite returns damaged text as it finds it, and a text column holding bytes that are not UTF-8
made the driver raise ``UnicodeDecodeError`` mid-read (``doctor``, ``tail``, ``snapshot`` and
``info --digest`` ended in "internal error" on one flipped bit, issue 29 item 8). Readers select
``payload_bytes()`` instead and pass the bytes here: a payload that no longer matches its hash is
a typed ``FormatError`` naming its transaction, as the published runtime's ``tail`` does, and
never reaches a stream or a snapshot as altered text. ``doctor`` reports the same damage as a
finding (``ops/doctor/payloads``).
"""

from __future__ import annotations

from collections.abc import Callable

from fgraph.core.errors import DAMAGE_ADVICE, FormatError
from fgraph.core.hashing import sha256

ADVICE = DAMAGE_ADVICE


def payload_bytes(column: str = "event_data") -> str:
    """The SQL for a payload's bytes as stored (NULL when redacted), never decoded by the driver."""
    return f"CAST({column} AS BLOB)"


def stored_text(data: bytes | None) -> str | bytes | None:
    """The payload decoded, None when redacted, or the bytes themselves when they are not UTF-8
    (for ``doctor``, which reports them instead of stopping)."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def damage(data: bytes, event_hash: bytes) -> str | None:
    """What is wrong with a stored payload ("is not valid UTF-8 …", "does not match its hash"), or None."""
    if sha256(data).digest() != event_hash:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return f"is not valid UTF-8 (byte {exc.start}) and does not match its hash"
        return "does not match its hash"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"is not valid UTF-8 (byte {exc.start})"
    return None


def verified_text(tx: int, data: bytes | None, event_hash: bytes,
                  event: str | Callable[[], str | None] | None = None) -> str | None:
    """The canonical text of transaction ``tx``'s stored event (None when redacted), or FormatError.
    ``event`` names it in the message: its UUID, or a function giving it (asked only on failure)."""
    if data is None:
        return None
    if sha256(data).digest() == event_hash:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    if callable(event):
        try:
            event = event()
        except Exception:  # the registry may be damaged too: the transaction still names it
            event = None
    named = f"event {event} (transaction {tx})" if event else f"the event of transaction {tx}"
    raise FormatError(f"{named} is damaged: its stored payload {damage(data, event_hash)}", ADVICE)
