"""What restore proves as the stream goes by, so that its final doctor need not read it all again.

Restore writes every row itself from records it has checked; what those checks leave open
(``fgraph.ops.doctor.restored`` lists every doctor check and where restore settles it) is
proved here, record by record, on bounded state:

- each receipt: its ``created`` list is exactly its event's (or, for an event applied from
  another store, which its own fgraph/imported-at fact shows, a part of it), and every anonymous
  identity it creates carries the eid derived from its event (03 §7);
- each stored payload, read back once in transaction order beside the facts: canonical JSON
  (the doctor's own test, an orjson round trip, holds for canonical text that round-trips) and a
  well-formed event/1 object that is not a redaction;
- each fact: decision 7, against the payload of the event that asserted it (read by that same
  cursor, since facts come in the order of their asserting transactions) and of the event that
  retracted it (from a bounded cache of parsed payloads, else one query), with the rules the
  doctor applies (``fgraph.core.agreement``) to the very row it would read back; and the few
  things a fact may break on its own (a genesis or excision fact, a transaction's own time that
  is retracted or not an instant, an identity used before its creating transaction).

Nothing here raises. What is not proved — anything unusual, not only damage: a redacted event,
an excision, an unproved float spelling — is ``unproved`` (the first reason), and restore then
runs the full doctor, which decides the outcome and its message exactly as before. So the proof
only ever skips work on a stream it has fully vouched for.
"""

from __future__ import annotations

from collections import OrderedDict

import orjson

from fgraph.core.agreement import Payload, asserting_agrees, replaced, retracting_agrees
from fgraph.core.genesis import A_AT, A_EXCISED, A_IMPORTED_AT
from fgraph.core.identity import anonymous_eid, uuid_to_gid
from fgraph.core.limits import GENESIS_TX
from fgraph.core.payload import payload_bytes, stored_text
from fgraph.core.values import TAG_INSTANT, TAG_REF

PAYLOADS_KEPT = 256               # parsed payloads kept for facts the cursor has passed
PAYLOAD_BYTES_KEPT = 16 << 20     # and at most this much of their text
WAITING = 65536                   # retracted facts waiting for the cursor to reach their retracting event
WAITING_BYTES = 8 << 20           # and at most this much of their keys
UNIFIED = 65536                   # applied events that unified names, waiting for their imported-at fact
_EVENTS = f"SELECT tx, {payload_bytes()} FROM fgraph_events WHERE tx > {GENESIS_TX} ORDER BY tx"
_EVENT = f"SELECT {payload_bytes()} FROM fgraph_events WHERE tx = ?"
_AFTER_ALL = float("inf")
_SORTED = orjson.OPT_SORT_KEYS
# Tags whose stored value renders back to the record's own value (a float only when the record
# holds a float: an int becomes the nearest float). Instants, bytes and vectors may be spelled
# otherwise on the wire than they render, so they take the doctor's rendering of the row.
_VERBATIM = frozenset({"text", "int", "bool", "ref", "json", "float"})
_FACT_HEAD = len(b'{"fact":[')
_TAIL_LIVE = len(b',"00000000-0000-0000-0000-000000000000",null]}')
_TAIL_RETRACTED = len(b',"00000000-0000-0000-0000-000000000000","00000000-0000-0000-0000-000000000000"]}')


