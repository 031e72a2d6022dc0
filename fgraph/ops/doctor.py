"""doctor: every invariant of format v2, checked read-only in linear time (spec 06 §3, 01 §9).

``check(conn)`` returns the 13-key report and works on any handle: read-only, immutable, or
inside the caller's open write transaction (restore runs it before COMMIT). ``run(conn,
repair=True)`` additionally rebuilds the full-text index and deletes orphaned blobs in one
write transaction, and only when nothing else is wrong.

Cost: a few set-based SQL passes (full scans, GROUP BY over existing indexes, EXCEPT) and one
streaming Python pass over the event payloads merged with the registry in ``created_tx``
order. No per-fact round trips; memory holds only per-attribute schema, the redacted tx ids
and at most ``MAX_LINES`` problem lines per kind.

Size: over budget until it is split by job (physical checks, logical checks, repair,
report — issue 11 item 7, not done yet).
"""

from __future__ import annotations

import hashlib
import re

import apsw
import orjson

from fgraph.core import layout, values
from fgraph.ops.doctor_support import (EXCISION_KEYS, EXPECTED_FTS, FACT_SCAN, FTS_DRIFT, MAX_LINES, ORPHAN_FILTER,
                                   ORPHANS, REPORT_KEYS, VALID_TX, CanonicalParser, _BlobCheck,
                                   _IntegrityThread, _json_check, _key, _uuid, _well_formed,
                                   integrity_rows)
from fgraph.core.errors import FgraphError, FormatError, ReadOnly, ValueTypeError
from fgraph.core.genesis import (A_AT, A_BY, A_DIMS, A_EXCISED, A_IMPORTED_AT, A_MANY, A_META, A_SHAPE, A_SHAPE_ALLOWED,
                            A_SHAPE_CLOSED, A_SHAPE_REQUIRED, A_SOURCE, A_TYPE, A_UNIQUE, A_VECTOR_MODEL, SYSTEM_MAX,
                            genesis_event, system_identities)
from fgraph.core.identity import GENESIS_EVENT, anonymous_eid, uuid_to_gid
from fgraph.core.constraints import TYPE_TAGS
from fgraph.core.names import ATTRIBUTE_RE
from fgraph.streams.snapshot import logical_digest
from fgraph.core.txn import read_transaction, write_transaction
from fgraph.core.rows import Rows
from fgraph.ops import scrub
from fgraph.core.limits import GENESIS_TX, INT64_MAX, UUID_RE, is_subsequence


SCHEMA_ATTRIBUTE_IDS = ", ".join(str(a) for a in (A_MANY, A_UNIQUE, A_TYPE, A_DIMS, A_VECTOR_MODEL))


