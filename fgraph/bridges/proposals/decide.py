"""A person decides pending proposals: list them, accept a selection (applied to the store exactly
as reviewed), reject a selection; every decision lands in an audit file (issue 51,
docs/proposals.md P3–P6).

Protocol, all under the pending file's lock (so proposers and deciders interleave whole steps):

1. finish any unfinished decision (below), then read the pending records;
2. select, check the selection is closed (P4), its digest against ``--expect-digest`` and, for an
   accept, re-check it against the store by a dry run: a conflict is shown and nothing is written;
3. write the intent ``<FILE>.deciding``: the whole audit record (who, when, the digest, every
   decided record) and the audit file's size before it;
4. ``finish``: apply the accepted records' event lines, all or nothing, with the digest (apply is
   idempotent by event UUID, so doing it again is harmless); rewrite the pending file without the
   decided records; append the audit record at the recorded offset unless it is already there
   (a torn one is cut back first); remove the intent.

A ``kill -9`` anywhere leaves either no intent (nothing or everything done) or an intent that the
next ``fgraph proposals`` command finishes before anything else, so the store, the pending file and
the audit always agree: every proposal is pending, or accepted (in the store and the audit), or
rejected (in the audit only). If the store no longer takes an unfinished accept (it changed in
between), the decision is dropped and its records stay pending, which the command reports.
"""

from __future__ import annotations

import io
import os

from fgraph.bridges.proposals import records as _records
from fgraph.bridges.proposals.pending import ProposalFile
from fgraph.core.canonical import dumps_bytes, loads
from fgraph.core.errors import Conflict, FgraphError, FormatError, NotFound
from fgraph.core.files import read_sidecar, refuse_unsafe_target, remove_sidecar, write_atomically
from fgraph.core.limits import MAX_PROPOSALS_FILE_BYTES

DECISION_FORMAT = "proposal-decision/1"
INTENT_FORMAT = "proposal-intent/1"
AUDIT_SUFFIX = ".decided.ndjson"
INTENT_SUFFIX = ".deciding"
_INTENT_LIMIT = MAX_PROPOSALS_FILE_BYTES + 65536


def audit_path(path: str) -> str:
    return os.fspath(path) + AUDIT_SUFFIX


def intent_path(path: str) -> str:
    return os.fspath(path) + INTENT_SUFFIX


# -- the reviewed stream -------------------------------------------------------------------------
def reviewed_stream(chosen: list[dict]) -> bytes:
    """The event/1 stream a selection stands for: its records' event lines, in file order."""
    return b"".join(r["event"].encode("utf-8") + b"\n" for r in chosen)


def stream_digest(chosen: list[dict]) -> str:
    """``blake3:<hex>`` of the reviewed stream: what ``accept --expect-digest`` must be given."""
    from fgraph.streams.digest import formatted, hasher
    h = hasher()
    h.update(reviewed_stream(chosen))
    return formatted(h)


def select(pending: list[dict], ids: list[str], every: bool) -> list[dict]:
    """The pending records named by ``ids`` (or all of them), in file order."""
    if every:
        if ids:
            raise FormatError("--all and proposal ids were both given", "name the proposals, or pass --all alone")
        return list(pending)
    if not ids:
        raise FormatError("no proposal was named", "pass proposal ids (`fgraph proposals list FILE` shows them) or --all")
    known = {r["id"] for r in pending}
    missing = [i for i in dict.fromkeys(ids) if i not in known]
    if missing:
        raise NotFound(f"no pending proposal {', '.join(missing)} (decided already, or never proposed)",
                       "list the pending ones with `fgraph proposals list FILE`; decided ones are in "
                       "FILE.decided.ndjson")
    wanted = set(ids)
    return [r for r in pending if r["id"] in wanted]


def check_closed(pending: list[dict], chosen: list[dict], accepting: bool) -> None:
    """A proposal was planned on the store plus every proposal pending before it (P4): accepting
    one needs the earlier pending ones that touch the same entities accepted with it; rejecting one
    needs the later ones that touch its entities rejected with it."""
    chosen_ids = {r["id"] for r in chosen}
    order = pending if accepting else list(reversed(pending))
    missing: dict[str, str] = {}
    left_out: dict[str, list[str]] = {}      # entity -> ids of records before this one, not chosen
    for record in order:                     # one pass: linear in the entities touched
        touched = _records.event_entities(record) - _schema_names(record)
        if record["id"] in chosen_ids:
            for entity in touched:
                for other in left_out.get(entity, ()):
                    missing.setdefault(other, record["id"])
        else:
            for entity in touched:
                left_out.setdefault(entity, []).append(record["id"])
    if missing:
        shown = list(missing.items())[:20]
        pairs = ", ".join(f"{o} (for {r})" for o, r in shown)
        pairs += f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
        if accepting:
            raise Conflict(f"the selection leaves out earlier pending proposals it was planned on: {pairs}",
                           "accept those with it, or reject this one and let the agent propose again")
        raise Conflict(f"later pending proposals were planned on the ones rejected: {pairs}",
                       "reject those too, or accept the earlier ones first")


