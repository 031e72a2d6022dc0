"""Logical checks: the identity registry and allocator, transactions and receipts, genesis,
attributes, the declared schema and shapes (spec 06 §3.3, second half; the event log is
``payloads``).

All set-based SQL: GROUP BY over existing indexes and counts, no per-fact round trips. Memory
holds the per-attribute schema and at most 1,024 shape specs.
"""

from __future__ import annotations

from fgraph.core.values import TYPE_TAGS
from fgraph.core.genesis import (A_AT, A_DIMS, A_MANY, A_SHAPE, A_SHAPE_ALLOWED, A_SHAPE_CLOSED, A_SHAPE_REQUIRED,
                                 A_TYPE, A_UNIQUE, A_VECTOR_MODEL, SYSTEM_MAX, system_identities)
from fgraph.core.identity import GENESIS_EVENT, uuid_to_gid
from fgraph.core.limits import GENESIS_TX
from fgraph.core.names import ATTRIBUTE_RE
from fgraph.core.values import TAG_INSTANT

SCHEMA_ATTRIBUTE_IDS = ", ".join(str(a) for a in (A_MANY, A_UNIQUE, A_TYPE, A_DIMS, A_VECTOR_MODEL))
# A transaction id is valid when it has an event row and its live fgraph/at receipt.
VALID_TX = ("EXISTS (SELECT 1 FROM fgraph_events vev WHERE vev.tx = {0}) AND EXISTS (SELECT 1 FROM fgraph_facts vr INDEXED BY "
            f"fgraph_hist WHERE vr.e = {{0}} AND vr.a = {A_AT} AND vr.tx = {{0}} AND vr.t = {TAG_INSTANT} AND vr.rx IS NULL)")


def identities(c) -> None:
    meta = {k: v for k, v in c.q("SELECT key, value FROM fgraph_meta")}
    c.meta = meta
    found = c.findings
    extra = sorted(set(meta) - {"next_id", "created_at"})
    if extra:
        found.add("registry", f"unexpected fgraph_meta keys: {extra}")
    found.count("registry", "invalid identity ids", c.one(
        "SELECT count(*) FROM fgraph_ids WHERE id <= 0 OR id BETWEEN 19 AND 63 OR typeof(id) <> 'integer'")[0])
    expected = {row["id"]: (row["name"], None, GENESIS_TX) for row in system_identities()}
    rows = {i: (n, g, t) for i, n, g, t in c.q(
        "SELECT id, name, gid, created_tx FROM fgraph_ids WHERE id BETWEEN 1 AND 18 OR name GLOB 'fgraph/*'")}
    bad = sum(1 for i, row in expected.items() if rows.get(i) != row)
    bad += sum(1 for i in rows if i not in expected)
    found.count("registry", "invalid system identities", bad)
    if c.one("SELECT name, gid, created_tx FROM fgraph_ids WHERE id = ?", (GENESIS_TX,)) != \
            (None, uuid_to_gid(GENESIS_EVENT), GENESIS_TX):
        found.add("registry", "genesis event identity is not the canonical format-v2 UUID")
    found.count("registry", "named identities overlap transaction receipts", c.one(
        "SELECT count(*) FROM fgraph_events ev JOIN fgraph_ids i ON i.id = ev.tx WHERE i.name IS NOT NULL")[0])


def _groups(c, sql: str, every: bool = False):
    """(key, facts, first tx, missing row, created_tx, name) of a GROUP BY; only offending ones unless ``every``."""
    offending = "" if every else " WHERE i.id IS NULL OR i.created_tx > g.first"
    return c.q(f"SELECT g.k, g.n, g.first, i.id IS NULL, i.created_tx, i.name FROM ({sql}) g "
               f"LEFT JOIN fgraph_ids i ON i.id = g.k{offending}").fetchall()


