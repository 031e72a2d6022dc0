"""Proves `fgraph browse` serves a live, read-only web view of a store: its pages show an entity's
current state, its history with the retraction, receipts with by/source and the event stream, with
values rendered by tag (refs as links to their entity), while the file stays byte-for-byte unchanged.

One server runs for the module, as a subprocess (Datasette and uvicorn stay out of this `-W error`
process), over a file that another process holds open with committed transactions still in its
WAL: the case where SQLite's immutable mode would show a stale store.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

import fgraph
from fgraph.core import limits
from fgraph.query.browse import sql as browse_sql
from tests.support.browse import browse_env, build_store, cli, fetch, page, rows_at, start_browse, stop, texts

needs_datasette = pytest.mark.skipif(importlib.util.find_spec("datasette") is None,
                                     reason="Datasette is not installed (pip install -e '.[test,browse]')")

# The holder: opens the store writable, commits one transaction, and keeps the file (and its WAL) open,
# committing one more map for every JSON line it reads; it prints the tx of each commit.
HOLDER = """
import json, sys, fgraph
with fgraph.connect(sys.argv[1]) as db:
    print(db.transact({"id": "grace", "person/name": "Grace Hopper"}, by="holder")["tx"], flush=True)
    for line in sys.stdin:
        print(db.transact(json.loads(line))["tx"], flush=True)
"""


class Server:
    """The served store: its path, the transactions written, the holder and the browse processes."""

    def __init__(self, path: Path, reports: dict, holder: subprocess.Popen, browse: subprocess.Popen, url: str):
        self.path, self.reports, self.holder, self.browse, self.url = path, reports, holder, browse, url

    def commit(self, data: dict) -> int:
        """Commit ``data`` through the holder (another process) and return its tx."""
        self.holder.stdin.write(json.dumps(data) + "\n")
        self.holder.stdin.flush()
        return int(self.holder.stdout.readline())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("browse") / "team.fgraph"
    reports = build_store(path)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=browse_env())
    browse = None
    try:
        reports["grace"] = {"tx": int(holder.stdout.readline())}
        browse, url = start_browse(path)
        yield Server(path, reports, holder, browse, url)
    finally:
        if browse is not None:
            stop(browse)
        holder.stdin.close()  # the holder leaves its loop, closes the store and exits
        holder.wait(timeout=30)
        holder.stdout.close()


@pytest.fixture(scope="module")
def sql_server(server):
    """The same store served with ``--sql``: arbitrary (read-only) SQL allowed, the limits still in force."""
    browse, url = start_browse(server.path, "--sql")
    try:
        yield Server(server.path, server.reports, server.holder, browse, url)
    finally:
        stop(browse)


# ----------------------------------------------------------------- fetching and reading pages

def file_state(path: Path) -> dict:
    """SHA-256 of the store and its WAL (None where absent); the -shm is readers' scratch space."""
    def digest(p: Path):
        return hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
    return {"db": digest(path), "wal": digest(Path(f"{path}-wal"))}


# ----------------------------------------------------------------- the pages

@needs_datasette
def test_entity_page_shows_the_current_state(server):
    rows = page(server, "entity", entity="ada")
    assert texts(rows, "attribute", "value", "tag") == [("person/born", "1816", "int"),
                                                        ("person/name", "Ada Lovelace", "text")]
    assert rows[0]["asserted_tx"] == (str(server.reports["born"]["tx"]),
                                      f"/fgraph/receipt?tx={server.reports['born']['tx']}")
    by_id = page(server, "entity", entity=str(server.reports["ada"]["ids"]["ada"]))
    assert texts(by_id, "value") == [("1816",), ("Ada Lovelace",)]
    assert page(server, "entity", entity="nobody") == []


@needs_datasette
def test_a_ref_renders_as_a_link_to_its_entity_and_an_instant_as_rfc3339(server):
    rows = {row["attribute"][0]: row for row in page(server, "entity", entity="charles")}
    assert rows["person/friend"]["value"] == ("ada", "/fgraph/entity?entity=ada")
    assert rows["person/friend"]["tag"][0] == "ref"
    assert rows["person/seen"]["value"][0] == "2026-01-02T03:04:05.500000Z"
    followed = rows_at(server.url.removesuffix("/fgraph") + rows["person/friend"]["value"][1])
    assert ("person/name", "Ada Lovelace") in texts(followed, "attribute", "value")


