"""Page-level damage (issue 29): one byte of a small database is changed, in every class of page
SQLite keeps — the file header, the schema, each b-tree of fgraph's tables and indexes (leaf,
interior and overflow pages: event payload text, facts, blobs, the identity registry), the
full-text index and the freelist — and then ``doctor`` and every read run on the damaged copy.

Each damage must be *reported* (doctor exits 1) or *harmless* (doctor is content and every read
prints exactly what it printed before the damage). Neither a traceback, an internal error, a
hang, nor a silent change (doctor content, a read printing something else) is allowed. A read may
fail on reported damage, but only with a typed error, having printed at most a prefix of what it
printed before (a stream stops at the damaged event). ``make test`` changes one byte per class,
``make torture`` twelve.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter, defaultdict

import apsw
import pytest

import fgraph
from tests.support.clock import stepping_clock
from tests.support.torture import cli, is_typed_failure, report, rng, size

RESULTS: Counter = Counter()
READS = (
    ("doctor",), ("info",), ("info", "--digest"), ("tail", "--since", "64"), ("snapshot",), ("get", "person-1"),
    ("get", "doc"), ("history", "person-2"), ("search", "--text", "café"), ("schema",), ("context",),
    ("datoms", "eavt", "--limit", "1000"), ("datoms", "avet", "--components", '["t/n"]'), ("why", "person-4"),
    ("diff", "64", "0s"), ("q", '{"find":["?e","?n"],"where":[["?e","t/name","?n"]]}'),
)
PER_READ_SECONDS = 60


def _page_class(name: str, pagetype: str) -> str:
    """The class of a page, by the object it belongs to."""
    if name.startswith("fgraph_fts"):
        return "fts"
    if name == "sqlite_schema":
        return "schema"
    if name in ("fgraph_events", "fgraph_facts", "fgraph_blobs"):
        return f"{name.removeprefix('fgraph_')}-{pagetype}"   # overflow pages hold long payloads and blobs
    if name in ("fgraph_ids", "fgraph_meta", "sqlite_sequence"):
        return "registry"
    return "index"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A small store with every kind of page: long event payloads (overflow), indirect text and bytes
    in blobs, full-text rows, a retraction, an excised (redacted) event, and a freelist."""
    root = tmp_path_factory.mktemp("page-damage")
    path = str(root / "base.db")
    with fgraph.connect(path, clock=stepping_clock()) as db:
        db.transact([{"id": f"person-{i}", "t/name": f"Person number {i} likes café", "t/n": i,
                      "t/bio": "long biography text " * 30 + str(i)} for i in range(30)])
        db.transact([{"id": "doc", "t/blob": {"bytes": "QUJD" * 200}}])
        db.transact([{"id": "secret", "t/n": -1}])
        for i in range(10):
            db.transact([{"id": f"person-{i}", "t/n": i + 100}])
        db.retract("person-3", "t/name")
        db.excise("secret")
    conn = apsw.Connection(path)
    conn.execute("CREATE TABLE scratch (x)")
    for _ in range(20):
        conn.execute("INSERT INTO scratch VALUES (randomblob(3000))")
    conn.execute("DROP TABLE scratch")   # its pages go to the freelist (no auto-vacuum)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    classes: dict[str, list[tuple[int, int]]] = defaultdict(list)
    used = set()
    for name, page, pagetype in conn.execute("SELECT name, pageno, pagetype FROM dbstat"):
        start = (page - 1) * page_size + (100 if page == 1 else 0)
        classes[_page_class(name, pagetype)].append((start, page * page_size))
        used.add(page)
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] > 0
    conn.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    pages = os.path.getsize(path) // page_size
    classes["freelist"] = [((p - 1) * page_size, p * page_size) for p in range(1, pages + 1) if p not in used]
    classes["header"] = [(0, 100)]
    baseline = {args: _read(path, args) for args in READS}
    assert baseline[("doctor",)][0] == 0 and all(outcome[0] == 0 for outcome in baseline.values()), baseline
    return root, path, dict(classes), baseline


def _read(path: str, args: tuple[str, ...]) -> tuple[int, str, str]:
    return cli("--db", path, "--json", *args, timeout=PER_READ_SECONDS)


def _damage(source: str, target: str, offset: int, mask: int) -> None:
    shutil.copyfile(source, target)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(target + suffix):
            os.unlink(target + suffix)
    with open(target, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ mask]))


def test_every_class_of_page_damage_is_reported_or_harmless(store):
    root, path, classes, baseline = store
    random = rng("page-damage")
    counts = Counter()
    assert {"header", "schema", "events-leaf", "events-overflow", "facts-leaf", "blobs-leaf", "registry", "index",
            "fts", "freelist"} <= set(classes), sorted(classes)
    for page_class in sorted(classes):
        for trial in range(size(1, 12)):
            start, end = random.choice(classes[page_class])
            offset, mask = random.randrange(start, end), random.randrange(1, 256)
            target = str(root / f"{page_class}-{trial}.db")
            _damage(path, target, offset, mask)
            where = f"{page_class} byte {offset} ^ {mask:#04x}"
            outcomes = {args: _read(target, args) for args in READS}
            for args, (code, out, err) in outcomes.items():
                assert "Traceback" not in err and "internal error" not in err, f"{where}: {' '.join(args)}: {err}"
                if code and args != ("doctor",):
                    # a stream stops at the damage: what it printed before is what it printed undamaged
                    assert is_typed_failure(code, "", err) and baseline[args][1].startswith(out), \
                        f"{where}: {' '.join(args)} exited {code}: {err[:300]}"
                    # what the file now says (a damaged name is not found), never a misleading complaint
                    assert err.startswith(("FormatError: ", "NotFound: ")), \
                        f"{where}: {' '.join(args)} exited {code}: {err[:300]}"
                assert code in (0, 1), f"{where}: {' '.join(args)} exited {code}: {err[:300]}"
            reported = outcomes[("doctor",)][0] != 0
            changed = [" ".join(args) for args in READS if args != ("doctor",) and outcomes[args] != baseline[args]]
            assert reported or not changed, f"{where}: doctor found nothing, but {changed} changed"
            counts["reported" if reported else "harmless"] += 1
            counts["reads_typed_failure"] += sum(1 for args in READS if args != ("doctor",) and outcomes[args][0])
            counts["reads"] += len(READS)
            os.unlink(target)
    RESULTS.update(counts)
    report("page-damage", counts, classes=len(classes))
