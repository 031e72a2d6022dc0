"""``fgraph render``: an event/1 stream as stable, line-oriented text for people and for
``git diff`` (a textconv driver, decision R2 in docs/streams.md).

One event is a block: a header line with its UUID and its time (RFC 3339), one line for each
of who, source, meta and transaction facts it carries, one line per identity it creates, then
one line per fact it asserts or retracts, in the stream's own order (canonical events are
sorted), and a blank line. Every line is a pure function of its event, so an edit of one value
in the stream is one ``-``/``+`` pair of fact lines in the rendered diff. A line that is not an
event/1 record is rendered as such (with its line number) rather than stopping the output:
git shows whatever textconv printed, and a diff driver that fails hides the change.

``markdown`` renders the result of ``fgraph.streams.review.review`` for people.

Values are rendered by their tag: text as a JSON string, numbers and booleans as JSON, an
instant as its RFC 3339 text, bytes as ``base64:…``, a ref as ``-> name``, JSON as canonical
JSON after ``json``, a vector by its first components and its BLAKE3 fingerprint when long.
"""

from __future__ import annotations

import re
from typing import Iterator

from fgraph.core.canonical import dumps, loads
from fgraph.core.errors import FgraphError
from fgraph.core.values import format_instant
from fgraph.streams.lines import iter_lines

_BARE = re.compile(r"^[^\s\"'#=\->][^\s\"']*$")
VECTOR_SHOWN = 8


def show_name(name: str) -> str:
    """A name as it is when it reads unambiguously on one line, else as a JSON string."""
    return name if _BARE.match(name) else dumps(name)


def show_selector(sel) -> str:
    if isinstance(sel, str):
        return show_name(sel)
    if isinstance(sel, dict) and isinstance(sel.get("eid"), str):
        return "eid:" + sel["eid"]
    return dumps(sel)


def show_value(value, tag) -> str:
    """One value of an event (wire form and logical tag) on one line."""
    inner = value.get(tag) if isinstance(value, dict) and len(value) == 1 else value
    if tag == "text":
        return dumps(value)
    if tag in ("int", "float", "bool"):
        return dumps(value) if tag != "float" else repr(float(value))
    if tag == "instant" and isinstance(inner, str):
        return inner
    if tag == "bytes" and isinstance(inner, str):
        return "base64:" + inner
    if tag == "ref":
        return "-> " + show_selector(inner)
    if tag == "json":
        return "json " + dumps(inner)
    if tag == "vector" and isinstance(inner, list):
        return _show_vector(inner)
    return f"{dumps(value)} ({tag})"


def _show_vector(components: list) -> str:
    if len(components) <= VECTOR_SHOWN:
        return "vector " + dumps(components)
    from fgraph.streams.digest import hasher
    h = hasher()
    h.update(dumps(components).encode("utf-8"))
    shown = ", ".join(dumps(c) for c in components[:VECTOR_SHOWN])
    return f"vector[{len(components)}] [{shown}, …] blake3:{h.hexdigest()[:16]}"


def show_time(at) -> str:
    try:
        return format_instant(at)
    except (FgraphError, TypeError, ValueError, OverflowError):
        return dumps(at)


def render_event(record: dict) -> list[str]:
    """The lines of one event/1 record (without the blank line that follows it)."""
    lines = [f"event {record.get('event')} at {show_time(record.get('at'))}"]
    if "by" in record:
        lines.append(f"  by {dumps(record['by'])}")
    if "source" in record:
        lines.append(f"  source {dumps(record['source'])}")
    if "meta" in record:
        lines.append(f"  meta {dumps(record['meta'])}")
    for item in record.get("tx_facts", ()):
        attribute, value, tag = (list(item) + [None, None, None])[:3]
        lines.append(f"  tx {show_name(str(attribute))} = {show_value(value, tag)}")
    for sel in record.get("created", ()):
        lines.append(f"  creates {show_selector(sel)}")
    for verb, key in (("retract", "retracted"), ("assert", "asserted")):
        for item in record.get(key, ()):
            entity, attribute, value, tag = (list(item) + [None] * 4)[:4]
            lines.append(f"  {verb} {show_selector(entity)} {show_name(str(attribute))} = {show_value(value, tag)}")
    return lines


