"""Restore a snapshot/1 stream into a pristine store, all or nothing (spec 05 §2).

Records are checked as they stream in, inside one write transaction: structure,
receipts (hashes, identities, times), facts (selectors, events, values) and, at
the footer, counts, basis and the digest over the canonical records. Facts are
also cross-checked against the payloads of the events that asserted and
retracted them (spec README decision 7). Any failure rolls everything back.

The doctor that spec 05 §2.7 runs at the end is, given a ``reduced_check``, mostly
not a second read: what it would check is proved as the records go by
(``fgraph.streams.restore.proof``) or holds because restore wrote the rows itself; only the
schema and shapes are checked at the end (``fgraph.ops.doctor.restored`` says which
check is settled where). Whatever was not proved gets the full doctor, so outcomes
and messages are the same either way.
"""

from __future__ import annotations

import hashlib
import re

import apsw

from fgraph.core import values
from fgraph.streams.lines import iter_lines, not_utf8
from fgraph.streams.restore.parse import parse_line
from fgraph.streams.restore.proof import Proof
from fgraph.streams.restore.registry import Registry, RowRefused, checked_payload, refused_stream
from fgraph.streams.restore.lookups import Lookups, Window, selector_key, size_temp_cache
from fgraph.core.limits import MAX_SNAPSHOT_LINE_BYTES
from fgraph.core.canonical import dumps_bytes, loads
from fgraph.core.catalog import Catalog
from fgraph.core.checks import is_strict_int, strict_int
from fgraph.core.errors import Conflict, FgraphError, FormatError, NotFound, TooLarge
from fgraph.core.genesis import A_AT, A_IMPORTED_AT, GENESIS_AT_FACT, genesis_event
from fgraph.core.identity import GENESIS_EVENT, INSTANT_MAX, INSTANT_MIN, check_event_uuid, uuid_to_gid
from fgraph.core.limits import BATCH_BYTES, GENESIS_TX, RESTORE_BATCH_ROWS
from fgraph.core.names import check_attribute_name
from fgraph.core.rows import FTS_TAGS, Rows
from fgraph.core.transact import check_operation_id
from fgraph.core.txn import write_transaction
from fgraph.core.values import INDIRECT_TAGS, RefWire

MAX_LINE_BYTES = MAX_SNAPSHOT_LINE_BYTES
TIMES_BATCH = 1024
TEMP_CACHE_KIB = -256
HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
RECEIPT_KEYS = frozenset({"at", "created", "event", "event_data", "event_hash", "operation_id", "origin_at",
                          "request_hash"})
HEADER_KEYS = frozenset({"basis", "created_at", "fgraph", "format"})
FOOTER_KEYS = frozenset({"facts", "fgraph", "receipts", "sha256"})


def _instant(value, what: str) -> int:
    return strict_int(value, what + " {value!r} is not an instant in microseconds", low=INSTANT_MIN, high=INSTANT_MAX,
                      error=refused_stream)


