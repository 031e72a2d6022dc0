"""Excisions that travel (issue 33, decision F1 in docs/forgetting.md).

A store's excision event says only which events it redacted; what was excised is the
``fgraph/excised`` fact on its transaction. ``describe`` reads both into the *excision record*
(``excision/1``), the one thing that carries an excision from a store to the stores that sync
from it. It is never an event/1 line: the published runtime keeps refusing redacted streams.

A receiver carries the record out with ``carry_out``: the same excision of its own data, under
the operation id ``fgraph-sync-excise:<origin>`` where ``origin`` is the first excision's event
UUID. A store that received an excision keeps that operation id, so the record it passes on
names the same origin, and a store reached along two paths (directly and through a hub) excises
once. Before carrying one out the receiver notes it in ``<db>.excisions-owed``, removed once the
excision and its scrub are done; ``doctor`` reports a note still there.

``remainder_line`` renders what is still in a store of a redacted event (facts of other entities
it asserted or retracted, identities it created that were not excised) as an ordinary event/1
line with a UUID derived from the redacted one: what a receiver that never had the event can
still take of it; its ``meta`` names the event it remains of (``{"remainder_of": uuid}``, with the
event's own meta under ``remainder_of_meta``). The erased content is never rebuilt: it is not in the
store any more. ``StandIns`` keeps a store from taking an event and its remainder both.
"""

from __future__ import annotations

import json
import time

from fgraph.core.canonical import dumps, loads
from fgraph.core.catalog import Catalog
from fgraph.core.errors import Conflict, FgraphError, FormatError, NotFound
from fgraph.core.files import read_sidecar, refuse_unsafe_target, write_atomically
from fgraph.core.sidecars import OWED_FORMAT, OWED_NOTE, marker_document, remove_marker
from fgraph.core import values
from fgraph.core.genesis import A_AT, A_BY, A_EXCISED, A_IMPORTED_AT, A_META, A_SOURCE
from fgraph.core.identity import anonymous_eid, check_event_uuid, gid_to_uuid, uuid_to_gid
from fgraph.core.limits import GENESIS_TX, MEMORY
from fgraph.core.payload import payload_bytes, verified_text
from fgraph.core.session import WriteSession

RECORD_FORMAT = "excision/1"
OPERATION_PREFIX = "fgraph-sync-excise:"
OWED_SUFFIX = OWED_NOTE   # the note's name and format: fgraph.core.sidecars
RECORD_KEYS = {"at", "chain", "event", "event_hash", "fgraph", "origin", "partial", "prev", "redacts", "target"}
#: keys a record may carry besides: ``erase_name`` (decision F5 in docs/forgetting.md) is in every record
#: whose target is an eid, and absent from records published before it
OPTIONAL_KEYS = {"erase_name"}


def operation_for(origin: str) -> str:
    """The receiver's operation id for the excision first made as event ``origin``."""
    return OPERATION_PREFIX + origin


def _tx_of(cat: Catalog, event: str) -> int | None:
    return cat.id_by_gid(uuid_to_gid(event))


def _uuid_of(cat: Catalog, tx: int) -> str:
    return gid_to_uuid(cat.gid_of(tx))


def _previous_event(conn, cat: Catalog, tx: int) -> str | None:
    row = conn.execute("SELECT max(tx) FROM fgraph_events WHERE tx < ? AND tx > ?", (tx, GENESIS_TX)).fetchone()
    return None if row[0] is None else _uuid_of(cat, row[0])


def is_excision_line(line: str) -> bool:
    """Is an event/1 line a redacted stub or an excision event (the two that apply refuses)?"""
    if '"redacted":true' not in line:
        return False
    try:
        record = loads(line)
    except FgraphError:
        return False
    return isinstance(record, dict) and record.get("redacted") is True


