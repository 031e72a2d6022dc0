"""The read-only SQL behind ``fgraph browse`` (issue 16): Datasette's canned queries over a
format-v2 file (spec 01 §5–§6), the one identity lookup its cell renderer needs, and the
read-only connection Datasette reads through.

The face (``fgraph.bridges.browse.app``) holds no SQL; it hands these strings to Datasette, which
runs them with its own ``sqlite3`` connections, so they are plain SQLite 3.37+ SQL (no
``unhex``) with Datasette's ``:named`` parameters. Datasette passes every parameter as text
(an empty string when the form field is blank), hence the ``CAST``s and the ``= ''`` tests.

The column names are part of the contract with the renderer: ``value`` is rendered by the
``tag`` beside it, instants, transactions and entities by the sets below.

Every connection is also bounded (issue 29 item 7, docs/browse.md §Limits), with the numbers of
``fgraph.core.limits``: SQLite's length and LIKE-pattern limits; an authorizer that refuses the
built-in functions whose one call costs more than linear time (no progress handler or interrupt
reaches inside a function call); a deadline per statement, kept by a ``Guard`` whose watchdog
calls ``sqlite3_interrupt``; a byte budget per answer, counted row by row as rows leave SQLite;
and ``limit_heap`` for the SQLite library as a whole.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import math
import sqlite3
import threading
import time
import uuid

from fgraph.core.connection import read_only_uri  # the one statement of the read-only open rule
from fgraph.core.genesis import A_AT, A_BY, A_IMPORTED_AT, A_META, A_SOURCE, A_TYPE
from fgraph.core.limits import (BROWSE_ANSWER_BYTES, BROWSE_HEAP_BYTES, BROWSE_LENGTH_BYTES,
                                BROWSE_LIKE_PATTERN_BYTES, BROWSE_TIME_LIMIT_MS, FIRST_APP_ID, GENESIS_TX)

PAGE_SIZE = 100   # rows per page of the event stream and of the entity list; page on with since/after

# Column names the renderer gives a meaning (fgraph.bridges.browse.app).
VALUE_COLUMN, TAG_COLUMN = "value", "tag"
INSTANT_COLUMNS = frozenset({"at", "asserted_at", "retracted_at", "imported_at"})
TX_COLUMNS = frozenset({"tx", "rx", "asserted_tx", "retracted_tx", "created_tx"})
ENTITY_COLUMNS = frozenset({"entity"})            # identity ids, shown as their name or UUID
ATTRIBUTE_COLUMNS = frozenset({"attribute"})      # attribute names (attributes are entities too)
CHANGE_COUNT_COLUMNS = frozenset({"asserted", "retracted"})  # counts of a receipt, beside its tx
JSON_COLUMNS = frozenset({"meta", "event_data"})

# The identity :entity names: digits are an id (as the CLI reads REF), else a name, else the
# UUID of an anonymous identity. The branches are tried in that order; the first row wins.
TARGET = """target(id) AS (
  SELECT id FROM fgraph_ids
   WHERE :entity <> '' AND :entity NOT GLOB '*[^0-9]*' AND id = CAST(:entity AS INTEGER)
  UNION ALL
  SELECT id FROM fgraph_ids WHERE name = :entity
  UNION ALL
  SELECT id FROM fgraph_ids WHERE gid = fgraph_uuid_bytes(:entity)
), chosen(id) AS (SELECT id FROM target LIMIT 1)"""


def self_fact(attribute: int, tx: str) -> str:
    """The value of one of transaction ``tx``'s own facts (fgraph/at, by, source, meta)."""
    return (f"(SELECT r.v FROM fgraph_facts r INDEXED BY fgraph_hist "
            f"WHERE r.e = {tx} AND r.a = {attribute} AND r.tx = {tx})")


def is_attribute(e: str) -> str:
    """Whether identity ``e`` is an attribute: some fact has it as its attribute, or it was declared
    (has an fgraph/type fact); each test is one seek, on AVET and on the history index."""
    return (f"(EXISTS (SELECT 1 FROM fgraph_facts u INDEXED BY fgraph_avet WHERE u.a = {e}) OR "
            f"EXISTS (SELECT 1 FROM fgraph_facts d INDEXED BY fgraph_hist WHERE d.e = {e} AND d.a = {A_TYPE}))")