class Restorer:
    """Turns snapshot/1 records, in order, into rows of a pristine database."""
    def __init__(self, conn, reduced_check=None):
        self.conn = conn
        # With a reduced final check, what the final doctor would read again is proved as the
        # records go by (``fgraph.streams.restore.proof``); without one, the full doctor runs at the end.
        self.reduced_check = reduced_check
        self.proof = Proof(conn) if reduced_check is not None else None
        self.cat = Catalog(conn)
        self.rows = Rows(conn)
        self.digest = hashlib.sha256()
        self.deferred: FgraphError | None = None   # the first receipt or fact that failed
        self.seen_fact = False
        self.footer: dict | None = None
        self.counted = {"receipts": 0, "facts": 0}
        self.header = None
        self.receipts = 0
        self.facts = 0
        self.last_event = GENESIS_EVENT
        self.next_id: int | None = None
        self.times: list[tuple] = []  # (tx, at, origin) of receipts not yet in temp.restore_times
        self.line = 0
        self.encoded: bytes | None = None  # canonical bytes of the record being handled
        self.first_fact: tuple[int, int] | None = None  # (fact id, line) of the first fact record
        # Fact rows wait here, ids allocated as AUTOINCREMENT would; nothing reads them before finish().
        self.pending: list[tuple] = []            # (id, e, a, v, t, blob, tx, rx, attribute, line)
        self.pending_bytes = 0
        self.next_fact_id: int | None = None
        self.known = Lookups(conn)  # what the facts ask again and again, from bounded memory
        self.window = Window(conn)  # the events just after the facts' asserting one: retracting events
        self.registry = Registry(conn, self.cat, self.rows)  # receipts' identity and event rows
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS restore_times (tx INTEGER PRIMARY KEY, at INTEGER, origin INTEGER)")
        conn.execute("DELETE FROM temp.restore_times")

    # -- records ----------------------------------------------------------------
    def record(self, record, number: int = 0, encoded: bytes | None = None) -> bool:
        """Handle one parsed record; True when it was the footer.

        The shape of the stream (record kinds, receipts before facts, the footer last, the
        digest) outranks what a record means, as in the published runtime: after the first
        failing receipt or fact, the rest is still read for those checks, and the record's own
        error is raised only if the stream is otherwise well formed."""
        # The canonical bytes feed the digest and, for a fact, the proof (its [entity, attribute,
        # value, tag] is a slice of them); a record they cannot encode fails where it always did.
        # ``encoded``, when given, is those bytes already (the line itself, ``fgraph.streams.restore.parse``).
        if encoded is not None:
            self.encoded = encoded
        else:
            try:
                self.encoded = dumps_bytes(record)
            except FgraphError:
                self.encoded = None
        if self.header is None:
            self.start(record)
        elif isinstance(record, dict) and record.get("fgraph") == "end":
            self.footer = record
            return True
        elif isinstance(record, dict) and set(record) == {"receipt"}:
            if self.seen_fact:
                raise refused_stream("a receipt follows a fact; all receipts come first")
            self.counted["receipts"] += 1
            self.checked(self.receipt, record["receipt"], number)
        elif isinstance(record, dict) and set(record) == {"fact"}:
            self.seen_fact = True
            self.counted["facts"] += 1
            self.checked(self.fact, record["fact"], number)
        else:
            raise refused_stream("a record is neither a receipt, a fact nor the footer")
        self.digest.update((self.encoded if self.encoded is not None else dumps_bytes(record)) + b"\n")
        return False

    def checked(self, handle, body, number: int) -> None:
        if self.deferred is not None:
            return
        self.line = number
        try:
            handle(body)
        except RowRefused as refused:  # SQLite refused the row itself: reported at once, as published
            raise refused.error from None
        except FgraphError as exc:
            self.deferred = exc.at_line(number) if number else exc

    def start(self, header) -> None:
        if not isinstance(header, dict) or header.get("fgraph") != "snapshot/1" or not HEADER_KEYS <= set(header) \
                or header.get("format") != 2 or isinstance(header.get("format"), bool):
            raise refused_stream("the first record is not a snapshot/1 format 2 header")
        created_at = _instant(header["created_at"], "header created_at")
        if self.cat.latest_tx() != GENESIS_TX:
            raise Conflict("the destination is not pristine", "restore only into a new, empty database")
        self.header = header
        if self.proof is not None and not self.reduced_check.before(self.conn):
            self.proof.give_up("the destination fails doctor before the restore")
        event = genesis_event(created_at)
        self.rows.genesis_time(created_at, GENESIS_AT_FACT, GENESIS_TX, event)

    def receipt(self, r) -> None:
        if not isinstance(r, dict) or set(r) != RECEIPT_KEYS:
            raise refused_stream("a receipt must have exactly the 8 receipt keys")
        event = check_event_uuid(r["event"])
        if self.registry.event_listed(event):
            raise Conflict(f"event {event} appears twice", "a snapshot lists each transaction once")
        if not isinstance(r["event_hash"], str) or not HEX64.match(r["event_hash"]):
            raise refused_stream(f"event_hash {r['event_hash']!r} is not 64 lowercase hex digits")
        at, origin = _instant(r["at"], "receipt at"), _instant(r["origin_at"], "receipt origin_at")
        check_operation_id(r["operation_id"])
        rh = r["request_hash"]
        if rh is not None and (not isinstance(rh, str) or not HEX64.match(rh)):
            raise refused_stream(f"request_hash {rh!r} is not 64 lowercase hex digits")
        if (r["operation_id"] is None) != (rh is None):
            raise refused_stream("operation_id and request_hash come together or not at all")
        if not isinstance(r["created"], list):
            raise refused_stream("receipt created must be an array")
        first = self.next_id if self.next_id is not None else self.cat.next_id()
        rows = self.registry.created(first, r["created"])
        tx = first + len(rows)
        text = None
        if r["event_data"] is not None:
            text = checked_payload(r, event, origin, self.encoded, self.registry)
        registered = [(i, name, gid, tx) for i, name, gid in rows] + [(tx, None, uuid_to_gid(event), tx)]
        event_row = (tx, bytes.fromhex(r["event_hash"]), text, r["operation_id"],
                     bytes.fromhex(rh) if rh is not None else None)
        self.registry.register(event, registered, event_row, r["operation_id"])
        self.next_id = tx + 1  # written once, by flush(), before the final checks
        self.times.append((tx, at, origin))
        if len(self.times) >= TIMES_BATCH:
            self.flush()
        self.receipts += 1
        self.last_event = event
        if self.proof is not None:
            self.proof.receipt(event, tx, r["created"], r["event_data"])

    def fact(self, f) -> None:
        self.registry.write()
        if not isinstance(f, list) or len(f) != 6:
            raise refused_stream("a fact must be [entity, attribute, value, tag, tx_event, rx_event]")
        e_sel, attr, raw, tag, tx_event, rx_event = f
        e = self.resolve(e_sel)
        a = self.known.identity(("attribute", attr)) if type(attr) is str else None
        if a is None:
            if not isinstance(attr, str):
                raise refused_stream(f"fact attribute {attr!r} must be an attribute name")
            check_attribute_name(attr)
            a = self.cat.id_by_name(attr)
            if a is None:
                raise NotFound(f"attribute {attr!r} is not created by any receipt", "the snapshot is incomplete")
            self.known.remember(("attribute", attr), a)
        if not isinstance(tag, str) or tag not in values.LOGICAL_TYPES:
            raise refused_stream(f"unknown tag {tag!r}")
        decoded = values.from_tagged(raw, tag)
        if isinstance(decoded, RefWire):
            decoded = values.Value(values.TAG_REF, self.resolve(decoded.selector), None)
        tx = self.event_tx(tx_event)
        rx = None if rx_event is None else self.retracting_tx(rx_event, tx)
        if rx is not None and rx <= tx:
            raise Conflict("snapshot retraction event is not later than the assertion", "the snapshot was altered")
        if self.next_fact_id is None:
            self.next_fact_id = self.conn.execute(
                "SELECT max((SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'fgraph_facts'), "
                "(SELECT coalesce(max(id), 0) FROM fgraph_facts))").fetchone()[0] + 1
        fact_id = self.next_fact_id
        self.next_fact_id += 1
        self.pending.append((fact_id, e, a, decoded.v, decoded.t, decoded.blob, tx, rx, attr, self.line))
        for held in (decoded.v, decoded.blob):
            if type(held) is str or type(held) is bytes:
                self.pending_bytes += len(held)
        if self.first_fact is None:
            self.first_fact = (fact_id, self.line)
        self.facts += 1
        if self.proof is not None:
            self.proof.fact(fact_id, e, a, tx, rx, decoded, f, self.encoded)
        if len(self.pending) >= RESTORE_BATCH_ROWS or self.pending_bytes >= BATCH_BYTES:
            self.write_facts()

    def write_facts(self) -> None:
        """Write the pending fact rows, blobs and full-text rows. A row SQLite refuses (a repeated
        live fact) is reported at its own line: pending facts are written before any later error."""
        pending, self.pending, self.pending_bytes = self.pending, [], 0
        if not pending:
            return
        rows = self.rows
        rows.blobs([(row[3], row[5]) for row in pending if row[5] is not None and row[4] in INDIRECT_TAGS])
        try:
            rows.facts_with_ids(row[:5] + row[6:8] for row in pending)
        except apsw.ConstraintError:
            written = self.conn.execute("SELECT coalesce(max(id), 0) FROM fgraph_facts").fetchone()[0]
            refused = pending[max(0, written + 1 - pending[0][0])]
            raise RowRefused(FormatError(
                f"the {refused[8]} fact repeats an earlier fact of the same entity, value and event",
                "the snapshot was altered; restore an unmodified one").at_line(refused[9])) from None
        rows.index_facts([(row[0], row[3] if row[4] == values.TAG_TEXT else row[5]) for row in pending
                          if row[7] is None and row[4] in FTS_TAGS])

    def resolve(self, sel) -> int:
        key = selector_key(sel)
        found = self.known.identity(key)
        if found is not None:
            return found
        if isinstance(sel, str):
            found = self.cat.id_by_name(sel)
        elif isinstance(sel, dict) and set(sel) == {"eid"}:
            found = self.cat.id_by_gid(uuid_to_gid(check_event_uuid(sel["eid"], "eid")))
        else:
            raise refused_stream(f"selector {sel!r} must be a name or {{\"eid\": uuid}}")
        if found is None:
            raise NotFound(f"identity {sel!r} is not created by any receipt", "the snapshot is incomplete")
        self.known.remember(key, found)
        return found

    def retracting_tx(self, event, tx: int) -> int:
        """The transaction of a fact's retracting event (the fact asserted by ``tx``): a proved
        transaction from the caches or the window when it is there, else ``event_tx``."""
        found = self.known.event(event)
        if found is None and type(event) is str:
            found = self.window.at(tx).get(event)
        return found if found is not None else self.event_tx(event, missing=Conflict)

    def event_tx(self, event, missing=NotFound) -> int:
        found = self.known.event(event)
        if found is not None:
            return found
        check_event_uuid(event, "fact event")
        gid = uuid_to_gid(event)
        found = self.known.transaction_of(gid) or self.cat.id_by_gid(gid)  # one query for a transaction
        if found is None or not self.cat.is_transaction(found):
            raise missing(f"event {event} has no receipt in this snapshot", "the snapshot is incomplete or altered")
        self.known.remember_event(event, found, ahead=missing is NotFound)  # asserting events come in order
        return found

    # -- footer ---------------------------------------------------------------------
    def flush(self) -> None:
        """Write what is kept in memory between receipts: the allocator and the receipts' times."""
        if self.next_id is not None:
            self.rows.next_id(self.next_id)
        self.conn.executemany("INSERT INTO temp.restore_times (tx, at, origin) VALUES (?, ?, ?)", self.times)
        self.times.clear()

    def finish(self) -> None:
        self.registry.write()
        self.write_facts()
        self.flush()
        footer = self.footer
        if not FOOTER_KEYS <= set(footer) or not isinstance(footer["sha256"], str):
            raise refused_stream("the footer must be {facts, fgraph: end, receipts, sha256}")
        if footer["sha256"] != self.digest.hexdigest():
            raise Conflict("the snapshot digest does not match its records",
                           "the file was altered or damaged; take a new snapshot")
        for key, count in self.counted.items():
            n = footer[key]
            if not is_strict_int(n) or n != count:
                raise refused_stream(f"the footer says {n!r} {key} but the stream has {count}")
        if self.deferred is not None:
            raise self.deferred
        if self.header["basis"] != self.last_event:
            raise Conflict(f"the header basis {self.header['basis']} is not the last receipt's event",
                           "the snapshot was altered; take a new snapshot")
        bad = self.conn.execute(
            "SELECT r.tx, f.v IS NULL FROM temp.restore_times r "
            "LEFT JOIN fgraph_facts f INDEXED BY fgraph_hist ON f.e = r.tx AND f.a = ? AND f.tx = r.tx "
            "LEFT JOIN fgraph_facts i INDEXED BY fgraph_hist ON i.e = r.tx AND i.a = ? AND i.tx = r.tx "
            "WHERE f.v IS NOT r.at OR coalesce(i.v, f.v) IS NOT r.origin LIMIT 1", (A_AT, A_IMPORTED_AT)).fetchone()
        if bad is not None and bad[1]:
            raise NotFound(f"transaction {bad[0]} has no fgraph/at fact", "the snapshot is incomplete")
        if bad is not None:
            raise Conflict(f"transaction {bad[0]}: receipt times disagree with its facts",
                           "the snapshot was altered; restore an unmodified one")

    # -- decision 7: facts agree with the events that wrote them ---------------------
    def contradiction(self, problems) -> None:
        """Every fact is checked against the payloads of the events that asserted and retracted it
        by the final doctor's one pass (two fact cursors beside the events, not a lookup per fact);
        its first disagreeing fact is reported as the record that failed."""
        for problem in problems:
            detail = getattr(problem, "detail", None)
            if getattr(problem, "kind", None) == "agreement" and detail:
                error = Conflict(f"a {detail['attribute']} fact disagrees with the event that {detail['side']} it",
                                 "the snapshot was altered; restore an unmodified one")
                if self.first_fact is not None:
                    error = error.at_line(self.first_fact[1] + detail["fact"] - self.first_fact[0])
                raise error