def describe(conn, event: str) -> dict:
    """The excision record of this store's excision event ``event``."""
    cat = Catalog(conn)
    tx = _tx_of(cat, check_event_uuid(event))
    row = None if tx is None else conn.execute(
        f"SELECT {payload_bytes()}, event_hash, operation_id FROM fgraph_events WHERE tx = ?", (tx,)).fetchone()
    excised = None if tx is None else conn.execute(
        "SELECT v FROM fgraph_facts WHERE e = ? AND a = ? AND t = 0", (tx, A_EXCISED)).fetchone()
    if row is None or excised is None or row[0] is None:
        raise NotFound(f"event {event} is not an excision of this store", "name an excision event's UUID")
    document = loads(verified_text(tx, row[0], row[1]))
    x = excised[0]
    name = cat.name_of(x)
    target = name if name is not None else {"eid": gid_to_uuid(cat.gid_of(x))}
    unnamed = {} if name is not None else {"erase_name": True}   # a receiver may know it by a name
    operation = row[2] or ""
    origin = operation[len(OPERATION_PREFIX):].split(":")[0] if operation.startswith(OPERATION_PREFIX) else event
    chain, partial = {}, []
    for uuid in document["redacts"]:
        redacted = _tx_of(cat, uuid)
        if redacted is None:
            continue
        chain[uuid] = _previous_event(conn, cat, redacted)
        if _has_remainder(conn, redacted):
            partial.append(uuid)
    return {"at": document["at"], "chain": chain, "event": event, "event_hash": bytes(row[1]).hex(),
            "fgraph": RECORD_FORMAT, "origin": origin, "partial": partial, "prev": _previous_event(conn, cat, tx),
            "redacts": document["redacts"], "target": target, **unnamed}


def check_record(record) -> dict:
    """An excision record as it arrives from a log: every field of the right shape, or FormatError."""
    ok = isinstance(record, dict) and set(record) - OPTIONAL_KEYS == RECORD_KEYS \
        and record.get("fgraph") == RECORD_FORMAT and record.get("erase_name", True) is True
    try:
        if ok:
            for key in ("event", "origin"):
                check_event_uuid(record[key])
            target = record["target"]
            ok = (isinstance(target, str) and target != "") or (
                isinstance(target, dict) and set(target) == {"eid"} and bool(check_event_uuid(target["eid"])))
            ok = ok and isinstance(record["redacts"], list) and isinstance(record["partial"], list) \
                and isinstance(record["chain"], dict) and set(record["partial"]) <= set(record["redacts"])
            for uuid in record["redacts"] if ok else ():
                check_event_uuid(uuid)
            for uuid, prev in record["chain"].items() if ok else ():
                check_event_uuid(uuid)
                if prev is not None:
                    check_event_uuid(prev)
            ok = ok and (record["prev"] is None or bool(check_event_uuid(record["prev"])))
    except FgraphError:
        ok = False
    if not ok:
        raise FormatError(f"an excision record is damaged: {dumps(record)[:200] if isinstance(record, dict) else record!r}",
                          "the log's excision records are written by `fgraph sync --to URL`; re-publish the store")
    return record


def _has_remainder(conn, tx: int) -> bool:
    """Does anything of transaction ``tx`` survive its redaction: a fact of it other than its own
    transaction facts, a retraction it made, or an entity it created that was not excised?"""
    if conn.execute("SELECT 1 FROM fgraph_facts WHERE (tx = ?1 AND e != ?1) OR rx = ?1 LIMIT 1", (tx,)).fetchone():
        return True
    return conn.execute(
        "SELECT 1 FROM fgraph_ids WHERE created_tx = ?1 AND id != ?1 AND id NOT IN "
        "(SELECT v FROM fgraph_facts WHERE a = ?2 AND t = 0) LIMIT 1", (tx, A_EXCISED)).fetchone() is not None


def remainder_event(event: str) -> str:
    """The UUID of the remainder of redacted event ``event``: the same at every store that makes it,
    so a store reached along two paths takes it once."""
    import uuid
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "fgraph:remainder:" + event))