def transactions(c) -> None:
    """Every fact's entity, ref, attribute and transactions exist, and existed when it was asserted."""
    missing, predate = 0, 0
    for k, n, first, gone, created, _ in _groups(
            c, "SELECT e AS k, count(*) AS n, min(tx) AS first FROM fgraph_facts GROUP BY e"):
        if gone:
            missing += n
        elif created > first:
            predate += c.one("SELECT count(*) FROM fgraph_facts WHERE e = ? AND tx < ?", (k, created))[0]
    # Refs are counted fact by fact (no index leads with v for every ref: grouping them would
    # build a temporary B-tree as large as the store's refs).
    missing += c.one("SELECT count(*) FROM fgraph_facts f LEFT JOIN fgraph_ids i ON i.id = f.v "
                     "WHERE f.t = 0 AND i.id IS NULL")[0]
    predate += c.one("SELECT count(*) FROM fgraph_facts f JOIN fgraph_ids i ON i.id = f.v "
                     "WHERE f.t = 0 AND i.created_tx > f.tx")[0]
    c.attr_groups = _groups(c, "SELECT a AS k, count(*) AS n, min(tx) AS first FROM fgraph_facts GROUP BY a",
                            every=True)
    for k, n, first, gone, created, _ in c.attr_groups:
        if gone:
            missing += n
        elif created > first:
            predate += c.one("SELECT count(*) FROM fgraph_facts WHERE a = ? AND tx < ?", (k, created))[0]
    found = c.findings
    for column, name in (("tx", "asserting"), ("rx", "retracting")):
        where = "WHERE rx IS NOT NULL " if column == "rx" else ""
        rows = c.q(f"SELECT g.k, g.n, EXISTS (SELECT 1 FROM fgraph_ids i WHERE i.id = g.k) FROM "
                   f"(SELECT {column} AS k, count(*) AS n FROM fgraph_facts {where}GROUP BY {column}) g "
                   f"WHERE NOT ({VALID_TX.format('g.k')})").fetchall()
        missing += sum(n for _, n, known in rows if not known)
        found.count("facts", f"facts reference missing {name} transactions", sum(n for _, n, _ in rows))
    found.count("registry", "facts reference missing identity registry rows", missing)
    found.count("registry", "facts predate their identity registry rows", predate)
    found.count("registry", "identity rows reference missing creation transactions", c.one(
        "SELECT total(g.n) FROM (SELECT created_tx AS k, count(*) AS n FROM fgraph_ids GROUP BY created_tx) g "
        f"WHERE NOT ({VALID_TX.format('g.k')})")[0])
    mismatches = c.one(
        "SELECT count(*) FROM fgraph_events ev LEFT JOIN fgraph_ids i ON i.id = ev.tx WHERE i.id IS NULL "
        f"OR i.gid IS NULL OR i.created_tx <> ev.tx OR NOT ({VALID_TX.format('ev.tx')})")[0]
    mismatches += c.one(f"SELECT count(*) FROM fgraph_facts r WHERE r.a = {A_AT} AND r.e = r.tx AND NOT EXISTS "
                        "(SELECT 1 FROM fgraph_events ev WHERE ev.tx = r.tx)")[0]
    found.count("registry", "transaction event registry mismatches", mismatches)


def genesis(c) -> None:
    """The 39 genesis facts are exactly the format-v2 ones, and created_at is their timestamp."""
    rows = c.q("SELECT id, e, a, v, t, tx, rx FROM fgraph_facts WHERE id <= 39 ORDER BY id").fetchall()
    created_at = rows[0][3] if rows and rows[0][0] == 1 else None
    g = GENESIS_TX
    expected = [(1, g, A_AT, created_at, 5, g, None)]
    system = system_identities()
    expected += [(1 + k, r["id"], A_TYPE, r["type"], 4, g, None) for k, r in enumerate(system, 1)]
    expected += [(19 + k, r["id"], 10, r["doc"], 4, g, None) for k, r in enumerate(system, 1)]
    expected += [(38, 16, A_MANY, 1, 1, g, None), (39, 17, A_MANY, 1, 1, g, None)]
    found = {row[0]: row for row in rows}
    bad = sum(1 for row in expected if found.get(row[0]) != row or not isinstance(row[3], int) and row[0] == 1)
    bad += c.one(f"SELECT count(*) FROM fgraph_facts WHERE tx = {GENESIS_TX} AND id > 39")[0]
    c.findings.count("genesis", "invalid genesis facts", bad)
    if c.meta.get("created_at") != created_at or created_at is None:
        c.findings.add("genesis", f"created_at: expected genesis timestamp {created_at}, found "
                       f"{c.meta.get('created_at')!r}")


