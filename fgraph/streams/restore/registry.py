"""The identities and events of a restore's receipts (spec 05 §2.5 steps 2–4 and 6): the payload
proved to be the receipt's event, the duplicate checks (an event listed twice, an identity created twice, in the store or in one receipt) and
their rows, which wait to be written together when SQLite cannot refuse them.

A new name or gid is proved absent by a fixed Bloom filter (``fgraph.streams.restore.absent``) before any
registry query; names and gids of rows still waiting count as registered. Rows SQLite may refuse
(an operation id, or a name or gid repeated within the receipt) are written at once, so SQLite
refuses them at their own receipt, as a ``FormatError`` there (the published runtime's word).
"""

from __future__ import annotations

import hashlib

import apsw

from fgraph.core.canonical import dumps, dumps_bytes
from fgraph.core.errors import Conflict, FgraphError, FormatError, ValueTypeError
from fgraph.core.identity import check_event_uuid, uuid_to_gid
from fgraph.core.limits import BATCH_BYTES, is_subsequence
from fgraph.core.names import check_name
from fgraph.streams.restore.absent import Absent

RECEIPT_BATCH = 256   # receipts whose identity and event rows wait to be written together


def refused_stream(what: str) -> ValueTypeError:
    return ValueTypeError(what, "restore only accepts snapshot/1 streams written by `fgraph snapshot`")


class RowRefused(Exception):
    """A row the database itself refused; unlike a record's own errors it is not deferred."""

    def __init__(self, error: FgraphError):
        super().__init__(error)
        self.error = error


class Registry:
    """The registry rows of the receipts restored so far, some of them still waiting."""

    def __init__(self, conn, cat, rows):
        self.cat, self.rows = cat, rows
        self.absent = Absent(conn)   # names and gids surely not registered: no query for a new identity
        self.waiting_ids: list[tuple] = []
        self.waiting_events: list[tuple] = []
        self.waiting: set = set()   # names and gids of the waiting rows: registered once written
        self.waiting_bytes = 0

    def event_listed(self, event: str) -> bool:
        return self.registered_gid(uuid_to_gid(event))

    def created(self, first: int, selectors: list) -> list[tuple]:
        """``(id, name, gid)`` of a receipt's new identities, ids from ``first`` on, each new."""
        rows, listed = [], set()
        for offset, sel in enumerate(selectors):
            row = self._new_identity(first + offset, sel)
            key = row[1] if row[1] is not None else row[2]
            if key in listed:   # spec 05 §2.5 step 3: a repeat is a Conflict, as the published runtime says
                raise Conflict(f"identity {sel!r} is created twice", "a snapshot creates each identity once")
            listed.add(key)
            rows.append(row)
        return rows

    def _new_identity(self, ident: int, sel) -> tuple:
        if isinstance(sel, str):
            check_name(sel, "created name")
            if sel in self.waiting or not self.absent.surely_absent(sel) and self.cat.id_by_name(sel) is not None:
                raise Conflict(f"identity {sel!r} is created twice", "a snapshot creates each identity once")
            return ident, sel, None
        if isinstance(sel, dict) and set(sel) == {"eid"}:
            gid = uuid_to_gid(check_event_uuid(sel["eid"], "eid"))
            if self.registered_gid(gid):
                raise Conflict(f"eid {sel['eid']} is created twice", "a snapshot creates each identity once")
            return ident, None, gid
        raise refused_stream(f"created selector {sel!r} must be a name or {{\"eid\": uuid}}")

    def registered_gid(self, gid: bytes) -> bool:
        """Whether an identity with this gid is registered (a query only when the filter cannot say no)."""
        return gid in self.waiting or not self.absent.surely_absent(gid) and self.cat.id_by_gid(gid) is not None

    def register(self, event: str, registered: list[tuple], event_row: tuple, operation_id) -> None:
        """Queue or write a receipt's identity rows ``(id, name, gid, created_tx)`` and its events row."""
        keys = [name if name is not None else gid for _, name, gid, _ in registered]
        for key in keys:  # before the rows are written: the filter may only hold more
            self.absent.add(key)
        if operation_id is None and len(set(keys)) == len(keys) and self.waiting.isdisjoint(keys):
            # No UNIQUE constraint can refuse these rows (the checks found each name and gid
            # unregistered, and none is repeated), so they may wait and be written together.
            self.waiting_ids += registered
            self.waiting_events.append(event_row)
            self.waiting.update(keys)
            self.waiting_bytes += len(event_row[2]) if event_row[2] is not None else 0
            if len(self.waiting_events) >= RECEIPT_BATCH or self.waiting_bytes >= BATCH_BYTES:
                self.write()
        else:  # SQLite may refuse a row: written now, so it refuses it here, as it always did
            self.write()
            try:
                self.rows.identities(registered)
                self.rows.events([event_row])
            except apsw.ConstraintError as exc:   # an operation id, name or eid the store already holds
                raise RowRefused(FormatError(
                    f"the receipt of event {event} cannot be stored: {exc.args[0] if exc.args else exc}",
                    "the snapshot was altered (an operation id, name or eid appears twice); "
                    "restore an unmodified one")) from None
        for row in registered:
            self.cat.cache.remember(*row)

    def write(self) -> None:
        """Write the waiting identity and event rows (before anything reads the registry or events)."""
        if self.waiting_events:
            self.rows.identities(self.waiting_ids)
            self.rows.events(self.waiting_events)
            self.waiting_ids, self.waiting_events, self.waiting_bytes = [], [], 0
            self.waiting.clear()

    def omitted_exist(self, r: dict, payload: dict) -> bool:
        """A receipt may skip names of its event only when they already existed (an apply that unified them)."""
        if r["created"] == payload.get("created"):  # checked names and {"eid"} objects: equal as JSON too
            return True
        self.write()  # the registry is asked below
        listed = [dumps(sel) for sel in r["created"]]
        for sel in payload.get("created", ()):
            if dumps(sel) in listed:
                continue
            if isinstance(sel, str):
                if self.cat.id_by_name(sel) is None:
                    return False
            elif not isinstance(sel, dict) or self.cat.id_by_gid(uuid_to_gid(check_event_uuid(sel.get("eid"),
                                                                                               "eid"))) is None:
                return False
        return True