def remainder_line(conn, event: str) -> str | None:
    """What survives here of this store's redacted event ``event``, as an ordinary event/1 line
    (its *remainder*: the facts of other entities it asserted and retracted, the identities it
    created that were not excised, its provenance and time; with no fact at all when nothing
    survives: the receiver keeps it as the trace that the event was erased, ``StandIns``), or None
    when ``event`` is not a redacted event of this store."""
    cat = Catalog(conn)
    tx = _tx_of(cat, check_event_uuid(event))
    if tx is None or conn.execute("SELECT 1 FROM fgraph_events WHERE tx = ? AND event_data IS NULL",
                                  (tx,)).fetchone() is None:
        return None
    excised = {row[0] for row in conn.execute("SELECT v FROM fgraph_facts WHERE a = ? AND t = 0", (A_EXCISED,))}

    def portable(ident: int):
        name = cat.name_of(ident)
        return name if name is not None else {"eid": gid_to_uuid(cat.gid_of(ident))}

    def item(e, a, v, t):
        blob = cat.blob(v) if t in values.INDIRECT_TAGS else None
        return [portable(e), portable(a), values.render(t, v, blob, portable), values.logical_name(t)]

    document = {"asserted": [], "at": cat.imported_at(tx) or cat.tx_at(tx), "created": [],
                "event": remainder_event(event), "fgraph": "event/1", "meta": {REMAINDER_OF: event},
                "retracted": []}
    used = set()
    for e, a, v, t in conn.execute("SELECT e, a, v, t FROM fgraph_facts WHERE tx = ?1 AND e != ?1 ORDER BY id", (tx,)):
        document["asserted"].append(item(e, a, v, t))
        used.update((e, a) + ((v,) if t == values.TAG_REF else ()))
    for e, a, v, t in conn.execute("SELECT e, a, v, t FROM fgraph_facts WHERE rx = ? ORDER BY id", (tx,)):
        document["retracted"].append(item(e, a, v, t))
    for ident, name in conn.execute("SELECT id, name FROM fgraph_ids WHERE created_tx = ?1 AND id != ?1 ORDER BY id",
                                    (tx,)):
        if ident not in excised and (name is not None or ident in used):
            document["created"].append(portable(ident))
    tx_facts = []
    for a, v, t in conn.execute("SELECT a, v, t FROM fgraph_facts WHERE e = ?1 AND tx = ?1 AND a NOT IN (?2, ?3) "
                                "ORDER BY id", (tx, A_AT, A_IMPORTED_AT)):
        if a in (A_BY, A_SOURCE) and t == values.TAG_TEXT:
            document["by" if a == A_BY else "source"] = v
        elif a == A_META and t == values.TAG_JSON:
            document["meta"][REMAINDER_OF + "_meta"] = loads(v)
        else:
            blob = cat.blob(v) if t in values.INDIRECT_TAGS else None
            tx_facts.append([portable(a), values.render(t, v, blob, portable), values.logical_name(t)])
    if tx_facts:
        document["tx_facts"] = tx_facts
    return dumps(document)


def holds(conn, event: str) -> bool:
    """Does this store hold event ``event`` (whole or as a redacted stub)?"""
    tx = _tx_of(Catalog(conn), check_event_uuid(event))
    return tx is not None and conn.execute("SELECT 1 FROM fgraph_events WHERE tx = ?", (tx,)).fetchone() is not None


REMAINDER_OF = "remainder_of"


class StandIns:
    """The events a store must not take again, since it holds what stands for them: an event whose
    remainder it took (the event itself, arriving later from a store that has not excised yet,
    would bring the erased content back and regress what came after it), and a remainder (its
    ``meta`` names the event it remains of) of an event it holds, whole or redacted."""

    def __init__(self, conn):
        self.conn = conn

    def received_excisions(self) -> bool:
        """Has this store carried out an excision another store sent, or taken a remainder? (A scan
        of the events: asked only to explain a failure.)"""
        return self.conn.execute("SELECT 1 FROM fgraph_events WHERE operation_id GLOB ?1 OR "
                                 "instr(event_data, ?2) > 0 LIMIT 1",
                                 (OPERATION_PREFIX + "*", f'"meta":{{"{REMAINDER_OF}":')).fetchone() is not None

    def covers(self, record: dict) -> bool:
        meta = record.get("meta")
        if type(meta) is dict and type(meta.get(REMAINDER_OF)) is str and holds(self.conn, meta[REMAINDER_OF]):
            return True
        return holds(self.conn, remainder_event(record["event"]))


