"""Excise: erase one entity (or attribute) from the present and from history (spec 07 §2).

Rows are deleted, every event that asserted, retracted or names the target is
redacted (payload NULL, hash kept) and an excision event records which. Then the
file is scrubbed so the erased bytes are gone from disk, not just unreachable:
``secure_delete`` zeroes freed cells, the full-text index is optimised (its old
segments would still hold the words), the file is VACUUMed and the WAL is
checkpointed and truncated. A reader holding the WAL open can delay the last
step; excise then says so and ``scrub.pending`` records it until a later run
completes it.
"""

from __future__ import annotations


from fgraph.ops import scrub
from fgraph.core import values
from fgraph.core.canonical import dumps, loads
from fgraph.core.catalog import Catalog
from fgraph.core.errors import Conflict, NotFound, Unsupported, ValueTypeError
from fgraph.core.genesis import A_AT, A_EXCISED, SYSTEM_MAX
from fgraph.core.identity import anonymous_eid, gid_to_uuid, read_clock, transaction_time, uuid_to_gid
from fgraph.core.limits import GENESIS_TX, INT64_MAX, INT64_MIN
from fgraph.core.names import described
from fgraph.core.payload import payload_bytes, verified_text
from fgraph.core.rows import Rows, event_hash
from fgraph.core.session import WriteSession
from fgraph.core.txn import is_speculating, write_transaction
from fgraph.core.transact import (Request, already_applied_report, check_if_basis_tx,
                                  check_operation_id)

ROW_COLUMNS = "id, e, a, v, t, tx, rx"


def excise_request(ref, operation_id=None, if_basis_tx=None, erase_name: bool = False) -> Request:
    if isinstance(ref, bool) or not isinstance(ref, (str, int)):
        raise ValueTypeError(f"excise target {ref!r} must be a name or an id", "pass the entity's name or id")
    if not isinstance(erase_name, bool):
        raise ValueTypeError(f"erase_name {erase_name!r} is not a boolean", "pass True or False")
    check_operation_id(operation_id)
    check_if_basis_tx(if_basis_tx)
    envelope = {"operation": "excise", "ref": ref}
    if erase_name:   # another request than the published excision of the same ref (decision F5)
        envelope["erase_name"] = True
    return Request([], operation_id=operation_id, if_basis_tx=if_basis_tx, hash_envelope=envelope)


def _target(cat: Catalog, ref, again: bool = False) -> int:
    if isinstance(ref, int):
        found = ref if INT64_MIN <= ref <= INT64_MAX and ref > 0 and cat.identity(ref) else None
    else:
        found = cat.id_by_name(ref)
    if found is None:
        raise NotFound(f"entity {described(ref) if isinstance(ref, str) else repr(ref)} was not found",
                       "excise an existing entity by name or id")
    if found <= SYSTEM_MAX or cat.is_transaction(found):
        raise Unsupported(f"entity {ref!r} is a system or transaction entity and cannot be excised",
                          "excise only application entities and attributes")
    excised = cat.conn.execute("SELECT 1 FROM fgraph_facts WHERE a = ? AND t = 0 AND v = ? AND rx IS NULL LIMIT 1",
                               (A_EXCISED, found)).fetchone()
    if excised is not None and not again:
        raise Conflict(f"entity {ref!r} was already excised under another operation",
                       "retry the original operation id to get its receipt")
    return found


def _doomed_rows(conn, x: int) -> list:
    """Every fact row, live or historical, with e = X, a = X, or a ref value X (but an earlier
    excision's ``fgraph/excised → X``: its audit of what it redacted stays)."""
    return conn.execute(
        f"SELECT {ROW_COLUMNS} FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ? "
        f"UNION SELECT {ROW_COLUMNS} FROM fgraph_facts INDEXED BY fgraph_avet WHERE a = ? "
        f"UNION SELECT {ROW_COLUMNS} FROM fgraph_facts WHERE a IN (SELECT id FROM fgraph_ids WHERE name GLOB '*/*') "
        f"AND t = 0 AND v = ? AND a != {A_EXCISED} ORDER BY 1", (x, x, x)).fetchall()