def _schema_names(record: dict) -> set[str]:
    """Attribute idents a record's event touches (an attribute declared on first use): shared by
    many proposals without one depending on another's values."""
    event = loads(record["event"])
    return {item[1] for key in ("asserted", "retracted") for item in event.get(key, ())}


# -- re-checking against the store ---------------------------------------------------------------
def recheck(db, chosen: list[dict]) -> list[dict]:
    """The conflicts applying the selection now would meet (nothing is written): what apply refuses,
    and a receiver value the proposal would replace that it did not plan on (the store changed)."""
    by_event = {loads(r["event"])["event"]: r for r in chosen}
    conflicts: list[dict] = []

    def on_report(report: dict) -> None:
        record = by_event.get(report.get("event"))
        if record is not None:
            conflicts.extend(_unplanned(record, report, basis))

    basis = db.latest_tx()
    try:
        summary = db.apply_summary(io.BytesIO(reviewed_stream(chosen)), dry_run=True, on_report=on_report)
    except FgraphError as exc:
        return [{"id": None, "message": str(exc)}]
    for item in summary.get("conflicts", ()):
        conflicts.append({"id": chosen[item["line"] - 1]["id"], "message": item["message"]})
    return conflicts


def _unplanned(record: dict, report: dict, basis: int) -> list[dict]:
    from fgraph.core import values
    event = loads(record["event"])
    explicit = [(e, a, _value(lambda v=v, t=t: values.from_tagged(v, t))) for e, a, v, t in event["retracted"]]
    found = []
    for fact in report.get("retracted", ()):
        if fact["tx"] > basis:
            continue   # written by an earlier event of this selection
        held = _value(lambda fact=fact: values.from_wire(fact["v"]))
        same = [x for x in explicit if x[1] == fact["a"] and (not isinstance(fact["e"], str) or x[0] == fact["e"])]
        if any(x[2] is None or held is None or x[2] == held for x in same):
            continue
        planned = "it planned to replace " + ", ".join(repr(x[2]) for x in same) if same else "it planned on none"
        found.append({"id": record["id"], "message": f"the store now holds {fact['e']!r} {fact['a']} = {held!r} "
                      f"(tx {fact['tx']}), which the proposal would replace; {planned}"})
    return found


def _value(make):
    """A comparable value, None for a ref (its wire forms differ: a name or eid, an entity id)."""
    from fgraph.core.values import RefWire
    try:
        value = make()
    except FgraphError:
        return None
    return None if isinstance(value, RefWire) or (isinstance(value, dict) and "ref" in value) else value


# -- the decision --------------------------------------------------------------------------------
def listing(db, path: str, ids: list[str] | None = None) -> dict:
    """The pending proposals (or those named), the digest accepting them needs, and any unfinished
    decision this call finished first."""
    pending_file = ProposalFile(path)
    with pending_file.lock():
        finished = finish_unfinished(db, pending_file)
        pending = pending_file.records()
    chosen = select(pending, list(ids or ()), not ids)
    latest = db.latest_tx()
    rows = [summary(r, latest) for r in chosen]
    return {"file": path, "pending": len(pending), "proposals": rows, "digest": stream_digest(chosen),
            "recovered": finished}


def summary(record: dict, latest: int) -> dict:
    """What a person needs to see of one proposal, without its whole event."""
    event = loads(record["event"])
    return {"id": record["id"], "tool": record["tool"], "by": record["by"], "source": record["source"],
            "client": record["client"], "session": record["session"], "basis_tx": record["basis_tx"],
            "stale": record["basis_tx"] < latest, "proposed_at": record["proposed_at"], "event": event["event"],
            "asserted": len(event["asserted"]), "retracted": len(event["retracted"]),
            "entities": sorted(_records.event_entities(record) - _schema_names(record))}