class _Doctor:


    """One pass of every check of spec 06 §3 over one read transaction."""
    def __init__(self, conn: apsw.Connection):
        self.conn = conn
        self.q = conn.execute
        self.problems: list[str] = []
        self.repairable: set[str] = set()
        self.lines: dict[str, int] = {}
        self.report = {"expected_fts_rows": 0, "fts_rows": 0, "fts_rows_rebuilt": 0, "integrity": "ok",
                       "orphaned_blobs": 0, "orphaned_blobs_removed": 0, "repaired": False, "schema_problems": 0,
                       "shape_violations": 0, "unverifiable_event_hashes": 0}
        self.parse = CanonicalParser()
        try:
            conn.create_scalar_function("fgraph_doctor_json", _json_check(), 1, deterministic=True)
            conn.create_scalar_function("fgraph_doctor_blob", _BlobCheck(), 3, deterministic=True)
        except apsw.BusyError:  # statements of this connection are running: keep the registered ones
            pass

    # -- recording --------------------------------------------------------------------
    def count(self, label: str, n) -> None:
        if n:
            self.problems.append(f"{label}: {int(n)}")

    def line(self, kind: str, text: str) -> None:
        """One problem line of a per-event kind, at most MAX_LINES of each kind."""
        seen = self.lines[kind] = self.lines.get(kind, 0) + 1
        if seen <= MAX_LINES:
            self.problems.append(text)

    def one(self, sql: str, args=()):
        return self.q(sql, args).fetchone()

    # -- the checks, in the order of spec 06 §3.3 --------------------------------------
    def run(self, expect_digest: str | None = None, parallel: "_IntegrityThread | None" = None) -> dict:
        if parallel is None:
            self.integrity(integrity_rows(self.conn))
        if self.layout():
            try:
                for step in (self.identities, self.facts, self.transactions, self.events, self.genesis,
                             self.attributes, self.blobs, self.schema, self.shapes, self.agreement, self.derived):
                    step()
                if expect_digest is not None:
                    self.digest(expect_digest)
            except apsw.Error as exc:
                self.problems.append(f"checks stopped: SQLite could not read the file ({exc})")
        for kind, seen in self.lines.items():
            if seen > MAX_LINES:
                self.problems.append(f"{kind}: {seen - MAX_LINES} more not listed")
        if parallel is not None:
            rows = parallel.result()
            self.integrity(rows if rows is not None else integrity_rows(self.conn))
        return self.finish()

    def integrity(self, rows: list) -> None:
        """First; a damaged file is still checked as far as it can be read (a read error stops the run)."""
        first = str(rows[0][0]) if rows else "no result"
        self.report["integrity"] = first
        if first != "ok":
            self.problems.insert(0, f"SQLite integrity check failed: {first.splitlines()[-1][:300]}")

    def layout(self) -> bool:
        try:
            markers = (self.one("PRAGMA application_id")[0], self.one("PRAGMA user_version")[0])
            if markers != (layout.APPLICATION_ID, layout.USER_VERSION):
                self.problems.append(f"markers application_id={markers[0]}, user_version={markers[1]} "
                                     "are not format v2")
                return False
            layout.validate_objects(self.q("SELECT type, name, sql FROM sqlite_schema").fetchall(), "the file")
            return True
        except FormatError as exc:
            self.problems.append(f"layout differs from format v2: {exc.message}")
        except apsw.Error as exc:
            self.problems.append(f"layout could not be read: {exc}")
        return False

    def identities(self) -> None:
        meta = {k: v for k, v in self.q("SELECT key, value FROM fgraph_meta")}
        self.meta = meta
        extra = sorted(set(meta) - {"next_id", "created_at"})
        if extra:
            self.problems.append(f"unexpected fgraph_meta keys: {extra}")
        self.count("invalid identity ids", self.one(
            "SELECT count(*) FROM fgraph_ids WHERE id <= 0 OR id BETWEEN 19 AND 63 OR typeof(id) <> 'integer'")[0])
        expected = {row["id"]: (row["name"], None, GENESIS_TX) for row in system_identities()}
        found = {i: (n, g, c) for i, n, g, c in self.q(
            "SELECT id, name, gid, created_tx FROM fgraph_ids WHERE id BETWEEN 1 AND 18 OR name GLOB 'fgraph/*'")}
        bad = sum(1 for i, row in expected.items() if found.get(i) != row)
        bad += sum(1 for i in found if i not in expected)
        self.count("invalid system identities", bad)
        if self.one("SELECT name, gid, created_tx FROM fgraph_ids WHERE id = ?", (GENESIS_TX,)) != \
                (None, uuid_to_gid(GENESIS_EVENT), GENESIS_TX):
            self.problems.append("genesis event identity is not the canonical format-v2 UUID")
        self.count("named identities overlap transaction receipts", self.one(
            "SELECT count(*) FROM fgraph_events ev JOIN fgraph_ids i ON i.id = ev.tx WHERE i.name IS NOT NULL")[0])

    def facts(self) -> None:
        (n, max_e, max_a, max_tx, max_rx, max_ref, max_id, bad_ids, intervals, tags, physical, fts,
         missing_blobs) = self.one(FACT_SCAN)
        self.missing_blobs = missing_blobs
        self.report["expected_fts_rows"] = fts or 0
        used = [x for x in (max_e, max_a, max_tx, max_rx, max_ref) if isinstance(x, int)]
        used += [x for x in self.one("SELECT max(id), max(created_tx) FROM fgraph_ids") if isinstance(x, int)]
        used += [x for x in self.one("SELECT max(tx) FROM fgraph_events") if isinstance(x, int)]
        expected, found = max(used) + 1, self.meta.get("next_id")
        if found != expected or isinstance(found, bool):
            self.problems.append(f"next_id: expected {expected}, found {found!r}")
        elif found >= INT64_MAX:
            self.problems.append("identity allocator is exhausted")
        seq = self.one("SELECT seq FROM sqlite_sequence WHERE name = 'fgraph_facts'")
        if seq is None or not isinstance(seq[0], int) or seq[0] < (max_id or 0):
            self.problems.append(f"sqlite_sequence for fgraph_facts is behind the largest fact id {max_id}")
        self.count("invalid fact identifiers", bad_ids)
        self.count("invalid transaction intervals", intervals)
        self.tags, self.physical = tags, physical

    def _groups(self, sql: str, every: bool = False):
        """(key, facts, first tx, missing row, created_tx, name) of a GROUP BY; only offending ones unless ``every``."""
        offending = "" if every else " WHERE i.id IS NULL OR i.created_tx > g.first"
        return self.q(f"SELECT g.k, g.n, g.first, i.id IS NULL, i.created_tx, i.name FROM ({sql}) g "
                      f"LEFT JOIN fgraph_ids i ON i.id = g.k{offending}").fetchall()

    def transactions(self) -> None:
        missing, predate = 0, 0
        for column, sql in (
                ("e", "SELECT e AS k, count(*) AS n, min(tx) AS first FROM fgraph_facts GROUP BY e"),
                ("v", "SELECT v AS k, count(*) AS n, min(tx) AS first FROM fgraph_facts WHERE t = 0 GROUP BY v")):
            for k, n, first, gone, created, _ in self._groups(sql):
                if gone:
                    missing += n
                elif created > first:
                    predate += self.one(f"SELECT count(*) FROM fgraph_facts WHERE {column} = ? AND tx < ?"
                                        + (" AND t = 0" if column == "v" else ""), (k, created))[0]
        self.attr_groups = self._groups(
            "SELECT a AS k, count(*) AS n, min(tx) AS first FROM fgraph_facts GROUP BY a", every=True)
        for k, n, first, gone, created, _ in self.attr_groups:
            if gone:
                missing += n
            elif created > first:
                predate += self.one("SELECT count(*) FROM fgraph_facts WHERE a = ? AND tx < ?", (k, created))[0]
        for column, name in (("tx", "asserting"), ("rx", "retracting")):
            where = "WHERE rx IS NOT NULL " if column == "rx" else ""
            rows = self.q(f"SELECT g.k, g.n, EXISTS (SELECT 1 FROM fgraph_ids i WHERE i.id = g.k) FROM "
                          f"(SELECT {column} AS k, count(*) AS n FROM fgraph_facts {where}GROUP BY {column}) g "
                          f"WHERE NOT ({VALID_TX.format('g.k')})").fetchall()
            missing += sum(n for _, n, known in rows if not known)
            self.count(f"facts reference missing {name} transactions", sum(n for _, n, _ in rows))
        self.count("facts reference missing identity registry rows", missing)
        self.count("facts predate their identity registry rows", predate)
        self.count("identity rows reference missing creation transactions", self.one(
            "SELECT total(g.n) FROM (SELECT created_tx AS k, count(*) AS n FROM fgraph_ids GROUP BY created_tx) g "
            f"WHERE NOT ({VALID_TX.format('g.k')})")[0])
        mismatches = self.one(
            "SELECT count(*) FROM fgraph_events ev LEFT JOIN fgraph_ids i ON i.id = ev.tx WHERE i.id IS NULL "
            f"OR i.gid IS NULL OR i.created_tx <> ev.tx OR NOT ({VALID_TX.format('ev.tx')})")[0]
        mismatches += self.one(f"SELECT count(*) FROM fgraph_facts r WHERE r.a = {A_AT} AND r.e = r.tx AND NOT EXISTS "
                               "(SELECT 1 FROM fgraph_events ev WHERE ev.tx = r.tx)")[0]
        self.count("transaction event registry mismatches", mismatches)

    # -- events: payloads, redactions, created lists, derived eids (one streaming pass) --------
    def events(self) -> None:
        ids = self.q(f"SELECT created_tx, id, name, gid FROM fgraph_ids WHERE created_tx > {GENESIS_TX} "
                     "ORDER BY created_tx, id")
        pending = next(ids, None)
        self.redacted: list[int] = []
        self.covered: set[int] = set()
        self.anonymous_bad = self.created_bad = 0
        for tx, event_hash, text, uuid, at, imported, excision in self.q(
                "SELECT ev.tx, ev.event_hash, ev.event_data, i.gid, "
                f"(SELECT v FROM fgraph_facts r INDEXED BY fgraph_hist WHERE r.e = ev.tx AND r.a = {A_AT} "
                "AND r.tx = ev.tx ORDER BY r.rx IS NOT NULL LIMIT 1), "
                f"(SELECT v FROM fgraph_facts r INDEXED BY fgraph_hist WHERE r.e = ev.tx AND r.a = {A_IMPORTED_AT} "
                "AND r.tx = ev.tx LIMIT 1), "
                f"EXISTS (SELECT 1 FROM fgraph_facts r INDEXED BY fgraph_hist WHERE r.e = ev.tx AND r.a = {A_EXCISED} "
                "AND r.tx = ev.tx) "
                "FROM fgraph_events ev LEFT JOIN fgraph_ids i ON i.id = ev.tx ORDER BY ev.tx"):
            created = []
            while pending is not None and pending[0] <= tx:
                if pending[0] == tx and pending[1] != tx:
                    created.append(pending[1:])
                pending = next(ids, None)
            self.event(tx, event_hash, text, _uuid(uuid), at, imported, bool(excision), created)
        self.count("invalid event-derived anonymous identities", self.anonymous_bad)
        self.count("identities disagree with the created list of their event", self.created_bad)
        self.report["unverifiable_event_hashes"] = len(self.redacted)
        for tx in self.redacted:
            if tx not in self.covered:
                self.line("NULL payloads without an excision", f"event {tx} has a NULL payload without an "
                          "audited excision redaction")

    def event(self, tx, event_hash, text, uuid, at, imported, excision, created) -> None:
        if text is None:
            self.redacted.append(tx)
            if imported is None and uuid is not None and created:
                first = created[0][0]
                self.anonymous_bad += sum(1 for i, _, g in created
                                          if g is not None and g != anonymous_eid(uuid, i - first))
            if excision:
                self.line("excisions without payload", f"excision transaction {tx} does not carry a canonical "
                          "redaction payload")
            return
        bad = f"event {tx} payload is invalid: event {uuid}"
        if not isinstance(text, str) or hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest() != event_hash:
            return self.line("invalid payloads", f"{bad} hash differs from its stored canonical payload")
        doc = self.parse(text)
        if doc is None:
            return self.line("invalid payloads", f"{bad} payload is not a canonical JSON object")
        if uuid is None or doc.get("event") != uuid or doc.get("fgraph") != "event/1" or not _well_formed(doc):
            return self.line("invalid payloads", f"{bad} payload has invalid identity or required fields")
        if doc["at"] != (imported if imported is not None else at):
            self.line("invalid payloads", f"event {tx} payload is invalid: event at timestamp differs from its "
                      "transaction receipt")
        if tx == GENESIS_TX:
            if text != genesis_event(doc["at"]):
                self.line("invalid payloads", f"{bad} is not the format-v2 genesis event")
            return
        if "redacted" in doc or "redacts" in doc:
            return self.redaction(tx, doc, excision, bad)
        if excision:
            self.line("excisions without payload", f"excision transaction {tx} does not carry a canonical "
                      "redaction payload")
        self.created(doc, uuid, created, imported is not None)

    def created(self, doc: dict, uuid: str, created: list, applied: bool) -> None:
        listed = doc["created"]
        local = [name if name is not None else {"eid": _uuid(g)} for _, name, g in created]
        if (local != listed) if not applied else not is_subsequence(local, listed):
            self.created_bad += 1
        anonymous = [g for _, name, g in created if name is None]
        if anonymous:
            index = {sel["eid"]: k for k, sel in enumerate(listed) if isinstance(sel, dict)}
            for g in anonymous:
                k = index.get(_uuid(g))
                if k is None or anonymous_eid(uuid, k) != g:
                    self.anonymous_bad += 1

    def redaction(self, tx: int, doc: dict, excision: bool, bad: str) -> None:
        if not excision:
            return self.line("redactions without excision", f"redacted event {tx} has no audited fgraph/excised marker")
        targets = doc.get("redacts")
        if set(doc) != EXCISION_KEYS or doc["redacted"] is not True or doc["asserted"] or doc["created"] \
                or doc["retracted"] or not isinstance(targets, list) or targets != sorted(set(targets)) \
                or not all(isinstance(u, str) and UUID_RE.match(u) for u in targets):
            return self.line("invalid payloads", f"{bad} has a malformed excision redaction payload")
        for target in targets:
            row = self.one("SELECT ev.tx, ev.event_data IS NULL FROM fgraph_ids i JOIN fgraph_events ev "
                           "ON ev.tx = i.id WHERE i.gid = ?", (uuid_to_gid(target),))
            if row is None or row[0] >= tx:
                self.line("invalid redactions", f"redacted event {tx} names unknown or non-prior event {target}")
            elif not row[1]:
                self.line("invalid redactions", f"redacted event {tx} names event {target}, whose payload is intact")
            else:
                self.covered.add(row[0])

    def genesis(self) -> None:
        rows = self.q("SELECT id, e, a, v, t, tx, rx FROM fgraph_facts WHERE id <= 39 ORDER BY id").fetchall()
        created_at = rows[0][3] if rows and rows[0][0] == 1 else None
        expected = [(1, 64, A_AT, created_at, 5, 64, None)]
        system = system_identities()
        expected += [(1 + k, r["id"], A_TYPE, r["type"], 4, 64, None) for k, r in enumerate(system, 1)]
        expected += [(19 + k, r["id"], 10, r["doc"], 4, 64, None) for k, r in enumerate(system, 1)]
        expected += [(38, 16, A_MANY, 1, 1, 64, None), (39, 17, A_MANY, 1, 1, 64, None)]
        found = {row[0]: row for row in rows}
        bad = sum(1 for row in expected if found.get(row[0]) != row or not isinstance(row[3], int) and row[0] == 1)
        bad += self.one("SELECT count(*) FROM fgraph_facts WHERE tx = 64 AND id > 39")[0]
        self.count("invalid genesis facts", bad)
        if self.meta.get("created_at") != created_at or created_at is None:
            self.problems.append(f"created_at: expected genesis timestamp {created_at}, found "
                                 f"{self.meta.get('created_at')!r}")

    def attributes(self) -> None:
        self.count("dangling attributes", sum(n for _, n, _, gone, _, _ in self.attr_groups if gone))
        self.count("invalid fact attributes", sum(n for _, n, _, _, _, name in self.attr_groups
                                                  if not isinstance(name, str) or not ATTRIBUTE_RE.match(name)))
        self.count("invalid value tags", self.tags)
        self.count("invalid physical values", self.physical)

    def blobs(self) -> None:
        self.count("missing blobs", self.missing_blobs)
        self.count("invalid indirect blobs", self.one(
            "SELECT count(DISTINCT b.hash) FROM fgraph_facts f JOIN fgraph_blobs b ON b.hash = f.v "
            "WHERE f.t IN (7, 8, 9) AND NOT fgraph_doctor_blob(f.t, b.hash, b.data)")[0])

    # -- schema and shapes ------------------------------------------------------------------
    def schema(self) -> None:
        decl: dict[int, dict] = {}
        for e, a, v, t in self.q(f"SELECT e, a, v, t FROM fgraph_facts WHERE a IN ({SCHEMA_ATTRIBUTE_IDS}) AND rx IS NULL"):
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
                problems += self.one(f"SELECT count(*) FROM fgraph_facts WHERE a = ? AND rx IS NULL AND t NOT IN "
                                     f"({tags})", (attr,))[0]
            if d.get(A_UNIQUE, (0,))[0] == 1:
                problems += self.one("SELECT count(*) FROM (SELECT 1 FROM fgraph_facts WHERE a = ? AND rx IS NULL "
                                     "GROUP BY t, v HAVING count(*) > 1)", (attr,))[0]
            if kind == "vector" and dims is not None and dims[1] == 2:
                problems += self.one("SELECT count(*) FROM fgraph_facts f JOIN fgraph_blobs b ON b.hash = f.v WHERE "
                                     "f.a = ? AND f.t = 7 AND f.rx IS NULL AND length(b.data) <> ?",
                                     (attr, 4 * dims[0]))[0]
        for a, n in self.q("SELECT a, count(*) FROM (SELECT e, a FROM fgraph_facts INDEXED BY fgraph_eavt WHERE "
                           "rx IS NULL GROUP BY e, a HAVING count(*) > 1) GROUP BY a"):
            if decl.get(a, {}).get(A_MANY, (0,))[0] != 1:
                problems += n
        self.report["schema_problems"] = problems
        self.count("schema invariants violated", problems)

    def shapes(self) -> None:
        violations, cache = 0, {}
        for e, shape in self.q("SELECT e, v FROM fgraph_facts WHERE a = ? AND t = 0 AND rx IS NULL", (A_SHAPE,)):
            if shape not in cache:
                spec = {a: {v for (v,) in self.q("SELECT v FROM fgraph_facts INDEXED BY fgraph_eavt WHERE e = ? AND a = ? "
                                                 "AND rx IS NULL",
                                                 (shape, a))} for a in (A_SHAPE_REQUIRED, A_SHAPE_ALLOWED, A_SHAPE_CLOSED)}
                cache[shape] = spec
                if len(cache) > 1024:
                    cache.pop(next(iter(cache)))
            spec = cache[shape]
            present = {a for (a,) in self.q("SELECT DISTINCT a FROM fgraph_facts INDEXED BY fgraph_eavt WHERE e = ? AND rx IS NULL",
                                         (e,))}
            violations += len(spec[A_SHAPE_REQUIRED] - present)
            if 1 in spec[A_SHAPE_CLOSED]:
                allowed = spec[A_SHAPE_REQUIRED] | spec[A_SHAPE_ALLOWED]
                violations += sum(1 for a in present if a > SYSTEM_MAX and a not in allowed)
        self.report["shape_violations"] = violations
        self.count("shape invariants violated", violations)

    # -- facts agree with their events (our addition; restore checks the same, decision 7) ----------
    def agreement(self) -> None:
        """Every fact is listed by the event that asserted it, and by the event that retracted it.

        Two streaming passes: facts in fact-id order (the order of their asserting transactions),
        then retracted facts in ``rx`` order, so each payload is parsed once per pass. Facts are
        rendered as their snapshot renders them (selectors joined in SQL); redacted payloads prove
        nothing and are skipped.
        """
        bad = self.agree("f.tx", f"f.tx > {GENESIS_TX} ORDER BY f.id", asserting=True)
        bad += self.agree("f.rx", f"f.rx IS NOT NULL AND f.tx > {GENESIS_TX} ORDER BY f.rx", asserting=False)
        self.count("facts disagree with the events that asserted or retracted them", bad)

    def agree(self, column: str, where: str, asserting: bool) -> int:
        bad, current, sets = 0, None, None
        for en, eg, an, v, t, blob, vn, vg, tx, e, a in self.q(
                f"SELECT ie.name, ie.gid, ia.name, f.v, f.t, b.data, iv.name, iv.gid, {column}, f.e, f.a "
                "FROM fgraph_facts f LEFT JOIN fgraph_ids ie ON ie.id = f.e LEFT JOIN fgraph_ids ia ON ia.id = f.a "
                "LEFT JOIN fgraph_ids iv ON f.t = 0 AND iv.id = f.v "
                f"LEFT JOIN fgraph_blobs b ON f.t IN (7, 8, 9) AND b.hash = f.v WHERE {where}"):
            if tx != current:
                current, sets = tx, self.payload_sets(tx, asserting)
            if sets is None or (asserting and e == tx and a in (A_AT, A_IMPORTED_AT)):
                continue
            try:
                selector = en if en is not None else {"eid": _uuid(eg)}
                tag = values.logical_name(t)
                value = values.render(t, v, blob, lambda _: vn if vn is not None else {"eid": _uuid(vg)})
                if not asserting:
                    ok = _key([selector, an, value, tag]) in sets["retracted"] or \
                        _key([selector, an]) in sets["replaced"]()
                elif e != tx:
                    ok = _key([selector, an, value, tag]) in sets["asserted"]
                elif a == A_EXCISED and sets["excision"]:
                    ok = True
                elif a in (A_BY, A_SOURCE, A_META):
                    ok = _key([value]) == sets[a]
                else:
                    ok = _key([an, value, tag]) in sets["tx_facts"]
            except (FgraphError, ValueError):  # stored bytes that do not decode; a bug (TypeError …) is raised
                ok = False
            bad += not ok
        return bad

    def payload_sets(self, tx: int, asserting: bool):
        row = self.one("SELECT event_data FROM fgraph_events WHERE tx = ?", (tx,))
        try:
            doc = orjson.loads(row[0]) if row is not None and isinstance(row[0], str) else None
            if not isinstance(doc, dict) or not _well_formed(doc):
                return None
            if not asserting:
                replaced = []

                def lazily():
                    if not replaced:
                        replaced.append({_key(x[:2]) for x in doc["asserted"] if isinstance(x, list)})
                    return replaced[0]
                return {"retracted": {_key(x) for x in doc["retracted"]}, "replaced": lazily}
            return {"asserted": {_key(x) for x in doc["asserted"]},
                    "tx_facts": {_key(x) for x in doc.get("tx_facts", ())}, "excision": "redacts" in doc,
                    A_BY: _key([doc["by"]]) if "by" in doc else None,
                    A_SOURCE: _key([doc["source"]]) if "source" in doc else None,
                    A_META: _key([{"json": doc["meta"]}]) if "meta" in doc else None}
        except (FgraphError, TypeError, ValueError, orjson.JSONDecodeError):
            return None

    # -- derived data: the repairable classes -------------------------------------------------
    def derived(self) -> None:
        self.report["fts_rows"] = self.one("SELECT count(*) FROM fgraph_fts")[0]
        drift = self.one(f"SELECT (SELECT count(*) FROM ({EXPECTED_FTS} EXCEPT SELECT rowid, text FROM fgraph_fts)) + "
                         f"(SELECT count(*) FROM (SELECT rowid, text FROM fgraph_fts EXCEPT {EXPECTED_FTS}))")[0]
        if drift or self.report["fts_rows"] != self.report["expected_fts_rows"]:
            self.problems.append(FTS_DRIFT)
            self.repairable.add(FTS_DRIFT)
        orphans = self.one(f"SELECT count(*) FROM fgraph_blobs WHERE {ORPHAN_FILTER}")[0]
        self.report["orphaned_blobs"] = orphans
        if orphans:
            self.problems.append(f"{ORPHANS}{orphans}")
            self.repairable.add(f"{ORPHANS}{orphans}")

    def digest(self, expected: str) -> None:
        found = logical_digest(self.conn)
        if found != expected:
            basis = self.one("SELECT max(tx) FROM fgraph_events")[0]
            self.problems.append(f"logical digest differs: expected {expected}, found {found} at basis tx {basis}")

    def finish(self) -> dict:
        report = dict(self.report, problems=list(self.problems), ok=not self.problems,
                      repair_needed=bool(self.repairable))
        return {key: report[key] for key in REPORT_KEYS}