def _mentions(doc: dict, selector) -> bool:
    """Does an event name the selector in created, tuple positions 0/1, a ref value or tx_facts?"""
    ref = {"ref": selector}
    if selector in doc.get("created", ()):
        return True
    for key in ("asserted", "retracted"):
        for item in doc.get(key, ()):
            if item[0] == selector or item[1] == selector or (item[3] == "ref" and item[2] == ref):
                return True
    return any(item[0] == selector or (item[2] == "ref" and item[1] == ref) for item in doc.get("tx_facts", ()))


def _mentioning_events(conn, selector) -> set[int]:
    """Transactions whose payload names the selector; SQLite's instr() prefilters in C."""
    needle = dumps(selector["eid"]) if isinstance(selector, dict) else dumps(selector)
    found = set()
    for tx, data, stored_hash in conn.execute(
            f"SELECT tx, {payload_bytes()}, event_hash FROM fgraph_events WHERE event_data IS NOT NULL "
            f"AND tx > {GENESIS_TX} AND instr(event_data, ?) > 0", (needle,)):
        if _mentions(loads(verified_text(tx, data, stored_hash)), selector):
            found.add(tx)
    return found


def excise(session: WriteSession, path: str, ref, *, operation_id=None, if_basis_tx=None, again: bool = False,
           erase_name: bool = False) -> dict:
    """``again``: also when the target was excised before (a propagated excision reaching data the
    receiver took after its own excision; fgraph.ops.propagate), never from the faces.
    ``erase_name``: the target's name goes too (decision F5 in docs/forgetting.md): its registry row
    keeps its id but becomes the anonymous identity it would have been, and the receipt names it by
    id; an entity excised before may be excised again for that."""
    conn = session.conn
    request = excise_request(ref, operation_id, if_basis_tx, erase_name)
    req_hash = request.request_hash()
    scrub.enable_secure_delete(conn)
    owed_before = scrub.pending(path) is not None
    try:
        report = _commit(session, path, ref, req_hash, operation_id, if_basis_tx, again, erase_name)
    except BaseException:
        if not owed_before and not is_speculating(conn):
            scrub.forgive(path)  # the marker written before COMMIT belongs to a transaction that never was
        raise
    if report.get("speculative"):
        return report["report"]
    if report["status"] == "already_applied" and scrub.pending(path) is None:
        return report  # a retry after a finished scrub: nothing left to do
    # A retry whose first attempt died before its scrub finished scrubs now.
    report["scrub"] = scrub.scrub(conn, path, report["tx"])
    return report


def _commit(session: WriteSession, path: str, ref, req_hash, operation_id, if_basis_tx, again: bool,
            erase_name: bool) -> dict:
    """The erasing transaction itself; the owed-scrub marker is made durable before it commits."""
    conn = session.conn
    with write_transaction(conn) as txn:
        cat = Catalog(conn)
        latest = cat.latest_tx()
        found = cat.operation(operation_id) if operation_id is not None else None
        if found is not None:
            if found[1] != req_hash:
                raise Conflict(f"operation_id {operation_id!r} was already used for another request",
                               "use a new operation_id for a different request")
            txn.discard()
            report = already_applied_report(cat, found[0])
        else:
            if if_basis_tx is not None and if_basis_tx != latest:
                raise Conflict(f"basis transaction changed from {if_basis_tx} to {latest}",
                               "refresh state and retry the excision")
            report = _write(session, cat, _target(cat, ref, again or erase_name), latest, operation_id, req_hash,
                            erase_name)
            if is_speculating(conn):
                # rolled back with the speculation: nothing reaches the disk to scrub
                return {"speculative": True, "report": report}
            scrub.owe(path, report["tx"])
    return report