@needs_datasette
def test_history_is_a_timeline_that_shows_the_retraction(server):
    rows = page(server, "history", entity="ada", attribute="person/born")
    reports = server.reports
    assert texts(rows, "tx", "change", "value") == [(str(reports["ada"]["tx"]), "asserted", "1815"),
                                                    (str(reports["retract"]["tx"]), "retracted", "1815"),
                                                    (str(reports["born"]["tx"]), "asserted", "1816")]
    times = [row["at"][0] for row in rows]
    assert times == sorted(times) and all(t.endswith("Z") and "T" in t for t in times)
    assert texts(rows, "by", "source")[:2] == [("ada-importer", "notes/ada.md"), ("editor", "")]   # who, where
    assert len(page(server, "history", entity="ada")) == 4   # person/name too when no attribute is given


@needs_datasette
def test_receipt_shows_by_source_event_and_its_changes(server):
    ada = server.reports["ada"]
    [row] = page(server, "receipt", tx=str(ada["tx"]))
    assert (row["by"][0], row["source"][0], row["event"][0]) == ("ada-importer", "notes/ada.md", ada["event"])
    assert len(row["event_hash"][0]) == 64 and row["at"][0].endswith("Z")
    assert row["asserted"] == ("2", f"/fgraph/changes?tx={ada['tx']}")
    [retraction] = page(server, "receipt", tx=str(server.reports["retract"]["tx"]))
    assert (retraction["by"][0], retraction["asserted"][0], retraction["retracted"][0]) == ("editor", "0", "1")
    changes = page(server, "changes", tx=str(server.reports["retract"]["tx"]))
    assert texts(changes, "entity", "change", "attribute", "value") == [("ada", "retracted", "person/born", "1815")]


@needs_datasette
def test_events_page_shows_the_event_uuids_and_pages_on_since(server):
    with fgraph.connect(str(server.path), read_only=True) as db:
        events = [json.loads(line) for line in db.iter_events()]
        latest = db.latest_tx()
    rows = page(server, "events")
    assert [row["event"][0] for row in rows] == [event["event"] for event in events]
    assert int(rows[-1]["tx"][0]) == latest
    after = page(server, "events", since=str(server.reports["retract"]["tx"]))
    assert [row["event"][0] for row in after] == [event["event"] for event in events][-len(after):]
    assert server.reports["born"]["event"] in [row["event"][0] for row in after]
    assert server.reports["ada"]["event"] not in [row["event"][0] for row in after]


@needs_datasette
def test_entities_page_lists_entities_not_transactions_or_attributes(server):
    labels = [row["entity"][0] for row in page(server, "entities")]
    assert {"ada", "charles", "grace"} <= set(labels)
    assert not set(labels) & {str(report["tx"]) for report in server.reports.values()}
    attributes = {"person/name", "person/born", "person/friend", "person/seen"}   # used, or declared
    assert not set(labels) & attributes   # issue 31: attributes have their own page
    listed = {row["attribute"][0]: row for row in page(server, "attributes")}
    assert attributes <= set(listed) and not {"ada", "charles", "grace"} & set(listed)
    assert listed["person/friend"]["type"][0] == "ref"
    assert int(listed["person/name"]["live_facts"][0]) >= 3   # ada, charles, grace (hedy, once committed)
    assert listed["person/name"]["attribute"][1] == "/fgraph/entity?entity=person%2Fname"


# ----------------------------------------------------------------- read-only and live

@needs_datasette
def test_writes_are_refused_and_the_file_is_unchanged(server, sql_server):
    before = file_state(server.path)
    assert before["wal"] is not None   # the holder's commits are in the WAL, not yet in the file
    for method, path in (("POST", "/fgraph/entity"), ("POST", "/fgraph/fgraph_facts/-/insert"),
                         ("POST", "/fgraph/-/create"), ("PUT", "/fgraph"), ("DELETE", "/fgraph/fgraph_facts/1")):
        status, text = fetch(server.url.removesuffix("/fgraph") + path, method, b'{"row": {"e": 1}}')
        assert status == 405 and "read-only" in text, (method, path, status)
    status, text = fetch(f"{sql_server.url}.json?sql=" + urllib.parse.quote("DELETE FROM fgraph_facts"))
    assert status == 400 and "SELECT" in text
    assert fetch(f"{server.url}.json?sql=" + urllib.parse.quote("DELETE FROM fgraph_facts"))[0] in (400, 403)
    for query, params in (("entity", {"entity": "ada"}), ("history", {"entity": "charles"}), ("events", {})):
        page(server, query, **params)
    assert fetch(server.url + "/fgraph_facts")[0] == 200
    assert file_state(server.path) == before