class Proof:
    """Proves a restored stream as it is written; ``unproved`` says why it could not."""

    def __init__(self, conn):
        self.conn = conn
        self.unproved: str | None = None
        self.events = None          # the cursor over stored payloads, opened at the first fact
        self.at = GENESIS_TX        # the transaction whose payload is ``current``
        self.current: Payload | None = None
        self.retracting: OrderedDict[int, Payload] = OrderedDict()
        self.retracting_bytes = 0
        # Retracted facts wait for the cursor to parse their retracting event (later than their
        # asserting one, so still ahead), by rx. Past its bounds, a fact is checked at once
        # against its payload, read on its own (``retractor``).
        self.waiting: dict[int, tuple] = {}
        self.waiting_count = self.waiting_bytes = 0
        self.unified: set[int] = set()  # receipts that left out names of their event, until shown applied

    def give_up(self, reason: str) -> None:
        """Stop proving (the full doctor will decide); the cursor is closed by ``finish``/``close``."""
        if self.unproved is None:
            self.unproved = reason
            self.waiting.clear()
            self.retracting.clear()

    # -- receipts ------------------------------------------------------------------------
    def receipt(self, event: str, tx: int, created: list, payload) -> None:
        """A receipt whose payload restore has checked (its hash, event, time, and that its
        ``created`` list covers the receipt's)."""
        if self.unproved is not None:
            return
        if payload is None:
            return self.give_up(f"event {event} is redacted")
        listed = payload.get("created") if isinstance(payload, dict) else None
        if created != listed:
            # only an applied event may list names the receipt leaves out (they existed here):
            # its fgraph/imported-at fact, among its own facts later, must show it was applied
            if len(self.unified) >= UNIFIED:
                return self.give_up("too many receipts list fewer identities than their events")
            self.unified.add(tx)
        index = None
        for sel in created:
            if isinstance(sel, str) and sel.startswith("fgraph/"):  # doctor counts it a system identity
                return self.give_up(f"event {event} creates the reserved name {sel!r}")
            if isinstance(sel, dict):
                if index is None:   # as the doctor indexes them: the last position of an eid wins
                    index = {s["eid"]: k for k, s in enumerate(listed) if isinstance(s, dict)}
                if anonymous_eid(event, index[sel["eid"]]) != uuid_to_gid(sel["eid"]):
                    return self.give_up(f"event {event}: eid {sel['eid']} is not derived from its event")

    # -- facts -----------------------------------------------------------------------------
    def fact(self, fact_id: int, e: int, a: int, tx: int, rx: int | None, decoded, record: list,
             encoded: bytes | None) -> None:
        """A fact as restore writes it: ``decoded`` its stored value, ``record`` the stream's
        ``[entity, attribute, value, tag, tx_event, rx_event]`` (restore resolved and checked it)
        and ``encoded`` the canonical bytes of ``{"fact": record}``."""
        if self.unproved is not None:
            return
        t = decoded.t
        if tx == GENESIS_TX or a == A_EXCISED:
            return self.give_up("a fact of the genesis or of an excision")
        if e > tx or a > tx or (t == TAG_REF and decoded.v > tx):
            # ids are allocated in stream order: an identity created after tx is one with a larger id
            return self.give_up("a fact uses an identity created after its transaction")
        own = e == tx
        if own and a == A_IMPORTED_AT:
            self.unified.discard(tx)
        if own and a == A_AT and (rx is not None or t != TAG_INSTANT):
            return self.give_up(f"transaction {tx}: its own time is retracted or not an instant")
        fast = None
        if encoded is not None and record[3] in _VERBATIM and (record[3] != "float" or type(record[2]) is float):
            # the stored value renders back to the very value of the record: its canonical
            # [entity, attribute, value, tag] is a slice of the record's bytes
            fast = b"[" + encoded[_FACT_HEAD:len(encoded) - (_TAIL_LIVE if rx is None else _TAIL_RETRACTED)] + b"]"
        if not (own and (a == A_AT or a == A_IMPORTED_AT)):
            sets = self.asserting(tx).asserting()
            if sets is not None and not (fast is not None and not own and fast in sets["asserted"]) \
                    and not asserting_agrees(_row(tx, e, a, decoded, record, fact_id), sets):
                return self.give_up(f"a {record[1]} fact disagrees with the event that asserted it")
        if rx is None:
            return
        if fast is None or rx <= self.at:   # a value rendered otherwise, or (damaged) an event already passed
            return self.retracted_now(rx, e, a, decoded, record, fact_id)
        pair = _pair(record)
        cut = len(pair) - 1 if fast.startswith(pair[:-1]) else 0
        if self.waiting_count >= WAITING or self.waiting_bytes + len(fast) > WAITING_BYTES or not cut:
            return self.retracted_now(rx, e, a, decoded, record, fact_id)  # full: checked at once
        # a tuple of bytes and ints, which the garbage collector stops tracking, unlike a list
        bucket = self.waiting.get(rx)
        self.waiting[rx] = (fast, cut) if bucket is None else bucket + (fast, cut)
        self.waiting_count += 1
        self.waiting_bytes += len(fast)

    def retracted_now(self, rx: int, e: int, a: int, decoded, record: list, fact_id: int) -> None:
        """The doctor's check of a retracted fact, against its retracting payload read on its own."""
        sets = self.retractor(rx).retracting()
        if sets is not None and not retracting_agrees(_row(rx, e, a, decoded, record, fact_id), sets):
            self.give_up(f"a {record[1]} fact disagrees with the event that retracted it")

    def asserting(self, tx: int) -> Payload:
        """``tx``'s payload: the cursor moves on to it, proving every payload it passes."""
        if tx == self.at:
            return self.current
        if tx < self.at:            # out of transaction order: only in a damaged stream
            return self.retractor(tx)
        self.advance(tx)
        return self.current if self.at == tx else self.retractor(tx)

    def advance(self, tx) -> None:
        if self.events is None:
            self.events = self.conn.cursor().execute(_EVENTS)
        for at, data in self.events:
            if self.unproved is not None:
                return
            payload = Payload(stored_text(data))
            self.event(at, payload)
            self.at, self.current = at, payload
            self.release(at)
            if at >= tx:
                return
        self.at, self.current = _AFTER_ALL, None
        for rx in sorted(self.waiting):     # none is left: every rx is an event the cursor passed
            self.release(rx, self.retractor(rx))

    def release(self, at, payload: Payload | None = None) -> None:
        """Check the retracted facts waiting for event ``at``, whose payload the cursor holds."""
        bucket = self.waiting.pop(at, None)
        if bucket is None or self.unproved is not None:
            return
        self.waiting_count -= len(bucket) // 2
        sets = (payload or self.current).retracting()
        if sets is None:
            return
        listed = sets[0]
        for k in range(0, len(bucket), 2):
            fast, cut = bucket[k], bucket[k + 1]
            self.waiting_bytes -= len(fast)
            # listed as retracted, or its (entity, attribute) asserted anew: what the doctor
            # accepts, on the bytes it would compute (``fast`` and its [entity, attribute] prefix)
            if fast not in listed and fast[:cut] + b"]" not in replaced(sets):
                return self.give_up("a fact disagrees with the event that retracted it")

    def event(self, tx: int, payload: Payload) -> None:
        """The doctor's event pass for one stored payload restore wrote from a checked receipt:
        canonical, a well-formed event/1 object, not a redaction."""
        text, doc = payload.text, payload.doc()
        if doc is None:
            return self.give_up(f"event {tx}: its payload is not a well-formed event")
        if "redacted" in doc or "redacts" in doc:
            return self.give_up(f"event {tx} is a redaction")
        try:  # the text is the canonical encoder's: a round trip through orjson proves the doctor's parse
            if orjson.dumps(doc, option=_SORTED) != text.encode("utf-8"):
                self.give_up(f"event {tx}: its payload is canonical in a form the round trip does not prove")
        except (orjson.JSONEncodeError, UnicodeEncodeError):
            self.give_up(f"event {tx}: its payload does not round-trip")

    def retractor(self, tx: int) -> Payload:
        """A payload other than the cursor's, from the bounded cache or one query."""
        payload = self.retracting.get(tx)
        if payload is not None:
            self.retracting.move_to_end(tx)
            return payload
        row = self.conn.execute(_EVENT, (tx,)).fetchone()
        payload = Payload(stored_text(row[0]) if row is not None else None)
        size = len(payload.text) if isinstance(payload.text, (str, bytes)) else 0
        while self.retracting and (len(self.retracting) >= PAYLOADS_KEPT
                                   or self.retracting_bytes + size > PAYLOAD_BYTES_KEPT):
            _, old = self.retracting.popitem(last=False)
            self.retracting_bytes -= len(old.text) if isinstance(old.text, (str, bytes)) else 0
        if size <= PAYLOAD_BYTES_KEPT:
            self.retracting[tx] = payload
            self.retracting_bytes += size
        return payload

    # -- the end ------------------------------------------------------------------------------
    def finish(self) -> bool:
        """After the last fact: prove the payloads no fact reached. True when all is proved."""
        if self.unproved is None:
            self.advance(_AFTER_ALL)
        if self.unified:
            self.give_up(f"transaction {min(self.unified)} lists fewer identities than its event, and was not applied")
        self.close()
        return self.unproved is None

    def close(self) -> None:
        if self.events is not None:
            self.events.close()
            self.events = None
        self.retracting.clear()
        self.retracting_bytes = 0
        self.waiting.clear()
        self.waiting_count = self.waiting_bytes = 0


def _row(tx: int, e: int, a: int, decoded, record: list, fact_id: int) -> tuple:
    """The row the doctor's walk reads for this fact (``fgraph.core.agreement``): restore creates
    an identity with a name or with a gid, never both (genesis too), so a selector gives both."""
    en, eg = _name_or_gid(record[0])
    vn, vg = _name_or_gid(record[2]["ref"]) if decoded.t == TAG_REF else (None, None)
    return tx, e, a, decoded.v, decoded.t, en, eg, record[1], decoded.blob, vn, vg, fact_id


def _name_or_gid(selector) -> tuple:
    if isinstance(selector, str):
        return selector, None
    return None, uuid_to_gid(selector["eid"])


def _pair(record: list) -> bytes:
    """Canonical [entity, attribute] as the doctor keys a replaced pair (a name or an eid object,
    then an attribute name: no float, so orjson's bytes are the canonical ones)."""
    return orjson.dumps(record[:2])
