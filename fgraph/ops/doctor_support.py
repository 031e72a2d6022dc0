"""Doctor's building blocks: SQL fragments, canonical-JSON and blob checkers, the integrity thread.

Kept apart from the checks themselves (``fgraph.ops.doctor``) so each module stays readable.
"""


from __future__ import annotations

import json
import threading
from collections import OrderedDict

import apsw
import orjson

from fgraph.core import values
from fgraph.core.canonical import dumps, format_float, loads
from fgraph.core.errors import FgraphError
from fgraph.core.genesis import A_AT
from fgraph.core.limits import EVENT_KEYS
from fgraph.core.values import TAG_INSTANT

REPORT_KEYS = ("expected_fts_rows", "fts_rows", "fts_rows_rebuilt", "integrity", "ok", "orphaned_blobs",
               "orphaned_blobs_removed", "problems", "repair_needed", "repaired", "schema_problems",
               "shape_violations", "unverifiable_event_hashes")
FTS_DRIFT = "full-text index differs from live text facts"
ORPHANS = "orphaned blobs: "
MAX_LINES = 20
EXCISION_KEYS = frozenset({"asserted", "at", "created", "event", "fgraph", "redacted", "redacts", "retracted"})
VALID_TX = ("EXISTS (SELECT 1 FROM fgraph_events vev WHERE vev.tx = {0}) AND EXISTS (SELECT 1 FROM fgraph_facts vr INDEXED BY "
            f"fgraph_hist WHERE vr.e = {{0}} AND vr.a = {A_AT} AND vr.tx = {{0}} AND vr.t = {TAG_INSTANT} AND vr.rx IS NULL)")
PHYSICAL_OK = """CASE t
  WHEN 0 THEN typeof(v) = 'integer' AND v > 0
  WHEN 1 THEN typeof(v) = 'integer' AND v IN (0, 1)
  WHEN 2 THEN typeof(v) = 'integer'
  WHEN 3 THEN typeof(v) = 'real' AND v BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308
  WHEN 4 THEN typeof(v) = 'text' AND length(CAST(v AS BLOB)) <= 256
  WHEN 5 THEN typeof(v) = 'integer' AND v BETWEEN -62135596800000000 AND 253402300799999999
  WHEN 6 THEN typeof(v) = 'blob' AND length(v) <= 256
  WHEN 10 THEN typeof(v) = 'text' AND fgraph_doctor_json(v)
  WHEN 7 THEN typeof(v) = 'blob' AND length(v) = 32 WHEN 8 THEN typeof(v) = 'blob' AND length(v) = 32
  WHEN 9 THEN typeof(v) = 'blob' AND length(v) = 32 ELSE 1 END"""
FACT_SCAN = f"""SELECT count(*), max(e), max(a), max(tx), max(rx), max(CASE WHEN t = 0 THEN v END), max(id),
  sum(CASE WHEN e <= 0 OR a <= 0 OR tx < 64 OR rx < 64 OR (t = 0 AND v <= 0) THEN 1 ELSE 0 END),
  sum(CASE WHEN rx <= tx THEN 1 ELSE 0 END),
  sum(CASE WHEN t NOT BETWEEN 0 AND 10 OR typeof(t) <> 'integer' THEN 1 ELSE 0 END),
  sum(CASE WHEN {PHYSICAL_OK} THEN 0 ELSE 1 END),
  sum(CASE WHEN rx IS NULL AND t IN (4, 8) THEN 1 ELSE 0 END),
  sum(CASE WHEN t IN (7, 8, 9) AND NOT EXISTS (SELECT 1 FROM fgraph_blobs b WHERE b.hash = v) THEN 1 ELSE 0 END)
FROM fgraph_facts"""
EXPECTED_FTS = ("SELECT f.id, CASE WHEN f.t = 4 THEN f.v ELSE b.data END FROM fgraph_facts f LEFT JOIN fgraph_blobs b "
                "ON f.t = 8 AND b.hash = f.v WHERE f.rx IS NULL AND f.t IN (4, 8)")
ORPHAN_FILTER = "hash NOT IN (SELECT v FROM fgraph_facts WHERE t IN (7, 8, 9))"


