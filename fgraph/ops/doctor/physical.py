"""Physical checks: SQLite's integrity check, the format markers and objects, and every stored
value, blob and fact row taken on its own (spec 06 §3.3, first half).

The integrity check runs in C; with a second read-only handle it runs in a thread beside the
logical checks. One scan of ``fgraph_facts`` (``FACT_SCAN``) yields every per-row figure, the
values' physical forms included; two SQL functions registered here check tag-10 JSON and
indirect blobs at C speed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import apsw

from fgraph.core import layout, values
from fgraph.core.canonical import dumps, loads
from fgraph.core.errors import FgraphError, FormatError
from fgraph.core.limits import INT64_MAX
from fgraph.ops.doctor.payloads import CanonicalParser

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


def register_functions(conn: apsw.Connection) -> None:
    try:
        conn.create_scalar_function("fgraph_doctor_json", _json_check(), 1, deterministic=True)
        conn.create_scalar_function("fgraph_doctor_blob", _BlobCheck(), 3, deterministic=True)
    except apsw.BusyError:  # statements of this connection are running: keep the registered ones
        pass


# -- the checks (each takes the Checkup of fgraph.ops.doctor.checkup) -------------------------
def integrity(c, rows: list) -> None:
    """A damaged file is still checked as far as it can be read; this problem is listed first."""
    first = str(rows[0][0]) if rows else "no result"
    c.figures["integrity"] = first
    if first != "ok":
        c.findings.add("integrity", f"SQLite integrity check failed: {first.splitlines()[-1][:300]}", first=True)


def markers_and_objects(c) -> bool:
    """True when the file is format v2 enough for the remaining checks to mean anything."""
    try:
        markers = (c.one("PRAGMA application_id")[0], c.one("PRAGMA user_version")[0])
        if markers != (layout.APPLICATION_ID, layout.USER_VERSION):
            c.findings.add("layout", f"markers application_id={markers[0]}, user_version={markers[1]} "
                           "are not format v2")
            return False
        layout.validate_objects(c.q("SELECT type, name, sql FROM sqlite_schema").fetchall(), "the file")
        return True
    except FormatError as exc:
        c.findings.add("layout", f"layout differs from format v2: {exc.message}")
    except apsw.Error as exc:
        c.findings.add("layout", f"layout could not be read: {exc}")
    return False


def fact_rows(c) -> None:
    """The one scan of every fact row; also proves the allocator and the fact-id sequence."""
    (n, max_e, max_a, max_tx, max_rx, max_ref, max_id, bad_ids, intervals, tags, physical, fts,
     missing_blobs) = c.one(FACT_SCAN)
    c.missing_blobs, c.bad_tags, c.bad_values = missing_blobs, tags, physical
    c.figures["expected_fts_rows"] = fts or 0
    used = [x for x in (max_e, max_a, max_tx, max_rx, max_ref) if isinstance(x, int)]
    used += [x for x in c.one("SELECT max(id), max(created_tx) FROM fgraph_ids") if isinstance(x, int)]
    used += [x for x in c.one("SELECT max(tx) FROM fgraph_events") if isinstance(x, int)]
    expected, found = max(used) + 1, c.meta.get("next_id")
    if found != expected or isinstance(found, bool):
        c.findings.add("registry", f"next_id: expected {expected}, found {found!r}")
    elif found >= INT64_MAX:
        c.findings.add("registry", "identity allocator is exhausted")
    seq = c.one("SELECT seq FROM sqlite_sequence WHERE name = 'fgraph_facts'")
    if seq is None or not isinstance(seq[0], int) or seq[0] < (max_id or 0):
        c.findings.add("facts", f"sqlite_sequence for fgraph_facts is behind the largest fact id {max_id}")
    c.findings.count("facts", "invalid fact identifiers", bad_ids)
    c.findings.count("facts", "invalid transaction intervals", intervals)


def value_forms(c) -> None:
    c.findings.count("facts", "invalid value tags", c.bad_tags)
    c.findings.count("facts", "invalid physical values", c.bad_values)


def blobs(c) -> None:
    c.findings.count("blobs", "missing blobs", c.missing_blobs)
    c.findings.count("blobs", "invalid indirect blobs", c.one(
        "SELECT count(DISTINCT b.hash) FROM fgraph_facts f JOIN fgraph_blobs b ON b.hash = f.v "
        "WHERE f.t IN (7, 8, 9) AND NOT fgraph_doctor_blob(f.t, b.hash, b.data)")[0])


# -- the SQL functions -------------------------------------------------------------------------
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


# -- SQLite's integrity check, here or on a second handle ------------------------------------
def integrity_rows(conn: apsw.Connection) -> list:
    """``PRAGMA integrity_check``; when it cannot even run, ``quick_check`` or the error says why."""
    try:
        return conn.execute("PRAGMA integrity_check").fetchall()
    except apsw.Error as exc:
        try:
            return conn.execute("PRAGMA quick_check").fetchall() or [(str(exc),)]
        except apsw.Error:
            return [(str(exc),)]


class IntegrityThread(threading.Thread):
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