def _write(session: WriteSession, cat: Catalog, x: int, latest: int, operation_id, req_hash,
           erase_name: bool = False) -> dict:
    conn = session.conn
    name = cat.name_of(x)
    selector = name if name is not None else {"eid": gid_to_uuid(cat.gid_of(x))}
    unnamed = erase_name and name is not None

    def local(i):
        if unnamed and i == x:
            return x   # the receipt never repeats a name it erases
        return cat.name_of(i) if cat.name_of(i) is not None else i

    tx = cat.next_id()
    event = session.event_factory(tx)
    at = transaction_time(read_clock(session.clock), cat.tx_at(latest))
    rows = _doomed_rows(conn, x)
    retracted, redact, freed = [], set(), set()
    for fact_id, e, a, v, t, ftx, frx in rows:
        blob = cat.blob(v) if t in values.INDIRECT_TAGS else None
        retracted.append({"a": local(a) if a == x else cat.name_of(a), "e": local(e), "id": fact_id, "rx": tx, "tx": ftx,
                          "v": values.render(t, v, blob, local)})
        redact.add(ftx)
        if frx is not None:
            redact.add(frx)
        if t in values.INDIRECT_TAGS:
            freed.add(v)
    redact |= _mentioning_events(conn, selector)
    if unnamed:
        gid = anonymous_gid(conn, cat, x)   # read before the payload that may tell it is redacted
        redact.add(cat.identity(x)[2])  # the event that created it lists the name in `created`
    writer = Rows(conn)
    writer.free_blobs(writer.delete_facts((r[0], r[3], r[4]) for r in rows))
    writer.redact_events(sorted(redact))
    redacts = sorted(gid_to_uuid(cat.gid_of(t)) for t in redact)
    at_id = writer.fact(tx, A_AT, at, values.TAG_INSTANT, None, tx)
    excised_id = writer.fact(tx, A_EXCISED, x, values.TAG_REF, None, tx)
    writer.identities([(tx, None, uuid_to_gid(event), tx)])
    text = dumps({"asserted": [], "at": at, "created": [], "event": event, "fgraph": "event/1", "redacted": True,
                  "redacts": redacts, "retracted": []})
    writer.event(tx, text, event_hash(text), operation_id, req_hash)
    writer.next_id(tx + 1)
    if unnamed:
        writer.unname(x, gid)
    writer.optimize_fts()
    return {"asserted": [
        {"a": "fgraph/at", "e": tx, "id": at_id, "rx": None, "tx": tx, "v": {"instant": values.format_instant(at)}},
        {"a": "fgraph/excised", "e": tx, "id": excised_id, "rx": None, "tx": tx, "v": {"ref": local(x)}}],
        "at": at, "basis_tx": latest, "event": event, "ids": {}, "retracted": retracted, "status": "applied",
        "tx": tx}



def anonymous_gid(conn, cat: Catalog, x: int) -> bytes:
    """The gid named ``x`` would carry had it been created anonymous (03 §7): derived from the event
    that created it and its place in that event's ``created`` list, as doctor (ours and the published
    one) checks every anonymous identity of a redacted event. For an applied event whose ``created``
    lists names that existed here (04 §5.6) the place in the list and among the ids made here differ:
    the list's, when the payload is still here, else the one of the ids; never a gid already taken."""
    created_tx = cat.identity(x)[2]
    event = gid_to_uuid(cat.gid_of(created_tx))
    first = conn.execute("SELECT min(id) FROM fgraph_ids WHERE created_tx = ?1 AND id != ?1", (created_tx,)).fetchone()[0]
    places = [x - first]
    row = conn.execute(f"SELECT {payload_bytes()}, event_hash FROM fgraph_events WHERE tx = ?", (created_tx,)).fetchone()
    if row is not None and row[0] is not None:
        listed = loads(verified_text(created_tx, row[0], row[1])).get("created", [])
        if cat.name_of(x) in listed:
            places.insert(0, listed.index(cat.name_of(x)))
    for place in places:
        gid = anonymous_eid(event, place)
        if cat.id_by_gid(gid) is None:
            return gid
    raise Conflict(f"entity {x} cannot take the anonymous id its creating event gives it: another identity has it",
                   "excise it without --erase-name")
