"""Facts agree with their events: every fact is listed by the event that asserted it, and by
the event that retracted it (our addition to spec 06 §3.3; restore checks the same, decision 7).

Driven by the event pass of ``payloads``, which reads every payload once in transaction order:
two fact cursors walk beside it, one in fact-id order (the order of the asserting
transactions) and one in ``rx`` order, so each payload is parsed once for both and no fact
asks for its event with a query of its own. A fact found out of that order (only on a damaged
file) looks its event up. Memory holds one payload's sets.

Facts are rendered as their snapshot renders them (selectors joined in SQL) and compared as
canonical bytes; redacted payloads prove nothing and are skipped.
"""

from __future__ import annotations

import orjson

from fgraph.core import values
from fgraph.core.canonical import dumps, format_float
from fgraph.core.errors import FgraphError
from fgraph.core.genesis import A_AT, A_BY, A_EXCISED, A_IMPORTED_AT, A_META, A_SOURCE
from fgraph.core.limits import EVENT_KEYS, GENESIS_TX
from fgraph.core.payload import payload_bytes, stored_text

_COLUMNS = ("SELECT {0}, f.e, f.a, f.v, f.t, ie.name, ie.gid, ia.name, b.data, iv.name, iv.gid, f.id "
            "FROM fgraph_facts f LEFT JOIN fgraph_ids ie ON ie.id = f.e LEFT JOIN fgraph_ids ia ON ia.id = f.a "
            "LEFT JOIN fgraph_ids iv ON f.t = 0 AND iv.id = f.v "
            "LEFT JOIN fgraph_blobs b ON f.t IN (7, 8, 9) AND b.hash = f.v ")
# A transaction's own fgraph/at and fgraph/imported-at are its receipt, not listed by its event:
# skipped in SQL (one in four facts of a typical store).
ASSERTED = _COLUMNS.format("f.tx") + (f"WHERE f.tx > {GENESIS_TX} AND NOT (f.e = f.tx AND f.a IN "
                                      f"({A_AT}, {A_IMPORTED_AT})) ORDER BY f.id")
RETRACTED = _COLUMNS.format("f.rx") + f"WHERE f.rx IS NOT NULL AND f.tx > {GENESIS_TX} ORDER BY f.rx"
EXCISION_KEYS = frozenset({"asserted", "at", "created", "event", "fgraph", "redacted", "redacts", "retracted"})
UNKNOWN = object()
_AFTER_ALL = float("inf")
_TEXT, _INT, _FLOAT = values.TAG_TEXT, values.TAG_INT, values.TAG_FLOAT


class Payload:
    """One event's parsed payload, parsed once for both walks; ``None`` parts mean "proves nothing"."""

    __slots__ = ("text", "_doc", "_asserting", "_retracting")

    def __init__(self, text):
        self.text = text
        self._doc = self._asserting = self._retracting = UNKNOWN

    def doc(self):
        """The payload as a well-formed event object, or None (redacted, unparsable, malformed)."""
        if self._doc is UNKNOWN:
            try:
                doc = orjson.loads(self.text) if isinstance(self.text, str) else None
            except orjson.JSONDecodeError:
                doc = None
            self._doc = doc if isinstance(doc, dict) and well_formed(doc) else None
        return self._doc

    def asserting(self):
        """Sets of the asserting side, all built at once: a payload whose facts cannot be keyed proves nothing."""
        if self._asserting is UNKNOWN:
            doc, self._asserting = self.doc(), None
            if doc is not None:
                try:
                    self._asserting = {
                        "asserted": _keys(doc["asserted"]), "tx_facts": _keys(doc.get("tx_facts", ())),
                        "excision": "redacts" in doc,
                        A_BY: key([doc["by"]]) if "by" in doc else None,
                        A_SOURCE: key([doc["source"]]) if "source" in doc else None,
                        A_META: key([{"json": doc["meta"]}]) if "meta" in doc else None}
                except (FgraphError, TypeError, ValueError):
                    pass
        return self._asserting

    def retracting(self):
        """The retracted set, and the replaced (entity, attribute) pairs built on first use."""
        if self._retracting is UNKNOWN:
            doc, self._retracting = self.doc(), None
            if doc is not None:
                try:
                    self._retracting = [_keys(doc["retracted"]), None, doc]
                except (FgraphError, TypeError, ValueError):
                    pass
        return self._retracting