def normalise_digest(digest) -> str:
    text = digest.lower().removeprefix("sha256:") if isinstance(digest, str) else ""
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise ValueTypeError(f"expected digest {digest!r} is not 64 hex digits",
                             "pass the digest printed by `fgraph backup` or `fgraph info --digest`")
    return text


def check(conn: apsw.Connection, *, expect_digest: str | None = None, second_handle=None) -> dict:
    """The doctor report; read-only. Runs in the caller's transaction, or in one read transaction of its own.

    ``second_handle``: a callable opening another read-only connection to the same file; the
    physical integrity check then runs on it in a thread while the logical checks run here.
    """
    expected = None if expect_digest is None else normalise_digest(expect_digest)
    with read_transaction(conn):
        parallel = None
        if second_handle is not None:
            parallel = _IntegrityThread(second_handle)
            parallel.start()
        try:
            return _Doctor(conn).run(expected, parallel)
        finally:
            if parallel is not None:
                parallel.join()


SCRUB_PENDING = "excision scrub pending"


def is_repairable(problem: str) -> bool:
    return problem == FTS_DRIFT or problem.startswith(ORPHANS) or problem.startswith(SCRUB_PENDING)


def with_pending_scrub(report: dict, pending: dict | None) -> dict:
    """An excision whose on-disk scrub could not finish (a reader held the WAL) is a repairable problem."""
    if pending is None:
        return report
    report = dict(report)
    report["problems"] = report["problems"] + [
        f"{SCRUB_PENDING} since transaction {pending.get('tx')}: erased bytes may remain in the file or its WAL"]
    report.update(ok=False, repair_needed=True)
    return report


