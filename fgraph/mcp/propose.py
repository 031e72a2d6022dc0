"""The tools of ``fgraph mcp --propose FILE`` (issue 51 items 1 and 2; decisions M10 and M11 in
docs/mcp.md): the write tools plan each call exactly as ``--write`` would and append it to FILE
as one proposal/1 record, pending a person's review; the store is never written.

Each write call, under the proposals file's lock: the planning copy (``fgraph.mcp.planning``) is
brought up to date (rebuilt when the store moved or the file was rewritten, the lines other
servers appended applied), the call runs through the very tool code of ``--write``
(``fgraph.mcp.tools.Tools``) on the copy, and the event line the commit produced there is
appended with the agent's provenance. A call the store would refuse is refused now, with the
same typed error; an identical repeated call answers the pending proposal's id and appends
nothing. The read tools answer from the store; ``about``, ``why`` and ``history`` add
``pending`` to the envelope (the ids of pending proposals touching the entity), ``recall`` to
each hit, so an agent does not propose the same change twice.
"""

from __future__ import annotations

import secrets

from fgraph.bridges.proposals.pending import ProposalFile
from fgraph.bridges.proposals.records import encode, event_entities, make_record, proposal_id
from fgraph.core.checks import is_strict_int
from fgraph.core.canonical import loads
from fgraph.core.errors import Conflict, FormatError, NotFound
from fgraph.core.identity import read_clock
from fgraph.core.limits import MCP_ABOUT_DEPTH, MCP_PAGE_LIMIT, MCP_RECALL_K
from fgraph.mcp.planning import PlanningCopy, entity_keys
from fgraph.mcp.tools import Tools, envelope

PROPOSED = "proposed"
REVIEW = "pending review: nothing was written to the store; a person accepts or rejects it (fgraph proposals)"
PROPOSING_TOOLS = ("remember", "forget", "undo")


def new_session() -> str:
    """An id for one proposing server's session, recorded with each of its proposals."""
    return "s-" + secrets.token_hex(8)