def _local_target(conn, cat: Catalog, record: dict):
    """The receiver's name or id for the record's target, None when it has no such entity."""
    target = record["target"]
    if isinstance(target, str):
        return target if cat.id_by_name(target) is not None else None
    found = cat.id_by_gid(uuid_to_gid(target["eid"]))
    if found is None and record.get("erase_name"):
        return _erased_name(conn, cat, record)
    return found


def _erased_name(conn, cat: Catalog, record: dict) -> str | None:
    """The receiver's name for a target whose name the source erased (decision F5): the source names
    it by the eid it would have had, derived from the event that created it and its place in that
    event's ``created`` list (03 §7); that event is among the ones the excision redacted, and a
    receiver that holds it whole finds the name at that place. The erased name never travels."""
    gid = uuid_to_gid(record["target"]["eid"])
    for event in record["redacts"]:
        tx = _tx_of(cat, event)
        row = None if tx is None else conn.execute(
            f"SELECT {payload_bytes()}, event_hash FROM fgraph_events WHERE tx = ?", (tx,)).fetchone()
        if row is None or row[0] is None:
            continue
        listed = loads(verified_text(tx, row[0], row[1])).get("created", [])
        first = conn.execute("SELECT min(id) FROM fgraph_ids WHERE created_tx = ?1 AND id != ?1", (tx,)).fetchone()[0]
        for place, selector in enumerate(listed):
            if not isinstance(selector, str) or cat.id_by_name(selector) is None:
                continue
            made_here = cat.identity(cat.id_by_name(selector))[2] == tx
            places = {place} | ({cat.id_by_name(selector) - first} if made_here and first is not None else set())
            if any(anonymous_eid(event, p) == gid for p in places):
                return selector
    return None


def carry_out(session: WriteSession, path: str, record: dict, source: str, allow=None) -> dict:
    """Perform ``record``'s excision on this store; returns where it stands here: ``applied``
    (erased now), ``already_applied`` (an earlier run did; a scrub it owed is finished now),
    ``already_excised`` (erased by another excision), or ``nothing_here``.

    Before anything is erased, ``allow(target, event, tx, imported)`` (when given) is told who
    introduced the target here — the event that created it, its transaction, and whether that
    event came from elsewhere — and raises to refuse (decision T3 in docs/forgetting.md); a target
    this store excised already is not asked about: this store decided it goes.

    Data about the target that arrived after it was erased here (from a store that had not
    carried the excision out yet) is erased again, under ``<operation id>:<n>``."""
    from fgraph.ops import excise as _excise
    conn = session.conn
    operation = operation_for(record["origin"])
    outcome = {"origin": record["origin"], "event": record["event"], "source": source,
               "target": record["target"]}
    cat = Catalog(conn)
    done = cat.operation(operation) is not None
    local = _local_target(conn, cat, record)
    erase_name = record.get("erase_name", False)
    if local is None:
        return {**outcome, "status": "already_applied" if done else "nothing_here"}
    x = local if isinstance(local, int) else cat.id_by_name(local)
    excised = conn.execute("SELECT 1 FROM fgraph_facts WHERE a = ? AND t = 0 AND v = ? LIMIT 1",
                           (A_EXCISED, x)).fetchone() is not None
    named = erase_name and cat.name_of(x) is not None   # excised here before, its name kept: erase it now
    if erase_name:
        local = x   # by id, the same request before and after its name is gone (and no hash of the name)
    if (done or excised) and not _anything_of(conn, x) and not named:
        if not done:
            return {**outcome, "status": "already_excised"}
        report = _excise.excise(session, path, local, operation_id=operation, again=True,  # finishes an owed scrub
                                erase_name=erase_name)
    else:
        if allow is not None and not (done or excised):   # excised here already: what came back goes again (F1)
            allow(record["target"], *introduced_by(cat, x))
        if done:
            operation = _repeat(cat, operation)
        owe(path, record, source)
        report = _excise.excise(session, path, local, operation_id=operation, again=done or excised,
                                erase_name=erase_name)
    scrubbed = report.get("scrub", {"complete": True})
    if scrubbed.get("complete", True):
        settle(path, record["origin"])
    return {**outcome, "status": report["status"], "tx": report["tx"], "scrub_complete": bool(scrubbed.get("complete", True))}