@needs_datasette
def test_the_newest_commit_is_visible_while_another_process_holds_the_file(server):
    assert Path(f"{server.path}-wal").stat().st_size > 0   # committed frames not yet checkpointed
    assert texts(page(server, "entity", entity="grace"), "value") == [("Grace Hopper",)]
    tx = server.commit({"id": "hedy", "person/name": "Hedy Lamarr"})
    assert texts(page(server, "entity", entity="hedy"), "value", "asserted_tx") == [("Hedy Lamarr", str(tx))]
    assert page(server, "events")[-1]["tx"][0] == str(tx)


def test_the_read_only_connection_refuses_writes(tmp_path):
    path = tmp_path / "t.fgraph"
    with fgraph.connect(str(path)):
        pass
    conn = browse_sql.connect_read_only(str(path))
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly|read-only|query_only"):
            conn.execute("CREATE TABLE intruder (x)")
        assert conn.execute(browse_sql.ENTITY, {"entity": "fgraph/at"}).fetchall()
    finally:
        conn.close()


# ----------------------------------------------------------------- hostile requests (issue 29 item 7)

MIB = 1048576
# The requests that froze the server for ~90 s and grew it to 2.3-2.9 GB: one SQLite step each, which
# no progress handler can stop; SQLite's length limit refuses them before they allocate.
HUGE = ("select randomblob(1000000000)", "select hex(zeroblob(300000000))")
SLOW = "with recursive c(x) as (select 1 union all select x+1 from c) select count(*) from c"
QUICK_SECONDS = 5       # a refused request answers at once; 5 s leaves room for a busy machine
# The server's peak RSS: Datasette's own (about 100 MiB) plus what the limits let SQLite and the answers hold.
RSS_BOUND_MIB = 100 + (limits.BROWSE_HEAP_BYTES + 3 * limits.BROWSE_ANSWER_BYTES) // MIB + 150


def run_sql(url: str, sql: str, suffix: str = ".json") -> tuple[int, str, float]:
    started = time.monotonic()
    status, text = fetch(f"{url}{suffix}?sql=" + urllib.parse.quote(sql))
    return status, text, time.monotonic() - started


