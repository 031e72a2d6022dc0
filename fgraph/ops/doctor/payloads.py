"""Logical checks of the event log: every payload is the canonical event/1 its hash says,
redactions are audited excisions, each event's ``created`` list matches the identity
registry, and every fact is listed by the events that asserted and retracted it.

One pass streams the payloads in transaction order, merged with the registry in
``created_tx`` order and with the two fact walks of ``agreement`` (facts against the parsed
payload of their transaction, our addition; restore checks the same, decision 7), so each
payload is read and parsed once. Memory holds one payload's sets and the redacted tx ids.
"""

from __future__ import annotations

import hashlib
import json

import orjson

from fgraph.core.canonical import format_float
from fgraph.core.errors import FgraphError
from fgraph.core.genesis import A_AT, A_EXCISED, A_IMPORTED_AT, genesis_event
from fgraph.core.identity import anonymous_eid, uuid_to_gid
from fgraph.core.limits import GENESIS_TX, UUID_RE, is_subsequence
from fgraph.core.payload import damage, payload_bytes, stored_text
from fgraph.ops.doctor.agreement import EXCISION_KEYS, FactWalk, Payload, first_disagreement
from fgraph.ops.doctor.agreement import uuid_text as _uuid, well_formed as _well_formed


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


# -- payloads, redactions, created lists, derived eids --------------------------------------
class _EventPass:
    """State of the one streaming pass over ``fgraph_events``."""

    def __init__(self, c):
        self.c, self.findings = c, c.findings
        self.parse = CanonicalParser()
        self.redacted: list[int] = []
        self.covered: set[int] = set()
        self.anonymous_bad = self.created_bad = 0

    def event(self, tx, event_hash, text, uuid, at, imported, excision, created) -> None:
        line = self.findings.line
        if text is None:
            self.redacted.append(tx)
            if imported is None and uuid is not None and created:
                first = created[0][0]
                self.anonymous_bad += sum(1 for i, _, g in created
                                          if g is not None and g != anonymous_eid(uuid, i - first))
            if excision:
                line("events", "excisions without payload", f"excision transaction {tx} does not carry a canonical "
                     "redaction payload")
            return
        bad = f"event {tx} payload is invalid: event {uuid}"
        if not isinstance(text, str):  # bytes that are not UTF-8 (``stored_text``)
            return line("events", "invalid payloads", f"{bad} payload {damage(text, event_hash)}")
        if hashlib.sha256(text.encode("utf-8")).digest() != event_hash:
            return line("events", "invalid payloads", f"{bad} hash differs from its stored canonical payload")
        doc = self.parse(text)
        if doc is None:
            return line("events", "invalid payloads", f"{bad} payload is not a canonical JSON object")
        if uuid is None or doc.get("event") != uuid or doc.get("fgraph") != "event/1" or not _well_formed(doc):
            return line("events", "invalid payloads", f"{bad} payload has invalid identity or required fields")
        if doc["at"] != (imported if imported is not None else at):
            line("events", "invalid payloads", f"event {tx} payload is invalid: event at timestamp differs from "
                 "its transaction receipt")
        if tx == GENESIS_TX:
            if text != genesis_event(doc["at"]):
                line("events", "invalid payloads", f"{bad} is not the format-v2 genesis event")
            return
        if "redacted" in doc or "redacts" in doc:
            return self.redaction(tx, doc, excision, bad)
        if excision:
            line("events", "excisions without payload", f"excision transaction {tx} does not carry a canonical "
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
        line = self.findings.line
        if not excision:
            return line("events", "redactions without excision",
                        f"redacted event {tx} has no audited fgraph/excised marker")
        targets = doc.get("redacts")
        if set(doc) != EXCISION_KEYS or doc["redacted"] is not True or doc["asserted"] or doc["created"] \
                or doc["retracted"] or not isinstance(targets, list) or targets != sorted(set(targets)) \
                or not all(isinstance(u, str) and UUID_RE.match(u) for u in targets):
            return line("events", "invalid payloads", f"{bad} has a malformed excision redaction payload")
        for target in targets:
            row = self.c.one("SELECT ev.tx, ev.event_data IS NULL FROM fgraph_ids i JOIN fgraph_events ev "
                             "ON ev.tx = i.id WHERE i.gid = ?", (uuid_to_gid(target),))
            if row is None or row[0] >= tx:
                line("events", "invalid redactions", f"redacted event {tx} names unknown or non-prior event {target}")
            elif not row[1]:
                line("events", "invalid redactions", f"redacted event {tx} names event {target}, whose payload is intact")
            else:
                self.covered.add(row[0])


def events(c) -> None:
    """Every payload, merged with the identity rows each transaction created, in one pass."""
    ids = c.q(f"SELECT created_tx, id, name, gid FROM fgraph_ids WHERE created_tx > {GENESIS_TX} "
              "ORDER BY created_tx, id")
    pending = next(ids, None)
    state = _EventPass(c)
    asserting = FactWalk(c, asserting=True) if c.worker is None else None  # else the worker walks them
    retracting = FactWalk(c, asserting=False)
    for tx, event_hash, data, uuid, at, imported, excision in c.q(
            f"SELECT ev.tx, ev.event_hash, {payload_bytes('ev.event_data')}, i.gid, "
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
        text = stored_text(data)
        state.event(tx, event_hash, text, _uuid(uuid), at, imported, bool(excision), created)
        payload = Payload(text)
        if asserting is not None:
            asserting.upto(tx, payload)
        retracting.upto(tx, payload)
    c.disagreeing_facts = retracting.finish()
    c.first_retracted = retracting.first
    c.first_asserted = None
    if asserting is not None:
        c.disagreeing_facts += asserting.finish()
        c.first_asserted = asserting.first
    c.findings.count("registry", "invalid event-derived anonymous identities", state.anonymous_bad)
    c.findings.count("registry", "identities disagree with the created list of their event", state.created_bad)
    c.figures["unverifiable_event_hashes"] = len(state.redacted)
    for tx in state.redacted:
        if tx not in state.covered:
            c.findings.line("events", "NULL payloads without an excision",
                            f"event {tx} has a NULL payload without an audited excision redaction")


# -- facts agree with their events ----------------------------------------------------------------
def agreement(c) -> None:
    """Every fact is listed by the event that asserted it, and by the event that retracted it;
    counted by the walks of ``events`` (``fgraph.ops.doctor.agreement``)."""
    if c.worker is not None:
        found = c.worker.asserted()
        if found is None:  # the worker failed: walk the asserted facts here
            walk = FactWalk(c, asserting=True)
            found = walk.finish(), walk.first
        c.disagreeing_facts += found[0]
        c.first_asserted = found[1]
    if c.disagreeing_facts:
        c.findings.add("agreement", "facts disagree with the events that asserted or retracted them: "
                       f"{c.disagreeing_facts}", detail=first_disagreement(c.first_asserted, c.first_retracted))
