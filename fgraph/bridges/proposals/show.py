"""Proposals for people: ``fgraph review FILE --against DB`` and ``fgraph render FILE`` of a
proposals file, and the text of ``fgraph proposals list`` (issue 51, docs/proposals.md P5).

A review shows each proposal (its id, who proposed it through which client and session, the
tool, when, on which store transaction it was planned) and what its event asserts and retracts,
then the dry-run review of all of them against the store (the receiver's values they replace,
collisions: ``fgraph.streams.review``) and the digest ``accept`` must be given.
"""

from __future__ import annotations

import io

from fgraph.bridges.proposals import decide as _decide
from fgraph.bridges.proposals import records as _records
from fgraph.bridges.proposals.pending import ProposalFile
from fgraph.core.canonical import dumps, loads

SNIFF_BYTES = 64


def is_proposals_file(path: str) -> bool:
    """Whether the regular file ``path`` starts like a proposals file (never blocks, never follows
    a FIFO: ``open_regular_input`` refuses anything but a regular file)."""
    from fgraph.core.errors import FgraphError
    from fgraph.core.files import open_regular_input
    try:
        with open_regular_input(path) as handle:
            return _records.looks_like_proposals(handle.read(SNIFF_BYTES))
    except FgraphError:
        return False


def review(db, path: str) -> dict:
    """Every pending proposal, with the dry-run review of their events against ``db``."""
    from fgraph.streams.review import review as review_events
    pending = ProposalFile(path).records()
    latest = db.latest_tx()
    events = review_events(db, io.BytesIO(_decide.reviewed_stream(pending)), f"{path} (events)")
    conflicts = _decide.recheck(db, pending) if pending else []
    return {"proposals_file": path, "store": db.path, "proposals": [_decide.summary(r, latest) for r in pending],
            "details": [render_record(r) for r in pending], "review": events, "conflicts": conflicts,
            "digest": _decide.stream_digest(pending), "would_apply": events["would_apply"] and not conflicts}


def markdown(result: dict) -> str:
    """The review of a proposals file, for people."""
    from fgraph.streams.render import markdown as review_markdown
    db_path = result["store"]
    count = len(result["proposals"])
    lines = [f"# {count} pending proposal{'s' * (count != 1)} in {result['proposals_file']}", ""]
    for detail in result["details"]:
        lines.extend(detail)
        lines.append("")
    if result["conflicts"]:
        lines.append("## Conflicts (accepting would be refused)")
        lines.extend(f"- {c['id'] or 'all'}: {c['message']}" for c in result["conflicts"])
        lines.append("")
    lines.append(review_markdown(result["review"]))
    lines.append("")
    lines.append(f"Digest of all {count}: {result['digest']}")
    lines.append(f"Accept them: fgraph --db {db_path} proposals accept {result['proposals_file']} --all "
                 f"--expect-digest {result['digest']}")
    lines.append(f"A subset: fgraph --db {db_path} proposals list {result['proposals_file']} ID… prints its digest")
    return "\n".join(lines)


def render_record(record: dict) -> list[str]:
    """The lines of one proposal: who, how, when, then its event as ``fgraph render`` prints one."""
    from fgraph.streams.render import render_event, show_time
    head = f"proposal {record['id']} {record['tool']} by {dumps(record['by'])}"
    lines = [head, f"  client {dumps(record['client'])} session {dumps(record['session'])}",
             f"  planned on tx {record['basis_tx']} at {show_time(record['proposed_at'])}"]
    if record["source"] is not None:
        lines.append(f"  source {dumps(record['source'])}")
    lines.append(f"  arguments {dumps(record['arguments'])[:400]}")
    lines.extend("  " + line for line in render_event(loads(record["event"])))
    return lines


def render_lines(handle) -> list[str] | None:
    """The rendered text of a proposals file read from ``handle`` (binary), or None when it is not one
    (then nothing was consumed beyond what ``peek`` shows)."""
    from fgraph.core.errors import FgraphError
    from fgraph.core.limits import MAX_PROPOSAL_LINE_BYTES
    head = handle.peek(SNIFF_BYTES)[:SNIFF_BYTES] if hasattr(handle, "peek") else b""
    if not _records.looks_like_proposals(head):
        return None
    out: list[str] = []
    number = 0
    while line := handle.readline(MAX_PROPOSAL_LINE_BYTES + 2):
        number += 1
        if not line.strip():
            continue
        try:
            out.extend(render_record(_records.decode(line, number)))
        except FgraphError as exc:
            out.append(f"line {number}: not a proposal/1 record ({exc.message})")
        out.append("")
    return out


def listing_text(result: dict, db_path: str = "DB") -> str:
    """``fgraph proposals list`` for people."""
    rows = result["proposals"]
    lines = []
    if result.get("recovered"):
        lines.append(f"finished an interrupted decision first: {_outcome(result['recovered'])}")
    lines.append(f"{len(rows)} of {result['pending']} pending proposal{'s' * (result['pending'] != 1)} in {result['file']}")
    for row in rows:
        stale = " (the store changed since)" if row["stale"] else ""
        lines.append(f"{row['id']}  {row['tool']} by {dumps(row['by'])} via {dumps(row['client'])} session "
                     f"{dumps(row['session'])}, planned on tx {row['basis_tx']}{stale}: asserts {row['asserted']}, "
                     f"retracts {row['retracted']} of {', '.join(row['entities']) or 'no entity'}")
    if rows:
        ids = " ".join(r["id"] for r in rows) if len(rows) < result["pending"] else "--all"
        lines.append(f"digest {result['digest']}")
        lines.append(f"accept: fgraph --db {db_path} proposals accept {result['file']} {ids} --expect-digest "
                     f"{result['digest']}")
    return "\n".join(lines)


def decision_text(result: dict) -> str:
    """``fgraph proposals accept|reject`` for people."""
    lines = []
    if result.get("recovered"):
        lines.append(f"finished an interrupted decision first: {_outcome(result['recovered'])}")
    if result.get("conflicts"):
        lines.append("nothing was decided: accepting would conflict with the store as it is now")
        lines.extend(f"- {c['id'] or 'all'}: {c['message']}" for c in result["conflicts"])
        lines.append("reject these, or let the agent propose again on the current store")
        return "\n".join(lines)
    lines.append(_outcome(result))
    return "\n".join(lines)


def _outcome(result: dict) -> str:
    if result.get("dropped"):
        return (f"decision {result['dropped']['id']} was dropped, its proposals stay pending: "
                f"{result['dropped']['message']}")
    parts = []
    if result.get("accepted"):
        applied = result.get("applied") or {}
        parts.append(f"accepted {len(result['accepted'])} ({applied.get('applied', 0)} events applied, "
                     f"{applied.get('already_applied', 0)} already there)")
    if result.get("rejected"):
        parts.append(f"rejected {len(result['rejected'])}")
    return f"decision {result.get('decision')}: " + ("; ".join(parts) or "nothing")