def peak_rss_mib(proc: subprocess.Popen) -> float:
    with open(f"/proc/{proc.pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


@needs_datasette
def test_arbitrary_sql_is_off_by_default_with_a_clear_403(server):
    for suffix in ("", ".json", ".csv"):
        status, text, seconds = run_sql(server.url, "select 1", suffix)
        assert status == 403 and "--sql" in text and "Traceback" not in text, (suffix, status, text[-500:])
    for sql in HUGE:
        status, text, seconds = run_sql(server.url, sql)
        assert status == 403 and seconds < QUICK_SECONDS, (sql, status, seconds)
    assert fetch(f"{server.url}/fgraph_facts?_where=1")[0] == 403   # a raw WHERE clause is SQL too
    status, text = fetch(server.url)
    assert status == 200 and 'name="sql"' not in text                  # no SQL box on the store's page
    assert fetch(f"{server.url}/fgraph_facts")[0] == 200                # table pages and canned queries stay
    assert texts(page(server, "entity", entity="ada"), "value")[-1] == ("Ada Lovelace",)


@needs_datasette
def test_error_pages_write_nothing_on_stdout(server):
    """Datasette printed each error page's exception, with its locals, on stdout: the URL line's
    stream, which the fixture (like a supervisor) does not read; after ~64 KiB the server froze."""
    for _ in range(40):
        status, text = fetch(f"{server.url}/no_such_table")
        assert status == 404 and "Traceback" not in text
    assert fetch(server.url)[0] == 200
    assert select.select([server.browse.stdout], [], [], 0.5)[0] == []   # nothing after the URL line


@needs_datasette
def test_arbitrary_sql_runs_with_the_flag(sql_server):
    status, text, _ = run_sql(sql_server.url, "select 1 + 1 as two")
    assert status == 200 and json.loads(text)["rows"] == [[2]], text[-500:]
    status, text = fetch(sql_server.url)
    assert status == 200 and 'name="sql"' in text


@needs_datasette
def test_huge_blobs_are_refused_at_once_and_memory_stays_bounded(sql_server):
    for sql in HUGE:
        status, text, seconds = run_sql(sql_server.url, sql)
        assert status == 400 and seconds < QUICK_SECONDS, (sql, status, seconds, text[-500:])
        assert f"{limits.BROWSE_LENGTH_BYTES // MIB} MiB" in text and "Traceback" not in text, text[-500:]
    assert peak_rss_mib(sql_server.browse) < RSS_BOUND_MIB


@needs_datasette
def test_an_answer_over_its_budget_is_refused_not_buffered(sql_server):
    """1000 rows of 16 MB each: every value within the length limit, the answer 16 GB."""
    sql = ("with recursive c(x) as (select 1 union all select x+1 from c limit 1000) "
           "select zeroblob(16000000) from c")
    status, text, seconds = run_sql(sql_server.url, sql)
    assert status == 400 and seconds < QUICK_SECONDS, (status, seconds, text[-500:])
    assert f"{limits.BROWSE_ANSWER_BYTES // MIB} MiB" in text
    assert peak_rss_mib(sql_server.browse) < RSS_BOUND_MIB


@needs_datasette
def test_a_long_query_stops_at_the_time_limit(sql_server):
    status, text, seconds = run_sql(sql_server.url, SLOW)
    assert status == 400 and "Traceback" not in text, text[-500:]
    assert seconds < limits.BROWSE_TIME_LIMIT_MS / 1000 + QUICK_SECONDS


# One step SQLite cannot interrupt: a LIKE over a value of the length limit, ~3 s on a laptop.
UNINTERRUPTIBLE = "select hex(zeroblob(8000000)) like '%" + "0" * 90 + "z%'"


@needs_datasette
@pytest.mark.parametrize("sql, answers_expected", [(SLOW, ([400],)), (UNINTERRUPTIBLE, ([400], [503]))],
                         ids=["interruptible", "one-long-step"])
def test_sigterm_during_a_slow_request_ends_the_server_within_a_second(tmp_path, sql, answers_expected):
    """The running statement is interrupted and answered (400); a step SQLite cannot interrupt is left
    behind after BROWSE_STOP_SECONDS and its request answered 503 (uvicorn's own answer was a 500)."""
    path = tmp_path / "t.fgraph"
    with fgraph.connect(str(path)):
        pass
    proc, url = start_browse(path, "--sql")
    answers = []

    def ask():
        try:
            answers.append(run_sql(url, sql)[0])
        except OSError as exc:   # the connection cut: recorded, and the assertion below says so
            answers.append(exc)

    try:
        asking = threading.Thread(target=ask)
        asking.start()
        time.sleep(0.8)    # the query is running (it would run for the whole time limit)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        latency = time.monotonic() - sent
        asking.join(timeout=60)
    finally:
        stop(proc)
    assert latency < 1.0, latency
    assert code == -signal.SIGTERM     # uvicorn re-raises the signal once its shutdown is done
    assert answers in answers_expected   # answered, not cut without a word


@needs_datasette
def test_ctrl_c_during_one_long_step_exits_130_not_a_crash(tmp_path):
    """Once the shutdown gave up on a step SQLite could not interrupt, closing its connection under it
    crashed the process (SIGSEGV) when the step returned; the connection is now left to the exit."""
    path = tmp_path / "t.fgraph"
    with fgraph.connect(str(path)):
        pass
    proc, url = start_browse(path, "--sql")
    try:
        asking = threading.Thread(target=lambda: fetch(f"{url}.json?sql=" + urllib.parse.quote(UNINTERRUPTIBLE)))
        asking.start()
        time.sleep(0.8)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
        asking.join(timeout=60)
    finally:
        stop(proc)


def _store(tmp_path) -> str:
    path = str(tmp_path / "t.fgraph")
    with fgraph.connect(path) as db:
        db.transact({"id": "ada", "person/name": "Ada Lovelace"})
    return path


def test_browse_connections_bound_lengths_patterns_and_slow_functions(tmp_path):
    conn = browse_sql.connect_read_only(_store(tmp_path))
    try:
        assert conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) == limits.BROWSE_LENGTH_BYTES
        assert conn.getlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH) == limits.BROWSE_LIKE_PATTERN_BYTES
        assert limits.BROWSE_LENGTH_BYTES > limits.MAX_EVENT_BYTES   # every stored event stays readable
        for sql in HUGE:
            started = time.monotonic()
            with pytest.raises(sqlite3.DataError, match=f"{limits.BROWSE_LENGTH_BYTES // MIB} MiB"):
                conn.execute(sql).fetchall()
            assert time.monotonic() - started < 1
        for sql in ("select instr('abc', 'b')", "select REPLACE('a', 'a', 'b')", "select trim(' a ')",
                    "select json_patch('{}', '{}')", "select printf('%.*c', 1000000000, 'x')"):
            with pytest.raises(sqlite3.OperationalError, match="refuses"):
                conn.execute(sql).fetchall()
        with pytest.raises(sqlite3.OperationalError, match="pattern"):
            conn.execute("select 'a' like ?", ["%" + "a" * limits.BROWSE_LIKE_PATTERN_BYTES + "%"]).fetchall()
        assert conn.execute("select 'xay' like '%a%', length(hex(randomblob(1000000)))").fetchall() == [(1, 2000000)]
        assert conn.execute(browse_sql.ENTITY, {"entity": "ada"}).fetchall()
    finally:
        conn.close()


