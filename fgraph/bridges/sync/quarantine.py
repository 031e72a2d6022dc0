"""What a log consumer sets aside (issue 48 item 3, docs/replication.md "Foreign and unverifiable
messages (issue 48 item 3)").

A stream may carry messages that are no fgraph record (another application publishing on
``STREAM.>``, bytes that are not UTF-8, a subject that does not match its ``Fgraph-Store``) and
records this receiver cannot verify (unsigned, a stranger's key, an excision of what that store did
not bring: ``trust.Refused``). Neither may stall the fleet, so the consumer puts each in the
target's **quarantine** — ``<target>.sync-quarantine``, one per receiving store, since what one
receiver trusts another may not — acknowledges it in the log, and goes on with everything else.

- A foreign message is kept as its subject, sequence, size and a short preview: it can never apply.
- A refused fgraph record is kept whole (line, seal, predecessor) when it fits ``KEPT_LINE``, and
  every later run retries it first: a key accepted since (``--accept-key``) applies it, in order.
- Records that do not fit (``MAX_ENTRIES``, ``LIMIT``) are not acknowledged: they stay in the log
  and are refused again, as before the quarantine existed; nothing is ever lost.

``listing`` is what ``fgraph sync --to TARGET --quarantined`` prints and, with ``purge``, what
``--purge-quarantined`` drops. ``stalled`` is the error a one-shot run ends with when something was
refused or waits for a predecessor the log does not hold; ``judge`` and ``stuck`` tell a record
that cannot move (judged on its own, or behind one that cannot) from one only held behind another
in its batch, which a log delivering out of order may make applicable at the next fetch.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from fgraph.core.errors import FgraphError, FormatError, NotFound
from fgraph.core.files import read_sidecar, remove_sidecar, write_atomically
from fgraph.core.limits import MEMORY
from fgraph.core.sidecars import SYNC_QUARANTINE
from fgraph.bridges.sync.signing import Seal
from fgraph.bridges.sync.trust import refused_summary

FORMAT = "fgraph-sync-quarantine/1"
SUFFIX = SYNC_QUARANTINE
WHAT = "sync quarantine"
LIMIT = 64 << 20          # bytes the quarantine file may hold
KEPT_LINE = 1 << 20       # a refused record's line is kept (and retried) up to this size
MAX_ENTRIES = 10_000
PREVIEW = 120             # characters of a foreign message shown
KINDS = ("event", "excision", "remainder")
LIST_HINT = "`fgraph sync --to {target} --quarantined` lists them, `--purge-quarantined` drops them"


def not_a_record(stream: str, subject: str, headers, data: bytes) -> str:
    """Why a message of ``stream`` on ``subject`` with ``headers`` and ``data`` is no fgraph record
    ("" when it is one): what an adapter's ``fetch`` puts in ``Record.foreign``."""
    store, event, kind = headers.get("Fgraph-Store"), headers.get("Nats-Msg-Id"), headers.get("Fgraph-Kind", "event")
    if not isinstance(store, str) or not store or not isinstance(event, str) or not event:
        return "it has no Fgraph-Store and Nats-Msg-Id headers: another application published it"
    if kind not in KINDS:
        return f"its Fgraph-Kind {str(kind)[:40]!r} is none of {', '.join(KINDS)}"
    own = f"{stream}.{store}"
    if not (subject == own if kind == "event" else subject == f"{own}.excision" if kind == "excision"
            else subject.startswith(f"{own}.remainder.")):
        return f"its subject is not the one of the store its Fgraph-Store header names ({own})"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "its bytes are not UTF-8"
    return ""


def preview(data: bytes) -> str:
    return data[:PREVIEW].decode("utf-8", "backslashreplace")


def _seal(entry: dict) -> Seal | None:
    seal = entry.get("seal")
    if not isinstance(seal, dict) or not all(isinstance(seal.get(k), str) for k in ("key", "sig", "chain")):
        return None
    return Seal(seal["key"], seal["sig"], seal["chain"])