def introduced_by(cat: Catalog, x: int) -> tuple[str, int, bool]:
    """The event that created identity ``x`` here, its transaction, and whether it was applied
    from elsewhere (it carries ``fgraph/imported-at``) rather than written here."""
    created = cat.identity(x)[2]
    return gid_to_uuid(cat.gid_of(created)), created, cat.imported_at(created) is not None


def _repeat(cat: Catalog, operation: str) -> str:
    n = 2
    while cat.operation(f"{operation}:{n}") is not None:
        n += 1
    return f"{operation}:{n}"


def _anything_of(conn, x: int) -> bool:
    """Is any fact left with ``x`` as subject, attribute or ref value (taken after an excision of it)?"""
    return conn.execute("SELECT 1 FROM fgraph_facts WHERE e = ?1 OR a = ?1 OR (t = 0 AND v = ?1 AND a != ?2) LIMIT 1",
                        (x, A_EXCISED)).fetchone() is not None


# -- the owed-excision note --------------------------------------------------------------------
def owed_path(path: str) -> str:
    return path + OWED_SUFFIX


def owed(path: str) -> dict:
    """The excisions this store was told about and has not finished, by origin; a note that is not
    fgraph's own is reported under ``problem``."""
    if path == MEMORY:
        return {}
    try:
        raw = read_sidecar(owed_path(path), "owed-excisions note")
    except FgraphError as exc:
        return {"problem": exc.message}
    if raw is None:
        return {}
    try:
        document = json.loads(raw)
    except ValueError:
        document = None
    if not isinstance(document, dict) or document.get("fgraph") != OWED_FORMAT \
            or not isinstance(document.get("owed"), dict):
        return {"problem": f"{owed_path(path)!r} is not an fgraph owed-excisions note"}
    return document["owed"]


def _write_owed(path: str, entries: dict) -> None:
    note = owed_path(path)
    if not entries:
        remove_marker(note, "owed-excisions note", lambda raw: marker_document(raw, OWED_FORMAT) is not None)
        return
    text = json.dumps({"fgraph": OWED_FORMAT, "owed": entries}, sort_keys=True) + "\n"
    write_atomically(note, text.encode("utf-8"), "owed-excisions note")


def owe(path: str, record: dict, source: str) -> None:
    """Note, durably and before the excision, that ``record`` is owed here."""
    if path == MEMORY:
        return
    refuse_unsafe_target(owed_path(path), "owed-excisions note")
    entries = owed(path)
    if "problem" in entries:   # a file there that is not fgraph's note: never replaced (decision S1)
        raise Conflict(f"{entries['problem']}; the excision was not carried out, nothing was erased",
                       "move that file elsewhere (fgraph never replaces a file it did not write), "
                       "then run the same `fgraph sync` again")
    if record["origin"] in entries:
        return
    entries[record["origin"]] = {"event": record["event"], "operation_id": operation_for(record["origin"]),
                                 "since": time.time(), "source": source, "target": record["target"]}
    _write_owed(path, entries)


def settle(path: str, origin: str) -> None:
    """The excision of ``origin`` is carried out and scrubbed here: drop its note."""
    if path == MEMORY:
        return
    entries = owed(path)
    if "problem" in entries or origin not in entries:
        return
    del entries[origin]
    _write_owed(path, entries)