def checked_payload(r: dict, event: str, origin: int, encoded: bytes | None, registry: Registry) -> str:
    """The text of a receipt's ``event_data`` once it proves to be this receipt's event (spec 05
    §2.5 step 6): its canonical bytes hash to ``event_hash``, its ``at`` is ``origin_at``, and its
    ``created`` list is the receipt's (or names only identities that already existed)."""
    payload = r["event_data"]
    raw = receipt_payload_bytes(payload, encoded)
    if hashlib.sha256(raw).hexdigest() != r["event_hash"]:
        raise refused_stream(f"event {event}: its payload does not hash to its event_hash")
    if not isinstance(payload, dict) or payload.get("fgraph") != "event/1" or payload.get("event") != event:
        raise refused_stream(f"event {event}: the payload is not this receipt's event/1 record")
    if payload.get("at") != origin:
        raise Conflict(f"event {event}: payload at {payload.get('at')} differs from origin_at {origin}",
                       "the snapshot was altered; restore an unmodified one")
    if not is_subsequence(r["created"], payload.get("created")) or not registry.omitted_exist(r, payload):
        raise Conflict(f"event {event}: receipt created identities disagree with its authenticated event",
                       "the snapshot was altered; restore an unmodified one")
    return raw.decode("utf-8")


def receipt_payload_bytes(payload, encoded: bytes | None) -> bytes:
    """The canonical bytes of a receipt's payload, cut from the receipt's own canonical bytes
    (``encoded``) instead of encoded a second time: canonical JSON encodes a value the same
    wherever it stands, and a quote inside a string is escaped, so the first ``"event_data":``
    and the last ``,"event_hash":"`` (the keys around it, in canonical order) bound it exactly."""
    if encoded is not None:
        start, end = encoded.find(b'"event_data":'), encoded.rfind(b',"event_hash":"')
        if 0 < start < end:
            return encoded[start + len(b'"event_data":'):end]
    return dumps_bytes(payload)
