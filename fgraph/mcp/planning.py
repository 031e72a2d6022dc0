"""The planning copy of ``fgraph mcp --propose`` (issue 51 item 1; decision M10 in docs/mcp.md).

A proposing server opens the store read-only and must still plan each write exactly as a
``--write`` server would: the same types, cardinality, uniqueness and basis checks, the same
transaction ids, times and event bytes. It plans on a copy: the store's pages, serialized from
the read-only connection inside one read transaction and deserialized into a private
``:memory:`` connection, with the pending proposals' event lines applied on top through the
apply path. A proposal is then one ordinary ``transact`` on the copy, and its event line is the
line ``tail`` would print had it been committed: accepting the proposals in order gives the
store exactly the bytes a ``--write`` session would have written (``FGRAPH_CLOCK`` and
``FGRAPH_EVENT_SEED`` fixed).

The rebuild rule: the copy is rebuilt when the store's latest transaction moved (someone
accepted, or wrote directly) or when the proposals file was replaced or shrank (a decision
removed lines); lines other servers appended are applied as they come. A pending proposal
that no longer applies to the store (its basis moved under it) is left out of the copy and
counted in ``conflicted``: accepting it will show the conflict.
"""

from __future__ import annotations

from fgraph.core.catalog import Catalog
from fgraph.core.errors import FgraphError
from fgraph.core.identity import event_factory_from_env, gid_to_uuid, make_clock
from fgraph.core.limits import MEMORY
from fgraph.core.memory_copy import memory_copy
from fgraph.db import Db


class PlanningCopy:
    """The store plus the pending proposals, in memory, writable, with the clock and event factory
    a ``--write`` server would use (``FGRAPH_CLOCK``, ``FGRAPH_EVENT_SEED`` unless given)."""

    def __init__(self, store: Db, *, clock=None) -> None:
        self.store = store
        # event UUIDs as a --write server makes them (FGRAPH_EVENT_SEED in tests, else random)
        self.clock, self.event_factory = make_clock(clock), event_factory_from_env()
        self.db: Db | None = None
        self.store_tx: int | None = None     # the store's latest transaction the copy was made from
        self.conflicted: set[str] = set()    # ids of pending proposals that no longer apply to the store

    def stale(self) -> bool:
        """Must the copy be rebuilt before planning (none yet, or the store moved)?"""
        return self.db is None or self.store.latest_tx() != self.store_tx

    def invalidate(self) -> None:
        """Drop the copy (a planned write whose record could not be appended must not stay in it)."""
        if self.db is not None:
            self.db.close()
        self.db = None

    def rebuild(self, records: list[dict]) -> Db:
        """A fresh copy of the store with ``records`` (pending proposals, in file order) applied."""
        self.invalidate()
        self.db = Db(memory_copy(self.store.connection), MEMORY, clock=self.clock, read_only=False,
                     event_factory=self.event_factory, query_budget=self.store.query_budget)
        self.store_tx = self.db.latest_tx()
        self.conflicted = set()
        self.apply(records)
        return self.db

    def apply(self, records: list[dict]) -> None:
        """Apply pending proposals to the copy one by one; one that the store refuses now is left out."""
        assert self.db is not None
        if not records:
            return
        try:   # all in one transaction, the common case; else one by one, to leave out only what fails
            self.db.apply_summary([record["event"] for record in records])
            return
        except FgraphError:
            pass
        for record in records:
            try:
                self.db.apply_summary([record["event"]])
            except FgraphError:
                self.conflicted.add(record["id"])

    def event_line(self, tx: int) -> bytes:
        """The canonical event/1 line of transaction ``tx`` of the copy, without LF: what ``tail`` prints."""
        assert self.db is not None
        lines = list(self.db.iter_events(tx - 1, tx))
        if len(lines) != 1:   # pragma: no cover - a committed write has exactly one event
            raise AssertionError(f"transaction {tx} of the planning copy has {len(lines)} events")
        return lines[0].encode("utf-8")


def entity_keys(db: Db, selector) -> set[str]:
    """How an event may name the entity ``selector`` resolves to in ``db``: its name and its eid's
    UUID (events carry portable references, never local ids); the selector itself when it is a
    string, so a name only a pending proposal creates still matches. Empty when nothing resolves."""
    keys = {selector} if isinstance(selector, str) else set()
    if isinstance(selector, dict) and isinstance(selector.get("eid"), str):
        keys.add(selector["eid"])
    try:
        ident = db.resolve(selector, loose=True) if isinstance(selector, str) else db.resolve(selector)
    except FgraphError:
        return keys
    catalog = Catalog(db.connection)
    name, gid = catalog.name_of(ident), catalog.gid_of(ident)
    if name is not None:
        keys.add(name)
    if gid is not None:
        keys.add(gid_to_uuid(gid))
    return keys