def uuid_text(gid: str) -> str:
    """16 UUID bytes as lowercase hyphenated text; NULL for a named identity."""
    hexed = f"lower(hex({gid}))"
    return (f"CASE WHEN {gid} IS NULL THEN NULL ELSE substr({hexed}, 1, 8) || '-' || substr({hexed}, 9, 4) || '-' || "
            f"substr({hexed}, 13, 4) || '-' || substr({hexed}, 17, 4) || '-' || substr({hexed}, 21, 12) END")


ENTITY = f"""WITH {TARGET}
SELECT f.attribute, f.value, f.tag, f.tx AS asserted_tx, {self_fact(A_AT, 'f.tx')} AS asserted_at
  FROM fgraph_now f
 WHERE f.e = (SELECT id FROM chosen)
 ORDER BY f.attribute, f.id"""

HISTORY = f"""WITH {TARGET},
changes(tx, change, fact) AS (
  SELECT tx, 'asserted', id FROM fgraph_facts WHERE e = (SELECT id FROM chosen)
  UNION ALL
  SELECT rx, 'retracted', id FROM fgraph_facts WHERE e = (SELECT id FROM chosen) AND rx IS NOT NULL
)
SELECT c.tx, {self_fact(A_AT, 'c.tx')} AS at, c.change, v.attribute, v.value, v.tag,
       {self_fact(A_BY, 'c.tx')} AS by, {self_fact(A_SOURCE, 'c.tx')} AS source
  FROM changes c JOIN fgraph_view v ON v.id = c.fact
 WHERE :attribute = '' OR v.attribute = :attribute
 ORDER BY c.tx, c.change DESC, c.fact"""
# Within one transaction the retraction is listed before the assertion that replaced it.

RECEIPT = f"""SELECT ev.tx, {uuid_text('t.gid')} AS event, {self_fact(A_AT, 'ev.tx')} AS at,
       {self_fact(A_BY, 'ev.tx')} AS by, {self_fact(A_SOURCE, 'ev.tx')} AS source,
       {self_fact(A_META, 'ev.tx')} AS meta, {self_fact(A_IMPORTED_AT, 'ev.tx')} AS imported_at,
       (SELECT count(*) FROM fgraph_facts a WHERE a.tx = ev.tx AND a.e <> ev.tx) AS asserted,
       (SELECT count(*) FROM fgraph_facts r WHERE r.rx = ev.tx) AS retracted,
       ev.operation_id, lower(hex(ev.event_hash)) AS event_hash, ev.event_data
  FROM fgraph_events ev JOIN fgraph_ids t ON t.id = ev.tx
 WHERE ev.tx = CAST(:tx AS INTEGER)"""
# ``asserted`` leaves out the transaction's own facts (at, by, source, meta), as event/1 does.

CHANGES = """SELECT f.e AS entity, 'asserted' AS change, f.attribute, f.value, f.tag
  FROM fgraph_view f WHERE f.tx = CAST(:tx AS INTEGER) AND f.e <> f.tx
UNION ALL
SELECT f.e, 'retracted', f.attribute, f.value, f.tag
  FROM fgraph_view f WHERE f.rx = CAST(:tx AS INTEGER)
 ORDER BY change DESC, entity, attribute"""

EVENTS = f"""SELECT ev.tx, {uuid_text('t.gid')} AS event, {self_fact(A_AT, 'ev.tx')} AS at,
       lower(hex(ev.event_hash)) AS event_hash, ev.operation_id, ev.event_data
  FROM fgraph_events ev JOIN fgraph_ids t ON t.id = ev.tx
 WHERE ev.tx > max({GENESIS_TX}, CAST(:since AS INTEGER))
 ORDER BY ev.tx
 LIMIT {PAGE_SIZE}"""
# Genesis is never part of the stream (as with ``fgraph tail``); a blank ``since`` starts there.