def restore(conn, source, *, final_check, on_record=None, reduced_check=None) -> dict:
    """Restore ``source`` (text, bytes, a binary file or lines) into this pristine store.

    ``final_check(conn)`` runs inside the write transaction before COMMIT and returns a
    doctor diagnosis (or its report): the caller passes ops' full doctor (streams may not
    import ops). Its agreement finding is decision 7's cross-check, reported as a Conflict at
    the line of the first contradicting fact.

    ``reduced_check`` (ops' ``fgraph.ops.doctor.restored``), when given, lets restore prove as the
    stream goes by what the final doctor would read again (``fgraph.streams.restore.proof``): its ``before(conn)``
    checks the pristine destination, its ``after(conn)`` the few set-wide rules left at the end,
    and ``final_check`` then runs only when something was not proved, to decide the outcome
    and its message exactly as without ``reduced_check``.
    """
    # The receipts' times wait in a temporary table until the facts arrive: a small cache for it
    # keeps memory flat (it spills to the temporary file instead of growing with the stream).
    saved = size_temp_cache(conn, TEMP_CACHE_KIB)
    try:
        return _restore(conn, source, final_check=final_check, on_record=on_record, reduced_check=reduced_check)
    finally:
        if saved is not None:
            size_temp_cache(conn, saved)


