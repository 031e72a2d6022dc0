"""The counts of ``info`` kept beside the database (fgraph/core/stats_cache.py, issue 52 item 2):
brought forward they equal a fresh count after every kind of write; a damaged, forged, foreign or
stale cache, and a link, FIFO or directory in its place, are ignored; a read-only database or
directory answers without writing; and a call's cost follows what changed, not the history."""

from __future__ import annotations

import os
import stat

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fgraph
from fgraph.core import stats_cache
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.stats_history import STEP, declare, plain, play

FIGURES = ("attributes", "blobs", "entities", "facts", "live_facts", "transactions")


def figures(db) -> dict:
    got = db.stats()
    return {k: got[k] for k in FIGURES}


class Paths:
    """Which way ``counts_at`` answered: counted anew, or brought forward from the cache."""

    def __init__(self, monkeypatch):
        self.fresh = self.forward = 0
        original = stats_cache.counts_at

        def spy(conn, basis, fresh, delta):
            def counted():
                self.fresh += 1
                return fresh()

            def stepped(since, upto):
                self.forward += 1
                return delta(since, upto)
            return original(conn, basis, counted, stepped)
        monkeypatch.setattr("fgraph.core.stats.counts_at", spy)


def cache_document(path: str) -> dict:
    with open(stats_cache.path_of(path), "rb") as f:
        return orjson.loads(f.read())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=20))
def test_brought_forward_the_counts_equal_a_fresh_count_after_every_write(tmp_path_factory, monkeypatch, steps):
    path = str(tmp_path_factory.mktemp("cache") / "s.db")
    paths = Paths(monkeypatch)
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        declare(db)
        assert figures(db) == plain(db.connection)
        for step in steps:
            fresh, forward, latest = paths.fresh, paths.forward, db.latest_tx()
            done = play(db, step)
            assert figures(db) == plain(db.connection), step
            assert cache_document(path)["basis"] <= db.latest_tx()
            if done in ("text", "bytes", "tag", "name") and db.latest_tx() > latest:
                assert (paths.fresh, paths.forward) == (fresh, forward + 1), "a plain write is brought forward"


def test_apply_restore_and_a_second_handle_agree_with_a_fresh_count(tmp_path, monkeypatch):
    paths = Paths(monkeypatch)
    source, replica, restored = (str(tmp_path / n) for n in ("a.db", "b.db", "c.db"))
    with fgraph.connect(source, clock=CONFORMANCE_CLOCK) as a, fgraph.connect(replica, clock=CONFORMANCE_CLOCK) as b:
        a.transact({"id": "ada", "person/name": "Ada", "note/raw": {"bytes": "QUJD"}})
        a.transact({"id": "ada", "person/name": "Ada L."})
        assert figures(b) == plain(b.connection)
        b.apply(list(a.iter_events()))
        assert figures(b) == plain(b.connection)
        assert paths.forward >= 1
        snapshot = a.snapshot()
    # a cache left at the restored copy's path by another database is not believed
    with fgraph.connect(source, read_only=True) as a:
        figures(a)
    with open(stats_cache.path_of(source), "rb") as f:
        leftover = f.read()
    with open(stats_cache.path_of(restored), "wb") as f:
        f.write(leftover)
    with fgraph.connect(restored) as c:
        c.restore(snapshot.splitlines(keepends=True))
        c.transact({"id": "bob", "person/name": "Bob"})
        assert figures(c) == plain(c.connection)
        assert cache_document(restored)["store"]["file"] != orjson.loads(leftover)["store"]["file"]


def two_stores(tmp_path):
    one, two = str(tmp_path / "one.db"), str(tmp_path / "two.db")
    with fgraph.connect(one, clock=CONFORMANCE_CLOCK) as db:
        for k in range(5):
            db.transact({"id": f"n{k}", "n/v": k, "n/blob": {"bytes": "QUJD" * (k + 1)}})
        figures(db)
    with fgraph.connect(two, clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "m", "m/v": 1})
        figures(db)
    return one, two