class ProposingTools(Tools):
    """``Tools`` whose write tools propose: reads from the read-only store, writes planned on the copy."""

    def __init__(self, db, proposals: str, *, embed=None, clock=None, session: str | None = None):
        super().__init__(db, embed=embed)
        self.file = ProposalFile(proposals)
        self.copy = PlanningCopy(db, clock=clock)
        self.session = session or new_session()
        self.records: list[dict] = []            # the pending proposals, in file order
        self._read = self._rewritten = False     # the file read once; rewritten since the copy was built
        self._offset = 0                         # the end of the last line read
        self._applied = 0                        # how many of ``records`` the copy holds

    def check(self) -> None:
        """Read the proposals file once at start-up, so a link, FIFO, directory or broken line is
        refused before a client connects."""
        with self.lock, self.file.lock():
            self._sync()

    # -- the pending proposals ------------------------------------------------------
    def _sync(self) -> None:
        """Bring ``records`` up to date (under the file lock): the lines appended since the last
        look are added; a rewrite (a decision) is read again from the start and marks the copy for
        a rebuild. The last record read must still be where it was: a rewrite only removes
        records, so a removal before it or of it shows there; neither the inode nor the size
        tells, since a rewrite's file may take the inode number the old one freed and another
        server's append may restore the size a removal took away."""
        if self._read:
            if not self.records and self._offset == 0:
                self.records, self._offset = self.file.records_after(0)
                return
            last = self.records[-1]
            start = self._offset - len(encode(last))
            found: list[dict] = []
            if self.file.stamp()[1] >= self._offset:
                try:
                    found, end = self.file.records_after(start)
                except FormatError:   # that offset is no longer the start of a line
                    found = []
            if found and found[0] == last:
                self.records.extend(found[1:])
                self._offset = end
                return
        self.records, self._offset = self.file.records_after(0)
        self._read, self._rewritten = True, True

    def _planning_db(self):
        self._sync()
        if self._rewritten or self.copy.stale():
            self.copy.rebuild(self.records)
            self._rewritten = False
        else:
            self.copy.apply(self.records[self._applied:])
        self._applied = len(self.records)
        return self.copy.db

    def pending(self) -> list[dict]:
        """The pending proposals as the file holds them now."""
        with self.file.lock():
            self._sync()
        return self.records

    def touching(self, selector) -> list[str]:
        """The ids of pending proposals whose event touches the entity ``selector`` names."""
        records = self.pending()
        if not records:
            return []
        with self.lock:   # the store's connection serves one call at a time
            keys = entity_keys(self.db, selector)
        return [record["id"] for record in records if keys & event_entities(record)]

    # -- writes: proposals ------------------------------------------------------------
    def remember(self, by: str, operation_id: str, facts=None, text=None, source=None, key=None,
                 if_basis_tx=None) -> dict:
        return self._propose("remember", by, dict(operation_id=operation_id, facts=facts, text=text, source=source,
                                                  key=key, if_basis_tx=if_basis_tx))

    def forget(self, by: str, entity, operation_id: str, if_basis_tx: int, attribute=None, value=None) -> dict:
        return self._propose("forget", by, dict(entity=entity, operation_id=operation_id, if_basis_tx=if_basis_tx,
                                                attribute=attribute, value=value))

    def undo(self, by: str, tx: int, operation_id: str, if_basis_tx: int) -> dict:
        return self._propose("undo", by, dict(tx=tx, operation_id=operation_id, if_basis_tx=if_basis_tx))

    def _propose(self, tool: str, by: str, call: dict) -> dict:
        arguments = {name: value for name, value in call.items() if value is not None}
        pid = proposal_id(tool, arguments)
        with self.lock, self.file.lock():
            db = self._planning_db()
            known = next((record for record in self.records if record["id"] == pid), None)
            if known is not None:
                return self._repeated(known)
            _check_operation_id(self.records, arguments.get("operation_id"))
            planned = dict(call, if_basis_tx=self._basis_guard(call.get("if_basis_tx"), db.latest_tx()))
            answer = getattr(Tools(db, embed=self.embed), tool)(by=by, **planned)
            data = answer["data"]
            if data.get("status") != "applied":   # nothing to change, or this operation_id is pending already
                return answer
            try:
                record = make_record(tool=tool, arguments=arguments, by=by, source=call.get("source"),
                                     client=by[len("mcp:"):] or None, session=self.session,
                                     basis_tx=self.copy.store_tx, proposed_at=read_clock(self.copy.clock),
                                     event_line=self.copy.event_line(data["tx"]))
                self.file.append(record)
            except BaseException:
                self.copy.invalidate()   # the planned transaction stays out of the copy
                raise
            self.records.append(record)
            self._offset, self._applied = self.file.stamp()[1], len(self.records)
            return envelope(answer["basis_tx"], dict(data, status=PROPOSED, proposal=pid, review=REVIEW))

    def _basis_guard(self, if_basis_tx, planned_latest: int):
        """``if_basis_tx`` is the basis of the agent's last read (the store's latest transaction) or
        of its last proposal's answer (the copy's): either plans on the copy as it is; any other
        basis is stale, said in the store's numbers (decision M11)."""
        if not is_strict_int(if_basis_tx):
            return if_basis_tx   # absent, or refused by the tool's own checks as --write refuses it
        if if_basis_tx in (self.copy.store_tx, planned_latest):
            return planned_latest
        if if_basis_tx < planned_latest:
            raise Conflict(f"if_basis_tx {if_basis_tx} is stale: the latest transaction is {self.copy.store_tx}"
                           + (f" ({len(self.records)} pending proposals planned up to {planned_latest})"
                              if planned_latest != self.copy.store_tx else ""),
                           "re-read and retry against the new basis")
        return if_basis_tx

    def _repeated(self, record: dict) -> dict:
        """The answer to a call identical to a pending proposal: its id, nothing appended."""
        event = loads(record["event"])
        data = {"status": PROPOSED, "proposal": record["id"], "review": REVIEW, "repeated": True,
                "event": event["event"], "at": event["at"], "basis_tx": record["basis_tx"]}
        return envelope(self.copy.store_tx, data)

    # -- reads: the store, with what is pending ----------------------------------------
    def about(self, entity, depth: int = MCP_ABOUT_DEPTH, incoming: bool = False) -> dict:
        return self._with_pending(entity, super().about, entity, depth, incoming)

    def why(self, entity, attribute=None, limit: int = MCP_PAGE_LIMIT) -> dict:
        return self._with_pending(entity, super().why, entity, attribute, limit)

    def history(self, entity, attribute=None, limit: int = MCP_PAGE_LIMIT) -> dict:
        return self._with_pending(entity, super().history, entity, attribute, limit)

    def _with_pending(self, entity, read, *args) -> dict:
        try:
            answer = read(*args)
        except NotFound as exc:
            ids = self.touching(entity)
            if ids:
                exc.hint = (f"pending proposal{'s' if len(ids) > 1 else ''} {', '.join(ids)} would create it: it exists "
                            "once a person accepts; do not propose it again")
            raise
        return dict(answer, pending=self.touching(entity))

    def recall(self, query: str, k: int = MCP_RECALL_K, expand: int = 0) -> dict:
        answer = super().recall(query, k, expand)
        hits = [dict(hit, pending=self.touching(hit["entity"])) for hit in answer["data"]["hits"]]
        return envelope(answer["basis_tx"], dict(answer["data"], hits=hits))


def _check_operation_id(records: list[dict], operation_id) -> None:
    """An operation id a pending proposal used for another call is refused, as ``--write`` refuses
    it: an event line does not carry its operation id, so a copy rebuilt from the pending lines
    would not know it."""
    for record in records:
        if isinstance(operation_id, str) and record["arguments"].get("operation_id") == operation_id:
            raise Conflict(f"operation_id {operation_id!r} was already used for another request "
                           f"(pending proposal {record['id']})", "use a new operation_id for a different request")