def _uuid(gid) -> str | None:
    if not isinstance(gid, bytes) or len(gid) != 16:
        return None
    h = gid.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class CanonicalParser:
    """Parse a JSON text, or return None when it is not exactly canonical (02 §4).

    Float tokens are checked as they are scanned and kept verbatim (orjson Fragments), so one
    sorted orjson dump compared with the text proves key order, escapes and numbers at C speed.
    One parser per thread.
    """

    def __init__(self):
        self.bad = False
        self.decoder = json.JSONDecoder(parse_float=self.number)

    def number(self, token: str):
        if format_float(float(token)) != token:
            self.bad = True
        return orjson.Fragment(token)

    def __call__(self, text: str, any_value: bool = False):
        self.bad = False
        try:
            doc = self.decoder.decode(text)
            same = not self.bad and (any_value or type(doc) is dict) and \
                orjson.dumps(doc, option=orjson.OPT_SORT_KEYS) == text.encode("utf-8")
        except (ValueError, TypeError, RecursionError, orjson.JSONEncodeError, FgraphError):
            return None
        return doc if same else None


def _json_check():
    """SQL function fgraph_doctor_json(v): 1 when a tag-10 value is canonical JSON text."""
    parse = CanonicalParser()

    def check(text) -> int:
        if not isinstance(text, str):
            return 0
        if parse(text, any_value=True) is not None:
            return 1
        try:  # exotic but canonical spellings the fast path cannot prove (e.g. a lone float)
            return int(dumps(loads(text)) == text)
        except FgraphError:
            return 0
    return check


class _BlobCheck:
    """SQL function fgraph_doctor_blob(t, key, data): 1 when key = SHA-256(t ‖ payload) and the payload fits t."""

    def __init__(self):
        self.seen: OrderedDict[tuple, int] = OrderedDict()

    def __call__(self, t, key, data) -> int:
        known = self.seen.get((t, key))
        if known is None:
            known = self.seen[(t, key)] = self.verify(t, key, data)
            if len(self.seen) > 4096:
                self.seen.popitem(last=False)
        return known

    @staticmethod
    def verify(t, key, data) -> int:
        if t == values.TAG_LONG_TEXT and isinstance(data, str):
            try:
                payload = data.encode("utf-8")
            except UnicodeEncodeError:
                return 0
        elif t in (values.TAG_VECTOR, values.TAG_LONG_BYTES) and isinstance(data, bytes):
            payload = data
        else:
            return 0
        if t == values.TAG_VECTOR:
            shape_ok = len(payload) > 0 and len(payload) % 4 == 0
        else:
            shape_ok = values.MAX_INLINE_BYTES < len(payload) <= values.MAX_VALUE_BYTES
        return int(shape_ok and values.indirect_key(t, payload) == key)


def integrity_rows(conn: apsw.Connection) -> list:
    """``PRAGMA integrity_check``; when it cannot even run, ``quick_check`` or the error says why."""
    try:
        return conn.execute("PRAGMA integrity_check").fetchall()
    except apsw.Error as exc:
        try:
            return conn.execute("PRAGMA quick_check").fetchall() or [(str(exc),)]
        except apsw.Error:
            return [(str(exc),)]


class _IntegrityThread(threading.Thread):
    """integrity_check on a second read-only handle, overlapping the logical checks (it runs in C)."""

    def __init__(self, opener):
        super().__init__(name="fgraph-doctor-integrity", daemon=True)
        self.opener, self.rows, self.error = opener, None, None

    def run(self) -> None:
        try:
            conn = self.opener()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self.error = exc
            return
        try:
            self.rows = integrity_rows(conn)
        except BaseException as exc:  # noqa: BLE001
            self.error = exc
        finally:
            conn.close()

    def result(self):
        """The integrity rows, or None when the caller should check on its own handle instead.

        SQLite and typed errors (a file that cannot be opened twice, damage) mean: check again on
        the caller's handle, which reports them. Anything else is a bug and is raised here, in the
        caller's thread, instead of being swallowed.
        """
        self.join()
        if self.error is not None and not isinstance(self.error, (apsw.Error, FgraphError, OSError)):
            raise self.error
        return self.rows


def _well_formed(doc: dict) -> bool:
    keys = doc.keys()
    return (type(doc.get("at")) is int and type(doc.get("asserted")) is list and type(doc.get("created")) is list
            and type(doc.get("retracted")) is list and (keys <= EVENT_KEYS or keys == EXCISION_KEYS))


def _key(item) -> bytes:
    """Canonical bytes of a fact tuple; orjson alone where no float can occur (its escapes are canonical)."""
    if isinstance(item, list) and item and item[-1] not in ("float", "vector", "json") and \
            not (len(item) == 1 and isinstance(item[0], dict)):
        try:
            return orjson.dumps(item)
        except orjson.JSONEncodeError:
            pass
    return dumps(item).encode("utf-8")