def attributes(c) -> None:
    c.findings.count("facts", "dangling attributes", sum(n for _, n, _, gone, _, _ in c.attr_groups if gone))
    c.findings.count("facts", "invalid fact attributes", sum(
        n for _, n, _, _, _, name in c.attr_groups if not isinstance(name, str) or not ATTRIBUTE_RE.match(name)))


def schema(c) -> None:
    """Live schema facts are well-typed and every live fact obeys its attribute's declaration."""
    decl: dict[int, dict] = {}
    for e, a, v, t in c.q(f"SELECT e, a, v, t FROM fgraph_facts WHERE a IN ({SCHEMA_ATTRIBUTE_IDS}) AND rx IS NULL"):
        decl.setdefault(e, {})[a] = (v, t)
    problems = 0
    for attr, d in decl.items():
        kind = d.get(A_TYPE, (None,))[0]
        if A_TYPE in d and (d[A_TYPE][1] != 4 or kind not in TYPE_TAGS):
            problems += 1
            kind = None
        if any(flag in d and d[flag][1] != 1 for flag in (A_MANY, A_UNIQUE)):
            problems += 1
        dims = d.get(A_DIMS)
        if dims is not None and (dims[1] != 2 or kind != "vector" or dims[0] <= 0):
            problems += 1
        if d.get(A_UNIQUE, (0,))[0] == 1 and kind in (None, "json", "vector"):
            problems += 1
        if A_VECTOR_MODEL in d and kind != "vector":
            problems += 1
        if kind is not None:
            tags = ",".join(map(str, TYPE_TAGS[kind]))
            problems += c.one(f"SELECT count(*) FROM fgraph_facts WHERE a = ? AND rx IS NULL AND t NOT IN "
                              f"({tags})", (attr,))[0]
        if d.get(A_UNIQUE, (0,))[0] == 1:
            problems += c.one("SELECT count(*) FROM (SELECT 1 FROM fgraph_facts WHERE a = ? AND rx IS NULL "
                              "GROUP BY t, v HAVING count(*) > 1)", (attr,))[0]
        if kind == "vector" and dims is not None and dims[1] == 2:
            problems += c.one("SELECT count(*) FROM fgraph_facts f JOIN fgraph_blobs b ON b.hash = f.v WHERE "
                              "f.a = ? AND f.t = 7 AND f.rx IS NULL AND length(b.data) <> ?",
                              (attr, 4 * dims[0]))[0]
    for a, n in c.q("SELECT a, count(*) FROM (SELECT e, a FROM fgraph_facts INDEXED BY fgraph_eavt WHERE "
                    "rx IS NULL GROUP BY e, a HAVING count(*) > 1) GROUP BY a"):
        if decl.get(a, {}).get(A_MANY, (0,))[0] != 1:
            problems += n
    c.figures["schema_problems"] = problems
    c.findings.count("schema", "schema invariants violated", problems)


def shapes(c) -> None:
    """Every entity with a live fgraph/shape has its required attributes and, if closed, no others."""
    violations, cache = 0, {}
    for e, shape in c.q("SELECT e, v FROM fgraph_facts WHERE a = ? AND t = 0 AND rx IS NULL", (A_SHAPE,)):
        if shape not in cache:
            cache[shape] = {a: {v for (v,) in c.q("SELECT v FROM fgraph_facts INDEXED BY fgraph_eavt WHERE e = ? "
                                                 "AND a = ? AND rx IS NULL", (shape, a))}
                            for a in (A_SHAPE_REQUIRED, A_SHAPE_ALLOWED, A_SHAPE_CLOSED)}
            if len(cache) > 1024:
                cache.pop(next(iter(cache)))
        spec = cache[shape]
        present = {a for (a,) in c.q("SELECT DISTINCT a FROM fgraph_facts INDEXED BY fgraph_eavt WHERE e = ? "
                                     "AND rx IS NULL", (e,))}
        violations += len(spec[A_SHAPE_REQUIRED] - present)
        if 1 in spec[A_SHAPE_CLOSED]:
            allowed = spec[A_SHAPE_REQUIRED] | spec[A_SHAPE_ALLOWED]
            violations += sum(1 for a in present if a > SYSTEM_MAX and a not in allowed)
    c.figures["shape_violations"] = violations
    c.findings.count("shapes", "shape invariants violated", violations)