def examine(conn: apsw.Connection, path: str, repair: bool = False, *, expect_digest: str | None = None,
            second_handle=None) -> dict:
    """``run`` for a database file: a repair first finishes an excision's owed scrub, and a scrub
    still owed afterwards is a repairable problem of the report."""
    if repair and scrub.pending(path) is not None:
        scrub.scrub(conn, path, None)
    report = run(conn, repair, expect_digest=expect_digest, second_handle=second_handle)
    return with_pending_scrub(report, scrub.pending(path))


def run(conn: apsw.Connection, repair: bool = False, *, expect_digest: str | None = None,
        second_handle=None) -> dict:
    """``check``, or with ``repair`` the repair of 06 §3.1 in one write transaction, then the repaired report."""
    if not repair:
        return check(conn, expect_digest=expect_digest, second_handle=second_handle)
    if conn.readonly("main") or conn.execute("PRAGMA query_only").fetchone()[0]:
        raise ReadOnly("doctor --repair needs a writable database", "open it writable (not read-only)")
    with write_transaction(conn):
        before = check(conn)
        fatal = [p for p in before["problems"] if not is_repairable(p)]
        if fatal:
            raise FormatError(f"doctor found non-rebuildable format problems {fatal!r}",
                              "restore from a verified backup (`fgraph restore-backup`) or a snapshot")
        writer = Rows(conn)
        writer.clear_fts()
        writer.index_texts(f"{EXPECTED_FTS} ORDER BY f.id")
        rebuilt = conn.changes()
        writer.delete_blobs_where(ORPHAN_FILTER)
        removed = conn.changes()
        conn.execute("ANALYZE")
        after = check(conn, expect_digest=expect_digest)
        if any(not is_repairable(p) for p in after["problems"]) or after["repair_needed"]:
            raise FormatError(f"the repair did not leave a sound file {after['problems']!r}",
                              "restore from a verified backup")
        after.update(repaired=True, fts_rows_rebuilt=rebuilt, orphaned_blobs_removed=removed)
    return after


