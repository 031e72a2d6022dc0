"""``fgraph excise … --reach TARGET``: an excision carried out here and, at once, wherever the user
names (issue 33 item 4, docs/forgetting.md F4).

The excision itself is ``Db.excise``. Each ``--reach`` target is then brought up to date from this
store the way ``fgraph sync`` would (a store path: ``sync --from DB --to PATH``; a log URL:
``sync --from DB --to URL``, through the adapter its scheme names), so the excision travels with everything before it, and the report
says, per target, what was carried out there: the receiver's own excision transaction, or the
records deleted from the log and the excision record published for later consumers. Stores that
sync from those targets are reached at their own next sync; the report says so rather than
claiming them.

A target the excision could not be carried to (a server down, a refusal) does not hide what was
done: every target is tried, each failed one is listed in ``reached`` with ``status`` "failed" and
its error, ``owed`` lists what remains to do (the command that finishes it), and then the first
failure is raised, of its own class, with the receipt attached (``receipt``), so the CLI prints the
receipt and exits non-zero (issue 48 item 2, docs/forgetting.md "When a reach fails").
"""

from __future__ import annotations

import shlex

from fgraph.core.errors import FgraphError, rewrap
from fgraph.bridges.sync import adapters, files as _sync, signing

FURTHER = ("stores that sync from this one or from a target above carry the excision out at their next "
           "`fgraph sync`; backups, snapshots and collected streams keep it until replaced (docs/forgetting.md)")


def _reach_store(path: str, target: str, event: str, signing_key: str | None = None) -> dict:
    summary = _sync.sync([path], target, signing_key=signing_key)
    done = [e for e in summary["excisions"] if e["event"] == event]
    outcome = done[0] if done else {"status": "not_met"}
    return {"where": target, "kind": "store", "status": outcome["status"], "tx": outcome.get("tx"),
            "scrub_complete": outcome.get("scrub_complete", True)}


def _reach_log(path: str, url: str, event: str, signing_key: str | None = None, **own) -> dict:
    summary = adapters.sync([path], url, signing_key=signing_key, **own)
    done = [e for e in summary["excisions"] if e["event"] == event]
    if not done:   # published before: the records were deleted then, the excision record is there
        return {"where": url, "kind": "log", "status": "already_published", "messages_deleted": 0}
    return {"where": url, "kind": "log", "status": "published", "messages_deleted": done[0]["messages_deleted"],
            "remainders_published": done[0]["remainders_published"], "broker": done[0]["broker"]}


def _failed(target: str, is_log: bool, error: FgraphError) -> dict:
    return {"where": target, "kind": "log" if is_log else "store", "status": "failed",
            "error": {"name": error.name, "message": error.message, "hint": error.hint}}


def finish_command(path: str, target: str) -> str:
    """The command that carries an excision owed to ``target`` out later (the same sync ``--reach`` runs)."""
    return f"fgraph sync --from {shlex.quote(path)} --to {shlex.quote(target)}"


def _unreached(path: str, report: dict, failures: list) -> FgraphError:
    """The first failure, told with what was done here: raised with the receipt attached."""
    target, error = failures[0]
    others = f" (and {len(failures) - 1} more target(s), listed in `owed`)" if len(failures) > 1 else ""
    raised = rewrap(error, before=f"the excision was carried out in {path!r} (transaction {report['tx']}) but "
                    f"could not be carried to {target!r}{others}: ",
                    hint=(f"{error.hint}; " if error.hint else "") + f"the excision is owed there: "
                         f"`{finish_command(path, target)}` carries it out once that is fixed (the receipt "
                         "printed above lists what is owed)")
    raised.receipt = report
    return raised


def excise_and_reach(path: str, ref, *, operation_id, if_basis_tx, reach=(), erase_name: bool = False,
                     published_receipt: bool = False, signing_key: str | None = None,
                     insecure_plaintext_credentials: bool | None = None) -> dict:
    """Excise ``ref`` in the store at ``path`` (its name too with ``erase_name``), then carry the
    excision to every ``reach`` target. The receipt is ``fgraph.bridges.receipts``' summary unless
    ``published_receipt`` (decision F6 in docs/forgetting.md). Each log target is opened once
    before anything is erased, so a log that refuses (its credentials would travel in clear, its
    TLS does not verify, it is unreachable) stops the command with nothing done."""
    from fgraph.bridges import receipts
    from fgraph.db import connect
    targets = [(str(target), adapters.is_log_url(target)) for target in reach]
    for target, is_log in targets:   # a mistyped target is refused before anything is erased
        if not is_log:
            _sync.check_paths([path], target)
    if targets:        # the key that seals the excision on its way, proved usable before anything is erased
        signing.for_store(path, signing_key)
    own = {"insecure_plaintext_credentials": insecure_plaintext_credentials}
    for target, is_log in targets:   # and so is each log
        if is_log:
            adapters.open_log(target, **own).close()
    with connect(path) as db:
        receipt = db.excise(ref, operation_id=operation_id, if_basis_tx=if_basis_tx, erase_name=erase_name)
        report = dict(receipt) if published_receipt else receipts.redacted(db, receipt)
    reached = [{"where": path, "kind": "store", "status": report["status"], "tx": report["tx"],
                "scrub_complete": report.get("scrub", {"complete": True}).get("complete", True)}]
    failures = []
    for target, is_log in targets:   # each target is tried: one that fails does not keep the others from it
        try:
            if is_log:
                reached.append(_reach_log(path, target, report["event"], signing_key, **own))
            else:
                reached.append(_reach_store(path, target, report["event"], signing_key))
        except FgraphError as exc:
            reached.append(_failed(target, is_log, exc))
            failures.append((target, exc))
    report["reached"] = reached
    report["owed"] = [{"where": target, "error": f"{exc.name}: {exc.message}", "run": finish_command(path, target)}
                      for target, exc in failures]
    report["further"] = FURTHER
    if failures:
        raise _unreached(path, report, failures) from failures[0][1]
    return report