def test_an_answer_over_its_budget_is_refused_row_by_row(tmp_path):
    conn = browse_sql.connect_read_only(_store(tmp_path))
    rows = limits.BROWSE_ANSWER_BYTES // MIB + 10
    try:
        cursor = conn.execute(f"with recursive c(x) as (select 1 union all select x+1 from c limit {rows}) "
                              "select zeroblob(1048576) from c")
        with pytest.raises(sqlite3.DataError, match=f"{limits.BROWSE_ANSWER_BYTES // MIB} MiB"):
            cursor.fetchall()
        assert len(conn.execute("select zeroblob(1048576) from fgraph_ids limit 3").fetchall()) == 3  # a new budget
    finally:
        conn.close()


def test_a_refused_answer_leaves_no_statement_for_a_later_interrupt_to_hit(tmp_path):
    """Found by the torture family: a statement stopped half-way by the answer budget stayed active
    while its traceback held the cursor, so SQLite kept the interrupt of a later slow statement on
    that connection, and the next one (Datasette's PRAGMA schema_version) failed "interrupted": a 500."""
    conn = browse_sql.connect_read_only(_store(tmp_path), browse_sql.Guard(0.3))
    rows = limits.BROWSE_ANSWER_BYTES // MIB + 10
    try:
        cursor = conn.execute(f"with recursive c(x) as (select 1 union all select x+1 from c limit {rows}) "
                              "select zeroblob(1048576) from c")
        with pytest.raises(sqlite3.DataError):
            cursor.fetchall()
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            conn.execute(SLOW.replace("count(*)", "count(*), randomblob(10)")).fetchall()   # the watchdog stops it
        assert conn.execute("PRAGMA schema_version").fetchall()
    finally:
        conn.close()


def test_a_statement_past_its_deadline_is_interrupted_and_stop_interrupts_all(tmp_path):
    path = _store(tmp_path)
    guard = browse_sql.Guard(0.3)
    conn = browse_sql.connect_read_only(path, guard)
    try:
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            conn.execute(SLOW).fetchall()
        assert 0.25 < time.monotonic() - started < 2
        assert conn.execute("select 1").fetchall() == [(1,)]    # the next statement has its own deadline
    finally:
        conn.close()
    guard = browse_sql.Guard(60)
    conns = [browse_sql.connect_read_only(path, guard) for _ in range(2)]
    errors = []

    def run(conn):
        try:
            conn.execute(SLOW).fetchall()
        except sqlite3.OperationalError as exc:
            errors.append((str(exc), time.monotonic()))

    threads = [threading.Thread(target=run, args=(conn,)) for conn in conns]
    try:
        for thread in threads:
            thread.start()
        time.sleep(0.3)
        assert not guard.idle(0.05)          # the server closes no connection while this is so
        stopped = time.monotonic()
        guard.stop()
        for thread in threads:
            thread.join(timeout=10)
        assert guard.idle(0)
        assert [text for text, _ in errors] == ["interrupted", "interrupted"]
        assert max(when for _, when in errors) - stopped < 0.5
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):   # nothing new starts
            conns[0].execute("select 1")
    finally:
        for conn in conns:
            conn.close()