class FactWalk:
    """One cursor of facts (asserting or retracting side) consumed up to each event of the pass."""

    def __init__(self, c, asserting: bool):
        self.c, self.asserting = c, asserting
        self.bad = 0
        self.first: tuple | None = None  # (fact id, attribute name) of the lowest disagreeing fact id
        self.rows = c.conn.cursor().execute(ASSERTED if asserting else RETRACTED)
        self.pending = next(self.rows, None)

    def upto(self, tx, payload: Payload | None = None) -> None:
        """Check every pending fact of a transaction ≤ ``tx``; ``payload`` is ``tx``'s, when at hand."""
        row = self.pending
        while row is not None and row[0] <= tx:
            current = row[0]
            if payload is None or current != tx:  # out of transaction order: only on a damaged file
                found = self.c.one(f"SELECT {payload_bytes()} FROM fgraph_events WHERE tx = ?", (current,))
                event = Payload(stored_text(found[0]) if found is not None else None)
            else:
                event = payload
            sets = event.asserting() if self.asserting else event.retracting()
            check = self.asserted if self.asserting else self.retracted
            while row is not None and row[0] == current:
                if sets is not None and not check(row, sets):
                    self.bad += 1
                    if self.first is None or row[11] < self.first[0]:
                        self.first = (row[11], row[7])
                row = next(self.rows, None)
        self.pending = row

    def finish(self) -> int:
        self.upto(_AFTER_ALL)
        return self.bad


    @staticmethod
    def asserted(row, sets: dict) -> bool:
        tx, e, a, v, t, en, eg, an, blob, vn, vg, _ = row
        try:
            if e != tx:
                return fact_key(en, eg, an, v, t, blob, vn, vg) in sets["asserted"]
            if a in (A_AT, A_IMPORTED_AT):
                return True
            if a == A_EXCISED and sets["excision"]:
                return True
            if a in (A_BY, A_SOURCE, A_META):
                return key([_render(t, v, blob, vn, vg)]) == sets[a]
            return key([an, _render(t, v, blob, vn, vg), values.logical_name(t)]) in sets["tx_facts"]
        except (FgraphError, ValueError):  # stored bytes that do not decode; a bug (TypeError …) is raised
            return False

    @staticmethod
    def retracted(row, sets: list) -> bool:
        _, e, a, v, t, en, eg, an, blob, vn, vg, _ = row
        try:
            if fact_key(en, eg, an, v, t, blob, vn, vg) in sets[0]:
                return True
            if sets[1] is None:
                sets[1] = {key(x[:2]) for x in sets[2]["asserted"] if isinstance(x, list)}
            return key([en if en is not None else {"eid": uuid_text(eg)}, an]) in sets[1]
        except (FgraphError, ValueError):
            return False


def first_disagreement(asserted: tuple | None, retracted: tuple | None) -> dict | None:
    """The disagreeing fact with the lowest id (its snapshot line comes first), given each walk's
    first ``(fact id, attribute)``, and which event it contradicts (the asserting one first)."""
    found = [(first[0], side, first[1]) for first, side in ((asserted, 0), (retracted, 1)) if first is not None]
    if not found:
        return None
    fact, side, attribute = min(found)
    return {"fact": fact, "attribute": attribute, "side": "retracted" if side else "asserted"}


def fact_key(en, eg, an, v, t, blob, vn, vg) -> bytes:
    """Canonical bytes of ``[selector, attribute, value, tag]``; text, int and float without a scan."""
    selector = en if en is not None else {"eid": uuid_text(eg)}
    if t == _TEXT or t == _INT:
        try:
            return orjson.dumps([selector, an, v, "text" if t == _TEXT else "int"])
        except orjson.JSONEncodeError:
            pass
    elif t == _FLOAT and type(v) is float:
        return orjson.dumps([selector, an, orjson.Fragment(format_float(v)), "float"])
    return key([selector, an, _render(t, v, blob, vn, vg), values.logical_name(t)])


def _render(t, v, blob, vn, vg):
    return values.render(t, v, blob, lambda _: vn if vn is not None else {"eid": uuid_text(vg)})


_DIRECT_TAGS = frozenset({"text", "int", "bool", "ref", "instant", "bytes"})  # no float can occur in these


def _keys(items) -> set:
    found, direct = set(), orjson.dumps
    for x in items:
        try:
            if len(x) > 1 and x[-1] in _DIRECT_TAGS and type(x) is list:
                found.add(direct(x))
                continue
        except (TypeError, KeyError, orjson.JSONEncodeError):
            pass
        found.add(key(values.as_stored_tuple(x)))
    return found


def key(item) -> bytes:
    """Canonical bytes of a fact tuple; orjson alone where no float can occur (its escapes are
    canonical), a float spliced in its canonical text."""
    if isinstance(item, list) and item:
        tag = item[-1]
        if tag == "float" and len(item) >= 2 and type(item[-2]) is float:
            try:
                return orjson.dumps([*item[:-2], orjson.Fragment(format_float(item[-2])), "float"])
            except (orjson.JSONEncodeError, FgraphError):
                pass
        elif tag not in ("float", "vector", "json") and not (len(item) == 1 and isinstance(item[0], dict)):
            try:
                return orjson.dumps(item)
            except orjson.JSONEncodeError:
                pass
    return dumps(item).encode("utf-8")


def uuid_text(gid) -> str | None:
    if not isinstance(gid, bytes) or len(gid) != 16:
        return None
    h = gid.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def well_formed(doc: dict) -> bool:
    keys = doc.keys()
    return (type(doc.get("at")) is int and type(doc.get("asserted")) is list and type(doc.get("created")) is list
            and type(doc.get("retracted")) is list and (keys <= EVENT_KEYS or keys == EXCISION_KEYS))