ADVICE_REPAIR = "repairable: run `fgraph --db PATH doctor --repair`"
ADVICE_RESTORE = ("not repairable in place: keep this file for analysis and restore from a verified backup "
                  "(`fgraph restore-backup BACKUP DEST`) or a snapshot")
ADVICE_DIGEST = "the file does not hold the expected state: take a new backup and compare its digest"


def describe(report: dict) -> str:
    """Human output: a verdict line, then one problem per line with what to do."""
    counts = (f"integrity {report['integrity']}; full-text rows {report['fts_rows']}/{report['expected_fts_rows']}; "
              f"orphaned blobs {report['orphaned_blobs']}; schema problems {report['schema_problems']}; shape "
              f"violations {report['shape_violations']}; redacted events {report['unverifiable_event_hashes']}")
    lines = []
    if report["repaired"]:
        lines.append(f"repaired: rebuilt {report['fts_rows_rebuilt']} full-text rows, removed "
                     f"{report['orphaned_blobs_removed']} orphaned blobs")
    if report["ok"]:
        lines.append(f"ok: no problems found ({counts})")
        return "\n".join(lines)
    lines.append(f"NOT OK: {len(report['problems'])} problem(s) ({counts})")
    for problem in report["problems"]:
        advice = (ADVICE_REPAIR if is_repairable(problem) else
                  ADVICE_DIGEST if problem.startswith("logical digest differs") else ADVICE_RESTORE)
        lines.append(f"problem: {problem} -> {advice}")
    return "\n".join(lines)