def test_the_heap_limit_bounds_what_sqlite_may_hold(tmp_path):
    """Process-wide, so in a process of its own: several columns, each within the length limit,
    together over the heap limit, fail as one clear error instead of growing the process."""
    code = """
import sqlite3, sys
from fgraph.query.browse import sql as browse_sql
assert browse_sql.limit_heap(64 * 1048576) is True
conn = browse_sql.connect_read_only(sys.argv[1])
assert conn.execute("select length(randomblob(10000000))").fetchall() == [(10000000,)]
try:
    conn.execute("select " + ", ".join(["randomblob(15000000)"] * 8)).fetchall()
except sqlite3.OperationalError as exc:
    assert "64 MiB" in str(exc), exc
    print("refused")
"""
    result = subprocess.run([sys.executable, "-c", code, _store(tmp_path)], capture_output=True, text=True,
                            env=browse_env(), timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "refused", result.stderr[-2000:]


# ----------------------------------------------------------------- the command's errors

def test_a_missing_file_is_not_found_and_a_foreign_file_a_format_error(tmp_path):
    missing = cli("--db", str(tmp_path / "none.fgraph"), "browse", "--port", "0")
    assert missing.returncode == 1 and missing.stderr.startswith("NotFound: "), missing.stderr
    assert not (tmp_path / "none.fgraph").exists()
    (tmp_path / "notes.txt").write_text("not a database\n")
    foreign = cli("--db", str(tmp_path / "notes.txt"), "browse", "--port", "0")
    assert foreign.returncode == 1 and foreign.stderr.startswith("FormatError: "), foreign.stderr


def test_without_datasette_the_error_names_the_extra(tmp_path):
    path = tmp_path / "t.fgraph"
    with fgraph.connect(str(path)):
        pass
    hide_datasette = ("import sys; sys.modules['datasette'] = None; from fgraph.cli.main import main; "
                      "main(sys.argv[1:])")
    result = cli("--db", str(path), "browse", "--port", "0", code=hide_datasette)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("Unsupported: ") and "pip install 'fgraph[browse]'" in result.stderr


@needs_datasette
def test_a_taken_port_is_a_clear_error(tmp_path):
    path = tmp_path / "t.fgraph"
    with fgraph.connect(str(path)):
        pass
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        result = cli("--db", str(path), "browse", "--port", str(taken.getsockname()[1]))
    assert result.returncode == 1 and "cannot listen on" in result.stderr and "--port 0" in result.stderr


@needs_datasette
def test_interrupt_stops_the_server(tmp_path):
    path = tmp_path / "t.fgraph"
    with fgraph.connect(str(path)):
        pass
    proc, url = start_browse(path)
    try:
        assert fetch(url)[0] == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        stop(proc)


@needs_datasette
def test_ctrl_c_is_an_interrupt_even_when_the_serving_task_finished_first(tmp_path, monkeypatch):
    """uvicorn re-raises a captured SIGINT after its graceful shutdown, but asyncio.run turns it
    into KeyboardInterrupt only while the serving task is still running; once seen in the make
    test run, a browse stopped by Ctrl-C exited 0. The server remembers the signal instead."""
    import asyncio

    import uvicorn

    from fgraph.bridges.browse import app as browse

    server = browse.BrowseServer(uvicorn.Config(lambda scope, receive, send: None))
    server.handle_exit(signal.SIGTERM, None)
    assert server.should_exit and not server.interrupted
    server.handle_exit(signal.SIGINT, None)
    assert server.interrupted

    def finished_normally(coroutine):
        coroutine.close()
        return server

    monkeypatch.setattr(asyncio, "run", finished_normally)
    path = tmp_path / "t.fgraph"
    with fgraph.connect(str(path)):
        pass
    with socket.socket() as sock, pytest.raises(KeyboardInterrupt):
        browse.serve(str(path), sock, "http://127.0.0.1/")