ENTITIES = f"""SELECT i.id, i.id AS entity, i.created_tx,
       (SELECT count(*) FROM fgraph_facts f WHERE f.e = i.id AND f.rx IS NULL) AS live_facts
  FROM fgraph_ids i
 WHERE i.id > max({FIRST_APP_ID - 1}, CAST(:after AS INTEGER))
   AND NOT EXISTS (SELECT 1 FROM fgraph_events ev WHERE ev.tx = i.id) AND NOT {is_attribute('i.id')}
 ORDER BY i.id
 LIMIT {PAGE_SIZE}"""
# Transactions and attributes are identities too; they have their own pages (receipt, changes;
# attributes), not this list.

IDENTITY_LABEL = "SELECT name, lower(hex(gid)) FROM fgraph_ids WHERE id = ?"


def _uuid_bytes(text) -> bytes | None:
    """A UUID typed by the user (any case, hyphens optional) as the 16 bytes of ``fgraph_ids.gid``;
    SQLite 3.40, which Python may bring, has no ``unhex`` to do it in SQL over the index."""
    if not isinstance(text, str):
        return None
    try:
        return uuid.UUID(text).bytes
    except ValueError:
        return None


def connect_read_only(path: str, guard: Guard | None = None) -> sqlite3.Connection:
    """A ``sqlite3`` connection Datasette can use that SQLite itself keeps from writing, bounded.

    ``mode=ro`` reads committed transactions still in the WAL; ``immutable=1`` would ignore
    them, so it is added only where fgraph's own read-only open adds it (a read-only
    directory without sidecars, where no writer can exist). ``query_only`` refuses writes
    even on a connection Datasette asks for as its "write" connection. ``guard`` keeps the
    deadlines of its statements (the server passes its own, which its shutdown stops); without
    one the connection gets a guard of its own with the default time limit.
    """
    conn = sqlite3.connect(read_only_uri(path), uri=True, check_same_thread=False, factory=BoundedConnection)
    conn.guard = guard if guard is not None else Guard()
    conn.create_function("fgraph_uuid_bytes", 1, _uuid_bytes, deterministic=True)
    conn.execute("PRAGMA query_only = ON")
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, BROWSE_LENGTH_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, BROWSE_LIKE_PATTERN_BYTES)
    conn.set_authorizer(_authorize)
    return conn


# ----------------------------------------------------------------- the bounds of one statement

MIB = 1048576
# Built-in functions whose one call can take far longer than the time limit: each is one step of
# SQLite's virtual machine, which neither a progress handler nor sqlite3_interrupt reaches into, and
# the length limit does not bound its cost. For instr, replace, the trims with a character set and
# json_patch it is the product of two arguments' lengths (instr of a 2 MB needle in a 4 MB haystack
# ran 109 s); printf (format is its other name) loops over a precision up to 2^31 even after its
# result is refused as too long (printf('%.*c', 1000000000, 'x') ran 6 s to return NULL, SQLite
# 3.40). LIKE and GLOB, also length times pattern, are bounded instead by the pattern limit.
# Nothing fgraph or Datasette runs uses these; they are refused when a statement is prepared.
SLOW_FUNCTIONS = frozenset({"instr", "replace", "trim", "ltrim", "rtrim", "json_patch", "printf", "format"})
_SLOW_HINT = (f"fgraph browse refuses {', '.join(sorted(SLOW_FUNCTIONS))}: one call can outrun its time limit; "
              "use LIKE or GLOB, or run the query on a copy with the sqlite3 shell")
TOO_LONG = (f"a string or blob would be longer than fgraph browse allows ({BROWSE_LENGTH_BYTES // MIB} MiB); "
            "ask for less, for example length() or substr() of it")
TOO_LARGE = (f"the answer holds more than fgraph browse returns at once ({BROWSE_ANSWER_BYTES // MIB} MiB of "
             "text and blobs); ask for fewer rows or shorter values, or read big events with `fgraph tail`")


PATTERN_TOO_LONG = (f"a LIKE or GLOB pattern is longer than fgraph browse allows ({BROWSE_LIKE_PATTERN_BYTES} "
                    "bytes); search for a shorter part of the text")