class Quarantine:
    """The quarantine of one receiving store (a path; ``:memory:`` keeps it in this object)."""

    def __init__(self, target: str):
        self.target = str(target)
        self.path = None if self.target == MEMORY else os.path.realpath(self.target) + SUFFIX
        self.entries: dict[str, dict] = {}
        raw = read_sidecar(self.path, WHAT, LIMIT) if self.path else None
        if raw is not None:
            try:
                document = json.loads(raw)
            except ValueError:
                document = None
            entries = document.get("entries") if isinstance(document, dict) else None
            if not isinstance(document, dict) or document.get("format") != FORMAT or not isinstance(entries, list) \
                    or not all(isinstance(e, dict) and isinstance(e.get("where"), str) for e in entries):
                raise FormatError(f"the {WHAT} {self.path!r} is not an fgraph {FORMAT} file",
                                  f"move it away (`fgraph sync --to {self.target} --purge-quarantined` removes it); "
                                  "the records it held are then refused or reported again")
            self.entries = {e["where"]: e for e in entries}
        self.size = len(raw or b"")

    def _save(self) -> None:
        if self.path is None:
            return
        if not self.entries:
            remove_sidecar(self.path, WHAT)
            self.size = 0
            return
        data = json.dumps({"format": FORMAT, "entries": list(self.entries.values())}, sort_keys=True,
                          indent=0).encode("utf-8") + b"\n"
        write_atomically(self.path, data, WHAT)
        self.size = len(data)

    def hold(self, items) -> list:
        """Set aside ``items`` (``(record, reason, error)``: ``reason`` "foreign" or "refused"); returns
        the records now in the quarantine (to acknowledge), the others did not fit."""
        held, changed = [], False
        for record, reason, error in items:
            key = record.where
            if key not in self.entries:
                entry = entry_of(record, reason, error)
                cost = len(json.dumps(entry)) + 16
                if len(self.entries) >= MAX_ENTRIES or self.size + cost > LIMIT \
                        or (reason == "refused" and "line" not in entry):
                    continue
                self.entries[key] = entry
                self.size += cost
                changed = True
            held.append(record)
        if changed:
            self._save()
        return held

    def release(self, records) -> None:
        """The records were applied at a retry: out of the quarantine."""
        gone = [r.where for r in records if r.where in self.entries]
        for key in gone:
            del self.entries[key]
        if gone:
            self._save()

    def retries(self, make_record) -> list:
        """The refused records kept whole, oldest first, as ``make_record(**fields)`` builds them
        (``log.Record``; no handle: the log acknowledged them already)."""
        kept = sorted((e for e in self.entries.values() if e.get("reason") == "refused" and "line" in e),
                      key=lambda e: (e.get("sequence") or 0, e["where"]))
        return [make_record(line=e["line"], event=e.get("event", ""), store=e.get("store", ""), prev=e.get("prev"),
                            kind=e.get("kind", "event"), seal=_seal(e), where=e["where"],
                            subject=e.get("subject", ""), sequence=e.get("sequence") or 0) for e in kept]

    def report(self) -> dict:
        shown = [{k: v for k, v in e.items() if k not in ("line", "seal")} for e in self.entries.values()]
        return {"target": self.target, "count": len(shown), "entries": shown}


def entry_of(record, reason: str, error: FgraphError | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"where": record.where, "subject": record.subject, "sequence": record.sequence,
                             "reason": reason, "at": round(time.time(), 3)}
    if reason == "foreign":
        entry.update(why=record.foreign, bytes=record.size, preview=record.line[:PREVIEW])
        return entry
    entry.update(store=record.store, event=record.event, kind=record.kind, prev=record.prev,
                 why=error.message if error is not None else "", hint=error.hint if error is not None else "")
    if len(record.line) <= KEPT_LINE:
        entry["line"] = record.line
        if record.seal is not None:
            entry["seal"] = {"key": record.seal.key, "sig": record.seal.sig, "chain": record.seal.chain}
    return entry


def listing(target: str, *, purge: bool = False) -> dict:
    """What ``target``'s consumer set aside (``fgraph sync --to TARGET --quarantined``); with
    ``purge``, drop it all (``--purge-quarantined``): foreign messages are then forgotten and refused
    records are no longer retried (the log acknowledged them already)."""
    if str(target) != MEMORY and not os.path.exists(str(target)):
        raise NotFound(f"the target {str(target)!r} does not exist", "name the store a `fgraph sync --from URL` fills")
    held = Quarantine(str(target))
    report = held.report()
    if purge:
        held.entries.clear()
        held._save()
        report["purged"] = report["count"]
    return report


def judge(waiting: dict, later: list) -> None:
    """Note the records a batch handed back: the first of each store was judged on its own (its
    predecessor is not in the target), the others of that store only held behind it."""
    first: dict = {}
    for record in later:
        judged = first.setdefault(record.store, record) is record
        waiting[record.where] = (record, judged or waiting.get(record.where, (None, False))[1])


def stuck(waiting: dict) -> dict:
    """Of the records handed back since the last progress, those that cannot move: judged on their
    own, or behind one that cannot (by ``prev``). One held only behind another may be applicable."""
    behind: dict = {}
    for where, (record, _) in waiting.items():
        behind.setdefault(record.prev, []).append(where)
    out = {where: record for where, (record, judged) in waiting.items() if judged}
    todo = [record.event for record in out.values()]
    while todo:
        for where in behind.get(todo.pop(), ()):
            if where not in out:
                out[where] = waiting[where][0]
                todo.append(out[where].event)
    return out


class Waiting(NotFound):
    """A one-shot consumer applied what it could; records wait for predecessors the log does not hold."""


def stalled(refused: list, waiting: list, target: str) -> FgraphError:
    """The error a one-shot run ends with: the records refused (``trust.Refused``s), then what waits
    for a missing predecessor (``log.Record``s deferred since the last progress)."""
    events = {r.event for r in waiting}
    roots = [r for r in waiting if r.prev not in events]
    said = "; ".join(f"store {r.store}'s event {r.event} ({r.where}) waits for its predecessor {r.prev}"
                     for r in roots[:3])
    more = f" (and {len(waiting) - min(len(roots), 3)} more records behind)" if len(waiting) > min(len(roots), 3) else ""
    if refused:
        error = refused_summary(refused, target)
        if waiting:
            error.message += f"; {said}{more}"
        error.hint = (refused[0].hint + "; the refused records were set aside in the target's quarantine, not "
                      "applied, and each later run retries them (a key accepted since applies them): "
                      + LIST_HINT.format(target=target))
        return error
    return Waiting(f"sync into {target!r} applied everything it could; {said}{more}, which the log does not hold",
                   "the predecessor was removed from the stream (max-age, a purge) or never published: publish the "
                   "source store into a new stream, or run with --follow to wait for it")
