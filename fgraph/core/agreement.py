"""The rules of decision 7: a fact agrees with the events that asserted and retracted it.

Shared by doctor's walks (``fgraph.ops.doctor.agreement``) and by restore, which checks each
fact as it streams in (``fgraph.streams.restore.proof``): both feed these functions the
same stored row, so both give the same answer for it.

A fact is given as the row ``(tx, e, a, v, t, en, eg, an, blob, vn, vg, id)``: its asserting
(or retracting) transaction, its columns, the entity's name or gid, the attribute's name, the
blob of an indirect value and a ref value's name or gid. It is rendered as its snapshot
renders it and compared as canonical bytes with the payload's items. A payload that is
redacted, unparsable or malformed proves nothing (its sets are None) and is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from fgraph.core import values
from fgraph.core.canonical import dumps, format_float
from fgraph.core.errors import FgraphError
from fgraph.core.genesis import A_AT, A_BY, A_EXCISED, A_IMPORTED_AT, A_META, A_SOURCE
from fgraph.core.limits import EVENT_KEYS

if TYPE_CHECKING:
    from fgraph.core.types import JSON, JSONObject

    # A stored fact as these rules take it: (tx, e, a, v, t, en, eg, an, blob, vn, vg, id).
    AgreementRow = tuple[int, int, int, Any, int, str | None, bytes | None, str | None, Any, str | None,
                         bytes | None, int]

EXCISION_KEYS = frozenset({"asserted", "at", "created", "event", "fgraph", "redacted", "redacts", "retracted"})
UNKNOWN: Any = object()   # typed Any: it stands in for each of Payload's parts until that part is built
_TEXT, _INT, _FLOAT = values.TAG_TEXT, values.TAG_INT, values.TAG_FLOAT


class Payload:
    """One event's parsed payload, parsed once for both sides; ``None`` parts mean "proves nothing"."""

    __slots__ = ("text", "_doc", "_asserting", "_retracting")
    text: str | bytes | None
    _doc: JSONObject | None
    _asserting: dict[str | int, Any] | None
    _retracting: list[Any] | None

    def __init__(self, text: str | bytes | None) -> None:
        self.text = text
        self._doc = self._asserting = self._retracting = UNKNOWN

    def doc(self) -> JSONObject | None:
        """The payload as a well-formed event object, or None (redacted, unparsable, malformed)."""
        if self._doc is UNKNOWN:
            try:
                doc = orjson.loads(self.text) if isinstance(self.text, str) else None
            except orjson.JSONDecodeError:
                doc = None
            self._doc = doc if isinstance(doc, dict) and well_formed(doc) else None
        return self._doc

    def asserting(self) -> dict[str | int, Any] | None:
        """Sets of the asserting side, all built at once: a payload whose facts cannot be keyed proves nothing."""
        if self._asserting is UNKNOWN:
            doc, self._asserting = self.doc(), None
            if doc is not None:
                try:
                    self._asserting = {
                        "asserted": keys(doc["asserted"]), "tx_facts": keys(doc.get("tx_facts", ())),
                        "excision": "redacts" in doc,
                        A_BY: key([doc["by"]]) if "by" in doc else None,
                        A_SOURCE: key([doc["source"]]) if "source" in doc else None,
                        A_META: key([{"json": doc["meta"]}]) if "meta" in doc else None}
                except (FgraphError, TypeError, ValueError):
                    pass
        return self._asserting

    def retracting(self) -> list[Any] | None:
        """The retracted set, and the replaced (entity, attribute) pairs built on first use."""
        if self._retracting is UNKNOWN:
            doc, self._retracting = self.doc(), None
            if doc is not None:
                try:
                    self._retracting = [keys(doc["retracted"]), None, doc]
                except (FgraphError, TypeError, ValueError):
                    pass
        return self._retracting