def rewritten(document: dict, **changes) -> bytes:
    body = {k: v for k, v in document.items() if k != "checksum"}
    body.update(changes)
    return orjson.dumps({**body, "checksum": stats_cache.checksum(body)}, option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize("kind", ["truncated", "garbage", "edited", "forged-other-store", "forged-basis-event",
                                  "future-basis", "negative", "too-large", "foreign", "empty"])
def test_a_damaged_forged_or_foreign_cache_is_ignored_and_rewritten(tmp_path, kind):
    one, two = two_stores(tmp_path)
    cache = stats_cache.path_of(one)
    with open(cache, "rb") as f:
        raw = f.read()
    document = orjson.loads(raw)
    wrong = {**document["counts"], "facts": document["counts"]["facts"] + 1000}
    replacement = {
        "truncated": raw[: len(raw) // 2],
        "garbage": b"\x00\xff" * 50,
        "edited": raw.replace(b'"facts":%d' % document["counts"]["facts"], b'"facts":%d' % wrong["facts"]),
        "forged-other-store": rewritten(document, counts=wrong, store={**document["store"], "created_at": "1"}),
        "forged-basis-event": rewritten(document, counts=wrong, basis_event=["00" * 16, "00" * 32]),
        "future-basis": rewritten(document, counts=wrong, basis=document["basis"] + 5),
        "negative": rewritten(document, counts={**document["counts"], "facts": -1}),
        "too-large": b" " * (stats_cache.READ_LIMIT + 1),
        "empty": b"",
    }.get(kind)
    if kind == "foreign":
        with open(stats_cache.path_of(two), "rb") as f:
            replacement = f.read()
    with open(cache, "wb") as f:
        f.write(replacement)
    with fgraph.connect(one) as db:
        db.transact({"id": "late", "n/v": 99})
        assert figures(db) == plain(db.connection)
        assert figures(db) == plain(db.connection)
        assert cache_document(one)["counts"] != wrong
        assert cache_document(one)["basis"] == db.latest_tx()   # counted anew, so written


@pytest.mark.parametrize("kind", ["link", "dangling-link", "fifo", "directory"])
def test_a_link_fifo_or_directory_in_the_caches_place_is_left_alone(tmp_path, kind):
    path = str(tmp_path / "s.db")
    cache = stats_cache.path_of(path)
    elsewhere = tmp_path / "elsewhere.json"
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "ada", "person/name": "Ada"})
        figures(db)
        if kind == "link":
            with open(cache, "rb") as f:
                elsewhere.write_bytes(f.read())   # a valid cache, reached only through a link
        os.unlink(cache)
        if kind in ("link", "dangling-link"):
            os.symlink(elsewhere, cache)
        elif kind == "fifo":
            os.mkfifo(cache)
        else:
            os.mkdir(cache)
        before = elsewhere.read_bytes() if kind == "link" else None
        db.transact({"id": "bob", "person/name": "Bob"})
        assert figures(db) == plain(db.connection)
        mode = os.lstat(cache).st_mode
        assert {"link": stat.S_ISLNK, "dangling-link": stat.S_ISLNK, "fifo": stat.S_ISFIFO,
                "directory": stat.S_ISDIR}[kind](mode)
        if kind == "link":
            assert elsewhere.read_bytes() == before
        else:
            assert not elsewhere.exists()


@pytest.mark.parametrize("what", ["database", "directory"])
def test_a_read_only_database_or_directory_answers_exactly_and_writes_nothing(tmp_path, what):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = str(folder / "s.db")
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "ada", "person/name": "Ada"})
        db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    target = path if what == "database" else str(folder)
    mode = os.stat(target).st_mode
    os.chmod(target, mode & ~0o222)
    try:
        with fgraph.connect(path, read_only=True) as db:
            assert figures(db) == plain(db.connection)
        # SQLite's own -wal and -shm aside (root opens them even here), nothing was written
        assert sorted(n for n in os.listdir(folder) if not n.endswith(("-wal", "-shm"))) == ["s.db"]
        assert not os.path.lexists(stats_cache.path_of(path))
    finally:
        os.chmod(target, mode)


def steps_of_info(db) -> int:
    steps = [0]

    def count() -> bool:
        steps[0] += 1
        return False
    db.connection.set_progress_handler(count, 1)
    try:
        db.info()
    finally:
        db.connection.set_progress_handler(None)
    return steps[0]


def test_the_file_is_written_again_only_after_many_transactions(tmp_path, monkeypatch):
    monkeypatch.setattr(stats_cache, "REWRITE_EVENTS", 3)
    path = str(tmp_path / "s.db")
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        figures(db)
        first = cache_document(path)["basis"]
        for k in range(2):
            db.transact({"id": f"n{k}", "n/v": k})
            assert figures(db) == plain(db.connection)
            assert cache_document(path)["basis"] == first
        db.transact({"id": "n3", "n/v": 3})
        assert figures(db) == plain(db.connection)
        assert cache_document(path)["basis"] == db.latest_tx()


def test_the_cost_of_info_follows_what_changed_not_the_history(tmp_path):
    costs = []
    for size in (300, 3000):
        path = str(tmp_path / f"s{size}.db")
        with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
            for k in range(size):
                db.transact({"id": f"n{k}", "n/v": k, "n/text": f"note {k}"})
            db.info()
            db.transact({"id": "late", "n/v": -1})
            costs.append(steps_of_info(db))
            assert figures(db) == plain(db.connection)
    small, large = costs
    assert large < 1.5 * small, costs


def test_counts_inside_a_speculation_are_exact_and_never_kept(tmp_path):
    path = str(tmp_path / "s.db")
    with fgraph.connect(path, clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "ada", "person/name": "Ada"})
        kept = cache_document(path) if figures(db) else None
        with db.speculate():
            db.transact({"id": "bob", "person/name": "Bob", "note/raw": {"bytes": "QUJD"}})
            assert figures(db) == plain(db.connection)
            assert cache_document(path) == kept
        assert figures(db) == plain(db.connection)
        assert cache_document(path) == kept