def render_lines(source) -> Iterator[str]:
    """The rendered text of a stream (a binary handle, bytes or text), one line at a time."""
    for number, line in iter_lines(source):
        try:
            record = loads(line.decode("utf-8") if isinstance(line, bytes) else line)
            if not isinstance(record, dict) or record.get("fgraph") != "event/1":
                raise ValueError("not an event/1 record")
        except (FgraphError, ValueError) as exc:
            text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
            yield f"line {number}: not an event/1 record ({exc})"
            yield f"  raw {dumps(text)}"
            yield ""
            continue
        yield from render_event(record)
        yield ""


# -- the review (fgraph.streams.review) for people ---------------------------------------------------
def _left(n: int, what: str) -> list[str]:
    return [f"- … {n} more {what} not shown"] if n else []


def _fact_line(item: dict) -> str:
    old = "; ".join(f"{r['value']} (tx {r['tx']})" for r in item.get("replaces", ()))
    if item["op"] == "replace":
        return f"  - supersedes {show_name(item['attribute'])} = {old}"
    text = f"  - {item['op']} {show_name(item['attribute'])} = {item['value']}"
    return text + (f" — replaces the receiver's {old}" if old else "")


def _event_line(event: dict) -> str:
    parts = [f"line {event['line']}", event["at"]]
    if event.get("by") is not None:
        parts.append(f"by {event['by']}")
    if event.get("source") is not None:
        parts.append(f"source {event['source']}")
    parts.append(f"event `{event['event']}`")
    return "- " + " · ".join(parts)


def markdown(result: dict) -> str:
    """The review as Markdown: the verdict, what would be refused, then entity by entity."""
    c = result["counts"]
    out = [f"# Review of {result['stream']}", ""]
    if result["would_apply"]:
        out.append(f"**apply would accept the stream**: {c['new']} new events, {c['already_applied']} already "
                   f"applied, {c['noop']} changing nothing.")
    else:
        first = result["refused"]["items"][0]["line"] if result["refused"]["items"] else None
        out.append(f"**apply would refuse the whole stream** and write nothing: {c['refused']} refused "
                   f"line(s), the first at line {first}. Fix or drop them, then review again.")
    out += ["", f"- digest: `{result['digest']}` (apply it with `fgraph apply STREAM --expect-digest "
                f"{result['digest']}`)",
            f"- {result['lines']} lines, {c['events']} events; receiver at tx {result['basis_tx']}",
            f"- {c['asserted']} facts asserted, {c['retracted']} retracted; {c['replaced']} receiver values "
            f"replaced; {c['unified']} names unify with existing entities"]
    if result["dry_run_stopped_at_line"] is not None:
        out.append(f"- the dry run stopped at line {result['dry_run_stopped_at_line']}; later lines were only "
                   "parsed, so what they would change is not listed")
    sections = (("Refused by apply", result["refused"], lambda i: f"- line {i['line']}: {i['error']}: "
                 f"{i['message']}"),
                ("Unique collisions", result["unique_collisions"], lambda i: f"- line {i['line']}: {i['message']}"),
                ("Names that unify with existing entities", result["unified"],
                 lambda i: f"- {show_name(i['entity'])} (line {i['line']}, event `{i['event']}`)"),
                ("Already applied", result["already_applied"],
                 lambda i: f"- line {i['line']}: event `{i['event']}` is the receiver's tx {i['tx']}"))
    for title, listed, line_of in sections:
        if listed["items"]:
            out += ["", f"## {title}", ""] + [line_of(i) for i in listed["items"]] + _left(listed["left_out"],
                                                                                        "lines")
    if result["entities"]:
        out += ["", "## Entities"]
    for entity in result["entities"]:
        unify = (f" (unifies with the receiver's entity, line {entity['unifies_at_line']})"
                 if entity["unifies_at_line"] is not None else "")
        out += ["", f"### {show_name(entity['entity'])}{unify}", ""]
        for event in entity["events"]:
            out.append(_event_line(event))
            out += [f"  - tx fact {t}" for t in event.get("tx_facts", ())]
            out += [_fact_line(item) for item in event["facts"]]
            out += ["  " + x for x in _left(event["facts_left_out"], "facts")]
        out += _left(entity["events_left_out"], "events of this entity")
    if c["facts_not_detailed"]:
        out += ["", f"… {c['facts_not_detailed']} facts about entities beyond the first "
                f"{result['entities_detailed_cap']} are counted above but not detailed."]
    return "\n".join(out)