def asserting_agrees(row: AgreementRow, sets: dict[str | int, Any]) -> bool:
    """The fact is listed by its asserting event (``sets``: ``Payload.asserting()``). A
    transaction's own facts are its receipt (time, provenance, ``tx_facts``), not ``asserted``."""
    tx, e, a, v, t, en, eg, an, blob, vn, vg, _ = row
    try:
        if e != tx:
            return fact_key(en, eg, an, v, t, blob, vn, vg) in sets["asserted"]
        if a in (A_AT, A_IMPORTED_AT):
            return True
        if a == A_EXCISED and sets["excision"]:
            return True
        if a in (A_BY, A_SOURCE, A_META):
            listed: bytes | None = sets[a]   # the event's by, source or meta (None: it has none)
            return key([render(t, v, blob, vn, vg)]) == listed
        return key([an, render(t, v, blob, vn, vg), values.logical_name(t)]) in sets["tx_facts"]
    except (FgraphError, ValueError):  # stored bytes that do not decode; a bug (TypeError …) is raised
        return False


def retracting_agrees(row: AgreementRow, sets: list[Any]) -> bool:
    """The fact is retracted by its retracting event (``sets``: ``Payload.retracting()``): listed
    in ``retracted``, or replaced by an assertion of the same (entity, attribute)."""
    _, e, a, v, t, en, eg, an, blob, vn, vg, _ = row
    try:
        if fact_key(en, eg, an, v, t, blob, vn, vg) in sets[0]:
            return True
        return key([en if en is not None else {"eid": uuid_text(eg)}, an]) in replaced(sets)
    except (FgraphError, ValueError):
        return False


def replaced(sets: list[Any]) -> set[bytes]:
    """The (entity, attribute) pairs a retracting event asserts anew, built on first use."""
    if sets[1] is None:
        sets[1] = {key(x[:2]) for x in sets[2]["asserted"] if isinstance(x, list)}
    pairs: set[bytes] = sets[1]
    return pairs


def first_disagreement(asserted: tuple[int, int] | None, retracted: tuple[int, int] | None) -> JSONObject | None:
    """The disagreeing fact with the lowest id (its snapshot line comes first), given each side's
    first ``(fact id, attribute)``, and which event it contradicts (the asserting one first)."""
    found = [(first[0], side, first[1]) for first, side in ((asserted, 0), (retracted, 1)) if first is not None]
    if not found:
        return None
    fact, side, attribute = min(found)
    return {"fact": fact, "attribute": attribute, "side": "retracted" if side else "asserted"}


def fact_key(en: str | None, eg: bytes | None, an: str | None, v: Any, t: int, blob: Any, vn: str | None,
             vg: bytes | None) -> bytes:
    """Canonical bytes of ``[selector, attribute, value, tag]``; text, int and float without a scan."""
    selector = en if en is not None else {"eid": uuid_text(eg)}
    if t == _TEXT or t == _INT:
        try:
            return orjson.dumps([selector, an, v, "text" if t == _TEXT else "int"])
        except orjson.JSONEncodeError:
            pass
    elif t == _FLOAT and type(v) is float:
        return orjson.dumps([selector, an, orjson.Fragment(format_float(v)), "float"])
    return key([selector, an, render(t, v, blob, vn, vg), values.logical_name(t)])


def render(t: int, v: Any, blob: Any, vn: str | None, vg: bytes | None) -> JSON:
    """A stored value's wire form, a ref given by its target's name or gid."""
    return values.render(t, v, blob, lambda _: vn if vn is not None else {"eid": uuid_text(vg)})


_DIRECT_TAGS = frozenset({"text", "int", "bool", "ref", "instant", "bytes"})  # no float can occur in these


def keys(items: Iterable[JSON]) -> set[bytes]:
    """The canonical bytes of each fact tuple of a payload list."""
    found: set[bytes]
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


def key(item: JSON) -> bytes:
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


def uuid_text(gid: object) -> str | None:
    if not isinstance(gid, bytes) or len(gid) != 16:
        return None
    h = gid.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def well_formed(doc: JSONObject) -> bool:
    """An event object with the required fields of their types, and no key an event cannot have."""
    keys_ = doc.keys()
    return (type(doc.get("at")) is int and type(doc.get("asserted")) is list and type(doc.get("created")) is list
            and type(doc.get("retracted")) is list and (keys_ <= EVENT_KEYS or keys_ == EXCISION_KEYS))