def decide(db, path: str, ids: list[str], *, every: bool = False, accept: bool, expect_digest: str | None = None,
           by: str | None = None, reason: str | None = None, decided_at: int | None = None) -> dict:
    """Accept (apply, with ``expect_digest``) or reject the selection; see the module's protocol.
    ``decided_at``: µs, by default the clock's reading (``FGRAPH_CLOCK`` when set)."""
    from fgraph.core.identity import clock_from_env, read_clock
    from fgraph.streams.digest import parse_digest
    if accept and expect_digest is None:
        raise FormatError("accept needs --expect-digest: the digest of the proposals you reviewed",
                          "run `fgraph review FILE --against DB` (or `fgraph proposals list FILE ID…`) and pass "
                          "the digest it prints")
    decided_at = read_clock(clock_from_env()) if decided_at is None else decided_at
    expected = parse_digest(expect_digest) if expect_digest is not None else None
    pending_file = ProposalFile(path)
    with pending_file.lock():
        finished = finish_unfinished(db, pending_file)
        pending = pending_file.records()
        chosen = select(pending, list(ids), every)
        check_closed(pending, chosen, accept)
        digest = stream_digest(chosen)
        if expected is not None and expected != digest:
            raise Conflict(f"the selected proposals have digest {digest}, not the reviewed {expected} (the file was "
                           "edited, or the selection differs from the one reviewed); nothing was decided",
                           "review again (`fgraph review FILE --against DB` or `fgraph proposals list FILE ID…`) "
                           "and pass the digest it prints")
        result = {"file": path, "recovered": finished, "digest": digest, "accepted": [], "rejected": [],
                  "conflicts": []}
        if accept:
            conflicts = recheck(db, chosen)
            if conflicts:
                return {**result, "conflicts": conflicts}
        pending_file.check_writable()
        refuse_unsafe_target(audit_path(path), "proposals audit")
        decision = {"fgraph": DECISION_FORMAT, "decided_by": by, "decided_at": decided_at, "reason": reason,
                    "store": os.path.abspath(db.path), "digest": digest if accept else None,
                    "accepted": chosen if accept else [], "rejected": [] if accept else chosen}
        decision["id"] = "d-" + _records.event_digest(dumps_bytes(decision))[len("blake3:"):][:24]
        intent = {"fgraph": INTENT_FORMAT, "audit_offset": _size(audit_path(path)), "decision": decision}
        write_atomically(intent_path(path), dumps_bytes(intent) + b"\n", "proposals decision intent")
        outcome = finish(db, pending_file, intent)
    return {**result, **outcome}


def finish_unfinished(db, pending_file: ProposalFile) -> dict | None:
    """Carry out the decision a killed command left in ``<FILE>.deciding``, if any (under the lock)."""
    raw = read_sidecar(intent_path(pending_file.path), "proposals decision intent", _INTENT_LIMIT)
    if raw is None:
        return None
    try:
        intent = loads(raw)
        if not isinstance(intent, dict) or intent.get("fgraph") != INTENT_FORMAT:
            raise FormatError("not an intent")
        for record in intent["decision"]["accepted"] + intent["decision"]["rejected"]:
            _records.check(record)
    except (FgraphError, KeyError, TypeError) as exc:
        raise FormatError(f"the unfinished decision {intent_path(pending_file.path)!r} cannot be read ({exc})",
                          "it was damaged or edited: compare the store, the pending file and the audit by hand, "
                          "then remove it") from None
    return finish(db, pending_file, intent)


def finish(db, pending_file: ProposalFile, intent: dict) -> dict:
    """Steps 4 of the protocol; each may already be done (a recovery): each is done at most once."""
    from fgraph.streams.digest import DigestReader
    decision = intent["decision"]
    decided = decision["accepted"] + decision["rejected"]
    applied = None
    if decision["accepted"]:
        stream = io.BytesIO(reviewed_stream(decision["accepted"]))
        try:
            applied = db.apply_summary(DigestReader(stream, decision["digest"], what="accepted proposals"))
        except FgraphError as exc:
            return _drop(pending_file, decision, exc)
    keys = {(r["id"], r["event_digest"]) for r in decided}
    pending = pending_file.records()
    kept = [r for r in pending if (r["id"], r["event_digest"]) not in keys]
    if len(kept) != len(pending):
        pending_file.replace(kept)
    _append_once(audit_path(pending_file.path), dumps_bytes(decision) + b"\n", intent["audit_offset"])
    remove_sidecar(intent_path(pending_file.path), "proposals decision intent")
    return {"decision": decision["id"], "accepted": [r["id"] for r in decision["accepted"]],
            "rejected": [r["id"] for r in decision["rejected"]], "applied": applied}


def _drop(pending_file: ProposalFile, decision: dict, exc: FgraphError) -> dict:
    """An unfinished accept the store no longer takes: its records stay (or are put back) pending."""
    pending = pending_file.records()
    present = {(r["id"], r["event_digest"]) for r in pending}
    back = [r for r in decision["accepted"] + decision["rejected"] if (r["id"], r["event_digest"]) not in present]
    if back:
        pending_file.replace(pending + back)
    remove_sidecar(intent_path(pending_file.path), "proposals decision intent")
    return {"decision": None, "accepted": [], "rejected": [], "applied": None,
            "dropped": {"id": decision["id"], "message": str(exc)}}


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:
        return 0


def _append_once(path: str, line: bytes, offset: int) -> None:
    """Append ``line`` to the audit at ``offset`` unless it is already there; a torn copy of it (a
    kill mid-append) is cut back first. Anything else past ``offset`` is someone else's: refused."""
    from fgraph.core.files import append_sidecar, os_failure
    if _size(path) > offset:
        try:
            with open(path, "rb+", opener=lambda p, f: os.open(p, f | getattr(os, "O_NOFOLLOW", 0))) as handle:
                handle.seek(offset)
                there = handle.read(len(line) + 1)
                if there == line:
                    return
                if not line.startswith(there):
                    raise Conflict(f"the proposals audit {path!r} changed after byte {offset} while a decision was "
                                   "being recorded",
                                   "restore it from a copy, or remove its last lines by hand, then retry")
                handle.truncate(offset)
        except OSError as exc:
            raise os_failure(exc, path, "proposals audit") from None
    append_sidecar(path, line, "proposals audit")