def out_of_memory(heap: int) -> str:
    given = f" ({heap // MIB} MiB together)" if heap > 0 else ""
    return (f"the query needs more memory than fgraph browse gives its queries{given}; "
            "ask for less: fewer or shorter values, or a narrower query")


def _authorize(action, name, arg2, database, trigger):
    if action == sqlite3.SQLITE_FUNCTION and arg2 is not None and arg2.lower() in SLOW_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class Guard:
    """The deadlines of one server's statements, and its stop.

    Each statement (its execute and every fetch, together) gets ``seconds``; a watchdog thread
    calls ``interrupt()`` on a connection whose statement is past it. SQLite checks the interrupt
    at every loop of its virtual machine and inside its long B-tree walks (``count(*)``), where
    Datasette's progress handler, called every 1000 instructions, is not consulted. ``stop()``
    interrupts every running statement at once and refuses new ones: the server's shutdown.
    """

    def __init__(self, seconds: float = BROWSE_TIME_LIMIT_MS / 1000):
        self.seconds = seconds
        self.stopping = False
        self._wake = threading.Condition(threading.Lock())
        self._running: dict[int, list] = {}   # token → [deadline, connection]
        self._tokens = itertools.count()
        self._watchdog: threading.Thread | None = None

    def begin(self, conn: sqlite3.Connection, deadline: float) -> int:
        with self._wake:
            if self.stopping:
                raise sqlite3.OperationalError("interrupted")   # the words Datasette knows a stopped query by
            token = next(self._tokens)
            self._running[token] = [deadline, conn]
            if self._watchdog is None:
                self._watchdog = threading.Thread(target=self._watch, name="fgraph-browse-deadlines", daemon=True)
                self._watchdog.start()
            self._wake.notify()
        return token

    def end(self, token: int) -> None:
        with self._wake:
            self._running.pop(token, None)
            self._wake.notify_all()   # the watchdog, and anyone waiting in idle()

    def idle(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for no statement to be running; whether none is. A connection must
        not be closed under a running statement (Python's sqlite3 crashes when the step returns)."""
        with self._wake:
            return self._wake.wait_for(lambda: not self._running, timeout=seconds)

    def stop(self) -> None:
        """Interrupt every running statement and refuse new ones. Safe in a signal handler: it takes
        no lock (the handler may run while its own thread holds one), and copies the running set whole."""
        self.stopping = True
        for _, conn in list(self._running.values()):
            _interrupt(conn)

    def _watch(self) -> None:
        with self._wake:
            while True:
                now = time.monotonic()
                soonest = math.inf
                for entry in self._running.values():
                    if entry[0] <= now:
                        _interrupt(entry[1])
                        entry[0] = math.inf    # once: the statement ends as soon as SQLite sees it
                    soonest = min(soonest, entry[0])
                self._wake.wait(None if soonest == math.inf else soonest - now)


def _interrupt(conn: sqlite3.Connection) -> None:
    try:
        conn.interrupt()
    except sqlite3.ProgrammingError:
        pass   # closed meanwhile: nothing runs on it


class BoundedConnection(sqlite3.Connection):
    """A connection whose cursors are ``BoundedCursor``s, for ``execute`` too."""

    guard: Guard

    def cursor(self, factory=None):
        cursor = super().cursor(factory or BoundedCursor)
        cursor.row_factory = functools.partial(_counted_row, self.row_factory)
        return cursor

    def execute(self, sql, parameters=()):
        return self.cursor().execute(sql, parameters)


def _counted_row(inner, cursor, row):
    """The row factory of a bounded cursor: adds the row's text and blob bytes to its answer, refusing
    the row that takes it past the budget, so at most one row beyond it is ever held."""
    held = getattr(cursor, "answer_bytes", 0) + sum(len(v) for v in row if isinstance(v, (str, bytes)))
    if held > BROWSE_ANSWER_BYTES:
        raise sqlite3.DataError(TOO_LARGE)
    cursor.answer_bytes = held
    return inner(cursor, row) if inner is not None else row


class BoundedCursor(sqlite3.Cursor):
    """A cursor whose statement runs under its guard's deadline and answer budget, with SQLite's
    refusals in words that say what to do. "interrupted" keeps its words: Datasette knows a query
    stopped by its time limit by them and shows its own page for it."""

    deadline = math.inf
    answer_bytes = 0

    def execute(self, sql, parameters=()):
        self.deadline, self.answer_bytes = time.monotonic() + self.connection.guard.seconds, 0
        with self._worded(), self._bounded():
            return super().execute(sql, parameters)

    def executescript(self, script):
        self.deadline, self.answer_bytes = time.monotonic() + self.connection.guard.seconds, 0
        with self._worded(), self._bounded():
            return super().executescript(script)

    def fetchone(self):
        with self._worded(), self._bounded():
            return super().fetchone()

    def fetchmany(self, size=None):
        with self._worded(), self._bounded():
            return super().fetchmany(self.arraysize if size is None else size)

    def fetchall(self):
        with self._worded(), self._bounded():
            return super().fetchall()

    def __next__(self):
        with self._worded(), self._bounded():
            return super().__next__()

    @contextlib.contextmanager
    def _bounded(self):
        guard = self.connection.guard
        token = guard.begin(self.connection, self.deadline)
        try:
            yield
        except BaseException:
            # A statement stopped half-way (a refused row, an error) is finalized now, not whenever the
            # traceback holding this cursor is collected: while a statement stays active SQLite keeps an
            # interrupt that lands as it ends, and the connection's next statement fails with it.
            with contextlib.suppress(sqlite3.Error):
                self.close()
            raise
        finally:
            guard.end(token)

    @contextlib.contextmanager
    def _worded(self):
        """SQLite's refusals in words that say what to do next."""
        try:
            yield
        except MemoryError:
            raise sqlite3.OperationalError(out_of_memory(_heap_limit())) from None
        except sqlite3.DataError as exc:
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_TOOBIG:
                raise sqlite3.DataError(TOO_LONG) from None
            raise
        except sqlite3.OperationalError as exc:
            if str(exc).startswith("not authorized to use function"):   # only _authorize denies a function
                raise sqlite3.OperationalError(f"{exc}: {_SLOW_HINT}") from None
            if str(exc) == "LIKE or GLOB pattern too complex":
                raise sqlite3.OperationalError(PATTERN_TOO_LONG) from None
            raise


# ----------------------------------------------------------------- the heap of the whole library

def _library():
    """The SQLite library Python's ``sqlite3`` module runs on (the one Datasette reads through), by
    the symbols its extension module resolves: not fgraph's own, which apsw links in privately."""
    import _sqlite3
    return ctypes.CDLL(_sqlite3.__file__)


def _heap_limit() -> int:
    try:
        function = _library().sqlite3_hard_heap_limit64
    except (ImportError, OSError, AttributeError):
        return 0
    function.restype, function.argtypes = ctypes.c_int64, [ctypes.c_int64]
    return function(-1)   # a negative argument reads the limit without changing it


def limit_heap(nbytes: int = BROWSE_HEAP_BYTES) -> bool:
    """Set ``sqlite3_hard_heap_limit64`` of that library to ``nbytes``; whether it is in force.

    The limit is process-wide: it bounds all the memory the library holds, every connection and
    statement together, which is why only the browse server sets it (a process that serves
    nothing else with this library). An allocation past it fails as SQLITE_NOMEM, a clear error
    for the one request that asked (``out_of_memory``). False when this Python's ``sqlite3``
    does not expose the function (SQLite before 3.31.1, a private static build) or the library
    does not count its memory (built without memory statistics, where the limit does nothing).
    """
    try:
        library = _library()
        function, used = library.sqlite3_hard_heap_limit64, library.sqlite3_memory_used
    except (ImportError, OSError, AttributeError):
        return False
    function.restype, function.argtypes = ctypes.c_int64, [ctypes.c_int64]
    used.restype, used.argtypes = ctypes.c_int64, []
    function(nbytes)
    probe = sqlite3.connect(":memory:")   # a connection holds memory, so statistics that count show it
    try:
        return function(-1) == nbytes and used() > 0
    finally:
        probe.close()
