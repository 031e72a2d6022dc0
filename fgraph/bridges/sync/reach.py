"""``fgraph excise … --reach TARGET``: an excision carried out here and, at once, wherever the user
names (issue 33 item 4, docs/forgetting.md F4).

The excision itself is ``Db.excise``. Each ``--reach`` target is then brought up to date from this
store the way ``fgraph sync`` would (a store path: ``sync --from DB --to PATH``; a log URL:
``sync --from DB --to URL``, through the adapter its scheme names), so the excision travels with everything before it, and the report
says, per target, what was carried out there: the receiver's own excision transaction, or the
records deleted from the log and the excision record published for later consumers. Stores that
sync from those targets are reached at their own next sync; the report says so rather than
claiming them.
"""

from __future__ import annotations

from fgraph.bridges.sync import adapters, files as _sync

FURTHER = ("stores that sync from this one or from a target above carry the excision out at their next "
           "`fgraph sync`; backups, snapshots and collected streams keep it until replaced (docs/forgetting.md)")


def _reach_store(path: str, target: str, event: str) -> dict:
    summary = _sync.sync([path], target)
    done = [e for e in summary["excisions"] if e["event"] == event]
    outcome = done[0] if done else {"status": "not_met"}
    return {"where": target, "kind": "store", "status": outcome["status"], "tx": outcome.get("tx"),
            "scrub_complete": outcome.get("scrub_complete", True)}


def _reach_log(path: str, url: str, event: str) -> dict:
    summary = adapters.sync([path], url)
    done = [e for e in summary["excisions"] if e["event"] == event]
    if not done:   # published before: the records were deleted then, the excision record is there
        return {"where": url, "kind": "log", "status": "already_published", "messages_deleted": 0}
    return {"where": url, "kind": "log", "status": "published", "messages_deleted": done[0]["messages_deleted"],
            "remainders_published": done[0]["remainders_published"]}


def excise_and_reach(path: str, ref, *, operation_id, if_basis_tx, reach=(), erase_name: bool = False,
                     published_receipt: bool = False) -> dict:
    """Excise ``ref`` in the store at ``path`` (its name too with ``erase_name``), then carry the
    excision to every ``reach`` target. The receipt is ``fgraph.bridges.receipts``' summary unless
    ``published_receipt`` (decision F6 in docs/forgetting.md)."""
    from fgraph.bridges import receipts
    from fgraph.db import connect
    targets = [(str(target), adapters.is_log_url(target)) for target in reach]
    for target, is_log in targets:   # a mistyped target is refused before anything is erased
        if not is_log:
            _sync.check_paths([path], target)
    with connect(path) as db:
        receipt = db.excise(ref, operation_id=operation_id, if_basis_tx=if_basis_tx, erase_name=erase_name)
        report = dict(receipt) if published_receipt else receipts.redacted(db, receipt)
    reached = [{"where": path, "kind": "store", "status": report["status"], "tx": report["tx"],
                "scrub_complete": report.get("scrub", {"complete": True}).get("complete", True)}]
    for target, is_log in targets:
        reach_one = _reach_log if is_log else _reach_store
        reached.append(reach_one(path, target, report["event"]))
    report["reached"] = reached
    report["further"] = FURTHER
    return report