def _restore(conn, source, *, final_check, on_record, reduced_check) -> dict:
    try:
        with write_transaction(conn):
            restorer = Restorer(conn, reduced_check)
            try:
                return _restore_records(conn, restorer, source, final_check=final_check, on_record=on_record)
            except FgraphError:
                restorer.write_facts()     # a fact row refused before this error is the one to report
                raise
            finally:
                if restorer.proof is not None:
                    restorer.proof.close()
    except RowRefused as refused:
        raise refused.error from None


def _restore_records(conn, restorer, source, *, final_check, on_record) -> dict:
    done = False
    for number, line in iter_lines(source, max_bytes=MAX_LINE_BYTES):
        if done:
            raise refused_stream("a record follows the footer").at_line(number)
        try:
            raw = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
            if len(raw.rstrip(b"\r")) > MAX_LINE_BYTES:
                raise TooLarge(f"the line is over {MAX_LINE_BYTES} bytes", "snapshot lines are capped")
            parsed = parse_line(raw)  # a line that is its record's canonical bytes needs no second encoding
            if parsed is None:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise not_utf8(number, source, "snapshot") from None
                parsed = loads(text), None
            done = restorer.record(parsed[0], number, parsed[1])
            footer_line = number
        except FgraphError as exc:
            raise exc.at_line(number) from None
        if on_record is not None:
            on_record()
    if restorer.header is None or not done:
        raise refused_stream("the stream ends without a footer (empty or truncated)")
    try:
        restorer.finish()
    except FgraphError as exc:
        raise exc.at_line(footer_line) from None
    basis = restorer.cat.latest_tx()
    proved = restorer.proof is not None and restorer.proof.finish()  # closes its cursor before the DROP
    conn.execute("DROP TABLE temp.restore_times")
    if proved and restorer.reduced_check.after(conn):
        return {"basis_tx": basis, "ok": True}
    checked = final_check(conn)
    restorer.contradiction(getattr(checked, "problems", ()))
    report = getattr(checked, "report", checked)
    if not report["ok"]:
        raise FormatError(f"the restored database fails doctor: {report['problems']!r}",
                          "the snapshot is inconsistent; nothing was restored")
    return {"basis_tx": basis, "ok": True}
