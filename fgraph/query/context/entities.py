"""The most recently changed entities rendered for a prompt (``context(by="entity")``, decision
C2 in docs/cli.md): one compact item per entity, newest first by source time, within a limit of
items and a character budget.

    - [Decision] Drop the legacy XML export — because: Two customers used it last year — tags:
      Invoice Page — at 2026-03-01T17:25:00.000000Z by bob from decisions.jsonl:18

The rules, all read from the store itself:

- **Items** are the entities (not transactions) changed after ``since`` that still hold a
  *content* fact: a current fact whose attribute is not bookkeeping and whose value is neither a
  ref nor a vector. Schema entities, deleted entities and pure relation hubs (a name and refs)
  are not items; they show up as the tags of the items that refer to them.
- **Bookkeeping** attributes never appear: ``fgraph/*`` and ``db/*``, every ``*/id``, and every
  attribute declared unique (``fgraph/unique``: its value identifies the entity, whose name is
  shown anyway), so ``decision/id`` and ``memory/name`` are bookkeeping.
- **Source time** of a change is its transaction's ``fgraph/imported-at`` (the record's own time
  that ``fgraph import`` and ``apply`` keep) where it has one, else its ``fgraph/at``; an entity
  is placed at its newest change, ties newest transaction first, then in the transaction's order.
- **Label**: the value of a ``*/type`` attribute (``decision/type``, ``memory/type``), first
  letter capitalised; without one, the namespace of the main text's attribute (``[Memory]``).
- **Main text**: the values of the first attribute present whose local name is one of
  ``PRIMARY`` (``decision/what``, ``memory/text``, ``memory/observation``…), joined with "; ";
  else the longest other text; else ``attribute: value`` pairs (instants as RFC 3339).
- **Rationale**: a ``*/why`` (or ``because``, ``reason``, ``rationale``) as "because: …".
- **Tags**: the names of the entities it refers to through ref attributes.
- **Name**: shown before the text, unless the entity has none (a note remembered without a key
  is shown by its text, never by its id) or it only repeats an ``*/id`` value
  (``decision:<decision/id>``).

Each field is capped (``TEXT_CAP``, ``WHY_CAP``, ``TAG_CAP`` tags) so one item is a few hundred
characters at most; other attributes are left to ``fgraph get``. The output is cut between
items. Transactions are read newest source time first by merging two index walks (imported ones
by ``fgraph/imported-at``, local ones by id), so memory follows the limit, not the history; the
total is one counting query that stops at ``context_shape.COUNT_CAP`` (decision C3: past it the
last line says "N or more").
"""

from __future__ import annotations

import heapq
import itertools
import re

from fgraph.core.canonical import dumps
from fgraph.core.genesis import A_AT, A_IMPORTED_AT, A_UNIQUE
from fgraph.core.limits import GENESIS_TX
from fgraph.core.txn import read_transaction
from fgraph.core.values import TAG_INSTANT, TAG_LONG_TEXT, TAG_REF, TAG_TEXT, TAG_VECTOR, format_instant
from fgraph.query.context import shape as context_shape
from fgraph.query.context import timing as context_timing
from fgraph.query.context.shape import (DEFAULT_BUDGET, DEFAULT_LIMIT, ELLIPSIS, MAX_BUDGET, MAX_LIMIT, MORE_KEY, at_least,
                                        budget_for, call, how_many, summary)

PRIMARY = ("text", "what", "content", "body", "summary", "description", "observation", "note", "title")
RATIONALE = ("why", "because", "reason", "rationale")
TEXT_CAP, WHY_CAP, TAG_CAP, TAG_NAME_CAP, LABEL_CAP, PAIRS_CAP = 300, 200, 8, 60, 40, 4
_BOOKKEEPING_SQL = context_shape.BOOKKEEPING_SQL
_SPACE = re.compile(r"\s+")
_SOURCE_LINE = re.compile(r"(.+):([0-9]+)", re.S)


def context(reader, since=None, budget: int = DEFAULT_BUDGET, *, limit: int = DEFAULT_LIMIT, entity=None,
            format: str = "markdown", type=None, more_hint: str = "cli", window: int | None = None) -> dict:
    """The entities changed after ``since`` as ``{basis_tx, since, items, left_out, truncated,
    text | entities[, more]}``; options are checked by ``fgraph.query.context.changes.context``.
    ``window`` (µs, from ``context_timing.window``) keeps the records whose own time is after it."""
    with read_transaction(reader.conn):
        low = GENESIS_TX if since is None else reader.resolve_time(since, absolute=True)
        subject = None if entity is None else reader.resolve(entity)
        types = context_shape.types_of(type)
        if types is not None:
            context_shape.known_types(reader, types)
        walk = _Walk(reader, low, subject, types, window)
        total = walk.count()
        start = low if window is None else format_instant(window)

        def rest(needed: int | None = None) -> str:
            """The call for the whole window; without ``needed`` its longest form."""
            n, b = (MAX_LIMIT, MAX_BUDGET) if needed is None else (min(total, MAX_LIMIT), needed)
            return _rest(more_hint, start, n, b, None if types is None else ",".join(types), entity)

        if format == "json":
            return _as_json(reader, walk, total, budget, limit, rest)
        return _as_markdown(reader, walk, total, budget, limit, rest)


def _rest(hint: str, low, n: int, b: int, type, entity) -> str:
    """The call that gets the whole window, in the words of the face that asked."""
    if hint == "cli":
        import shlex
        extra = "".join(f" --{flag} {shlex.quote(str(value))}" for flag, value in (("type", type), ("entity", entity))
                        if value is not None)
        return f"fgraph context --by entity --since {low} --limit {n} --budget {b}{extra}"
    if hint == "resource":
        from urllib.parse import urlencode
        query = {"by": "entity", "since": low, "limit": n, "budget": b, **({"type": type} if type is not None else {})}
        return "fgraph://context?" + urlencode(query)
    return call("context", by="entity", since=low, limit=n, budget=b, type=type, entity=entity)


# ----------------------------------------------------------------- reading

class _Walk:
    """The candidate entities, newest source time first, and the SQL that says which are items."""

    def __init__(self, reader, low: int, subject, types, window: int | None = None):
        self.reader, self.conn, self.low, self.high, self.subject, self.types = (
            reader, reader.conn, low, reader.basis, subject, types)
        self.window = window
        # a time window (decision C4): imports by their own time, local writes after ``low``
        in_window = (f"SELECT e FROM fgraph_facts WHERE a = {A_IMPORTED_AT} AND t = {TAG_INSTANT} AND e = tx "
                     f"AND v > ? AND e <= ? UNION SELECT ev.tx FROM fgraph_events ev WHERE ev.tx > ? AND ev.tx <= ? "
                     f"AND NOT EXISTS (SELECT 1 FROM fgraph_facts g WHERE g.e = ev.tx AND g.a = {A_IMPORTED_AT} "
                     f"AND g.tx = ev.tx)")
        self.window_sql = None if window is None else (in_window, (window, self.high, low, self.high))
        vis = reader.visible
        content = (f"EXISTS (SELECT 1 FROM fgraph_facts f JOIN fgraph_ids n ON n.id = f.a WHERE f.e = {{e}} "
                   f"AND {vis('f')} AND f.t NOT IN ({TAG_REF}, {TAG_VECTOR}) AND NOT {_BOOKKEEPING_SQL.format(n='n')} "
                   f"AND NOT EXISTS (SELECT 1 FROM fgraph_facts u WHERE u.e = f.a AND u.a = {A_UNIQUE} AND u.v = 1 "
                   f"AND {vis('u')}))")
        self.item_sql = f"NOT EXISTS (SELECT 1 FROM fgraph_events WHERE tx = {{e}}) AND {content}"
        self.item_args: tuple = ()
        if types is not None:
            marks = ", ".join("?" * len(types))
            self.item_sql += (f" AND EXISTS (SELECT 1 FROM fgraph_facts y JOIN fgraph_ids m ON m.id = y.a "
                              f"WHERE y.e = {{e}} AND {vis('y')} AND y.t = {TAG_TEXT} AND m.name LIKE '%/type' "
                              f"AND NOT {_BOOKKEEPING_SQL.format(n='m')} AND y.v COLLATE NOCASE IN ({marks}))")
            self.item_args = tuple(types)

    def count(self) -> int:
        """Items in the window, counted up to the cap (decision C3): the changed entities come
        distinct as the index walks yield them, so the count stops at the cap instead of
        gathering every entity of the window first."""
        only = "" if self.subject is None else " AND e = ?"
        extra = () if self.subject is None else (self.subject,)
        if self.window_sql is None:
            changed, args = "(tx > ? AND tx <= ? AND e != tx) OR (rx > ? AND rx <= ?)", (self.low, self.high) * 2
        else:
            sql, bound = self.window_sql
            changed, args = f"(tx IN ({sql}) AND e != tx) OR rx IN ({sql})", bound * 2
        sql = (f"SELECT count(*) FROM (SELECT 1 FROM (SELECT DISTINCT e FROM fgraph_facts WHERE "
               f"({changed}){only}) AS c WHERE {self.item_sql.format(e='c.e')} LIMIT ?)")
        return self.conn.execute(sql, args + extra + self.item_args + (context_shape.COUNT_CAP,)).fetchone()[0]

    def is_item(self, e: int) -> bool:
        # the entity is bound once per placeholder: two in the content test, one more with a type
        binds = (e, e) if self.types is None else (e, e, e) + tuple(self.types)
        return self.conn.execute(f"SELECT 1 WHERE {self.item_sql.format(e='?')}", binds).fetchone() is not None

    def source_time(self, tx: int) -> int:
        cat = self.reader.cat
        imported = cat.imported_at(tx)
        return imported if imported is not None else cat.tx_at(tx)

    def transactions(self):
        """``(source time, tx)`` in (low, high], newest source time first, ties newest tx first."""
        if self.subject is not None:
            rows = self.conn.execute(
                "SELECT tx FROM fgraph_facts WHERE e = ? AND tx > ? AND tx <= ? AND e != tx "
                "UNION SELECT rx FROM fgraph_facts WHERE e = ? AND rx > ? AND rx <= ?",
                (self.subject, self.low, self.high) * 2)
            best = max(((self.source_time(tx), tx) for (tx,) in rows
                        if self.window is None or self.source_time(tx) > self.window), default=None)
            return iter(() if best is None else (best,))
        local = self.conn.execute(
            # without the hint SQLite reads every fgraph/at fact through fgraph_avet (a=?) for each transaction
            "SELECT (SELECT v FROM fgraph_facts INDEXED BY fgraph_hist WHERE e = ev.tx AND a = ? AND tx = ev.tx), "
            "ev.tx FROM fgraph_events ev "
            "WHERE ev.tx > ? AND ev.tx <= ? AND NOT EXISTS "
            "(SELECT 1 FROM fgraph_facts g WHERE g.e = ev.tx AND g.a = ? AND g.tx = ev.tx) ORDER BY ev.tx DESC",
            (A_AT, self.low, self.high, A_IMPORTED_AT))
        # dated imports and local writes by time, then the untimed imports (decision C4), each an index walk
        return itertools.chain(heapq.merge(self._imported(untimed=False), local, reverse=True),
                               self._imported(untimed=True))

    def _imported(self, *, untimed: bool):
        """``(imported-at, tx)`` of the dated or the untimed imports in the window, newest first;
        a generator, so the untimed walk starts only when the dated ones are all read."""
        since, bound = ("v", self.window) if self.window is not None else ("e", self.low)
        yield from self.conn.execute(
            f"SELECT imp.v, imp.e FROM fgraph_facts imp WHERE imp.a = ? AND imp.t = ? AND imp.e = imp.tx "
            f"AND imp.{since} > ? AND imp.e <= ? "
            f"AND {'' if untimed else 'NOT '}{context_timing.UNTIMED_SQL} ORDER BY imp.v DESC, imp.e DESC",
            (A_IMPORTED_AT, TAG_INSTANT, bound, self.high))

    def entities(self, tx: int):
        """The entities ``tx`` changed, in the order of their first fact there."""
        if self.subject is not None:
            return [self.subject]
        return [e for e, _ in self.conn.execute(
            "SELECT e, min(id) FROM (SELECT e, id FROM fgraph_facts WHERE tx = ? AND e != tx "
            "UNION ALL SELECT e, id FROM fgraph_facts WHERE rx = ?) GROUP BY e ORDER BY 2", (tx, tx))]

    def __iter__(self):
        """``(source time, tx, entity)`` of every item, each entity once, at its newest change: the
        dated ones first, then those of untimed imports (``context_timing``), newest first."""
        shown: set = set()   # only the items chosen so far: at most ``limit``
        for at, tx in self.transactions():
            for e in self.entities(tx):
                if e not in shown and self.is_item(e):
                    shown.add(e)
                    yield at, tx, e


# ----------------------------------------------------------------- one item

def _clip(text: str, cap: int) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= cap else text[:cap - 1].rstrip() + ELLIPSIS


def _shown(value) -> str:
    """A non-text value as a prompt reads it: instants in RFC 3339, the rest as canonical JSON."""
    if isinstance(value, dict) and set(value) == {"instant"}:
        return value["instant"]
    if isinstance(value, dict) and set(value) == {"json"}:
        return dumps(value["json"])
    return dumps(value)


class _Roles:
    """Which part each attribute plays; learned once per attribute for one rendering."""

    def __init__(self, reader):
        self.reader, self.cache = reader, {}

    def of(self, a: int) -> tuple[str, str]:
        """``(name, role)``, the role one of bookkeeping, id, label, why, primary:<rank>, other."""
        if a not in self.cache:
            name = self.reader.cat.name_of(a) or ""
            local = name.rsplit("/", 1)[-1]
            if local == "id" and not name.startswith(("fgraph/", "db/")):
                role = "id"
            elif name.startswith(("fgraph/", "db/")) or self.reader.one_value(a, A_UNIQUE) == 1:
                role = "bookkeeping"
            elif local == "type":
                role = "label"
            elif local in RATIONALE:
                role = "why"
            elif local in PRIMARY:
                role = f"primary:{PRIMARY.index(local)}"
            else:
                role = "other"
            self.cache[a] = (name, role)
        return self.cache[a]


def _item(reader, roles: _Roles, e: int, at: int, tx: int, meta: dict) -> dict:
    """One entity's item: ``{entity, label?, name?, text?, because?, tags, at, tx, by?, source?}``."""
    label = why = longest = None
    primary: dict = {}   # rank -> (attribute name, joined text so far)
    ids, tags, pairs, more_tags = [], [], [], False
    for a, v, t in reader.conn.execute(
            f"SELECT a, v, t FROM fgraph_facts WHERE e = ? AND {reader.visible()} ORDER BY id", (e,)):
        name, role = roles.of(a)
        if role == "bookkeeping" or t == TAG_VECTOR:
            continue
        if t == TAG_REF:
            if role != "id":
                target = reader.cat.name_of(v)
                if target is not None and _clip(target, TAG_NAME_CAP) not in tags:
                    more_tags = more_tags or len(tags) == TAG_CAP
                    if len(tags) < TAG_CAP:
                        tags.append(_clip(target, TAG_NAME_CAP))
            continue
        value = reader.value(v, t)
        is_text = t in (TAG_TEXT, TAG_LONG_TEXT)
        if role == "id":
            if is_text and value:
                ids.append(value)
        elif role == "label" and is_text and label is None:
            label = _clip(value, LABEL_CAP)
        elif role == "why" and is_text and why is None:
            why = _clip(value, WHY_CAP)
        elif role.startswith("primary:") and is_text:
            rank = int(role.split(":")[1])
            before = primary.get(rank, (name, ""))[1]
            if len(before) <= TEXT_CAP:
                primary[rank] = (name, f"{before}; {value}" if before else value)
        elif is_text:
            if longest is None or len(value) > len(longest[1]):
                longest = (name, value[:TEXT_CAP + 1])
        elif len(pairs) < PAIRS_CAP:
            pairs.append((name, f"{name}: {_shown(value)}"))
    if primary:
        source_attr, text = primary[min(primary)]
    elif longest is not None:
        source_attr, text = longest
    elif pairs:
        source_attr, text = pairs[0][0], "; ".join(pair for _, pair in pairs)
    else:
        source_attr, text = None, None
    if label is None and source_attr is not None and "/" in source_attr:
        label = source_attr.split("/", 1)[0]
    out: dict = {"entity": reader.local_ref(e)}
    if label:
        out["label"] = label[:1].upper() + label[1:]
    own = reader.cat.name_of(e)
    if own is not None and not any(str(value) in own for value in ids) and own != text:
        out["name"] = _clip(own, TAG_NAME_CAP * 2)
    if text is not None:
        out["text"] = _clip(text, TEXT_CAP)
    if why is not None:
        out["because"] = why
    out["tags"] = tags + ([ELLIPSIS] if more_tags else [])
    out["at"], out["tx"] = format_instant(at), tx
    for key in ("by", "source"):
        if key in meta:
            out[key] = meta[key]
    return out


def _origin(item: dict | None) -> tuple:
    """``(by, file, line)`` of an item's provenance: the file by its name, not its path."""
    if item is None:
        return (None, None, None)
    source = item.get("source")
    where, line = (None, None)
    if isinstance(source, str):
        match = _SOURCE_LINE.fullmatch(source)
        where, line = (match.group(1), match.group(2)) if match else (source, None)
        where = re.split(r"[\\/]", where)[-1] or where
    return (item.get("by"), where, line)


def _line(item: dict, before: dict | None = None) -> str:
    """One item as a prompt line; ``before`` is the line above: in a run of items by the same
    author from the same file only the first says ``by … from FILE:LINE``, the rest ``line N``."""
    head = f"[{item['label']}] " if "label" in item else ""
    body = ": ".join(part for part in (item.get("name"), item.get("text")) if part)
    parts = [f"- {head}{body}".rstrip()]
    if "because" in item:
        parts.append(f"because: {item['because']}")
    if item["tags"]:
        parts.append("tags: " + ", ".join(item["tags"]))
    when = f"at {item['at'].replace('.000000Z', 'Z')}"
    by, where, line = _origin(item)
    if where is not None and line is not None and _origin(before)[:2] == (by, where):
        parts.append(f"{when}, line {line}")
    else:
        parts.append(when + (f" by {by}" if by is not None else "")
                     + (f" from {where}" + (f":{line}" if line is not None else "") if where is not None else ""))
    return " — ".join(parts)


# ----------------------------------------------------------------- rendering

def _footer(left_out: int, total: int, rest: str) -> str:
    plural = "ies" if left_out != 1 or at_least(total) else "y"
    return f"{ELLIPSIS} {how_many(left_out, total)} older entit{plural} left out; get them with: {rest}"


def _window(reader, walk, total, budget, limit, rest, size_of, start, overhead=0):
    """Choose items while they fit, newest first; the footer's longest form is kept in reserve."""
    longest = len(_footer(max(total, 2), total, rest())) + 1
    reserve = (longest if longest <= budget // 2 else len(ELLIPSIS) + 1) + overhead
    room = budget - reserve
    roles, cache, used, chosen, needed = _Roles(reader), {}, start, [], None
    items = (_item(reader, roles, e, at, tx, reader.tx_meta(tx, cache)) for at, tx, e in walk)
    for item in items:
        cost = size_of(item)
        if len(chosen) >= limit or used + cost > (budget if len(chosen) + 1 == total else room):
            later = itertools.chain([cost], map(size_of, items))
            needed = budget_for(used, later, len(chosen), min(total, MAX_LIMIT), reserve)
            break
        used += cost
        chosen.append(item)
    return chosen, needed


def _more(total: int, shown: int, rest: str, room: int) -> str:
    text = _footer(total - shown, total, rest)
    return text if len(text) < room else ELLIPSIS


def _as_markdown(reader, walk, total, budget, limit, rest) -> dict:
    above: list = [None]   # items are priced in order, each with the one before it

    def size_of(item: dict) -> int:
        cost, above[0] = len(_line(item, above[0])) + 1, item
        return cost

    chosen, needed = _window(reader, walk, total, budget, limit, rest, size_of, 0)
    lines = [_line(item, before) for before, item in zip([None] + chosen, chosen)]
    out = summary(reader.basis, walk.low, total, len(chosen))
    if out["truncated"]:
        used = sum(len(line) + 1 for line in lines)
        out["more"] = _more(total, len(chosen), rest(needed), budget - used)
        lines.append(out["more"])
    out["text"] = "\n".join(lines)
    return out


def _entry(item: dict) -> dict:
    return {key: value for key, value in item.items() if key != "name"}


def _as_json(reader, walk, total, budget, limit, rest) -> dict:
    skeleton = dict(summary(reader.basis, walk.low, total, 0), items=total, truncated=False,
                    entities=[])  # the longest form of every number and flag
    chosen, needed = _window(reader, walk, total, budget, limit, rest, lambda item: len(dumps(_entry(item))) + 1,
                     len(dumps(skeleton)), overhead=len(MORE_KEY))
    out = dict(summary(reader.basis, walk.low, total, len(chosen)), entities=[_entry(item) for item in chosen])
    if out["truncated"]:
        room = budget - len(dumps(out)) - len(MORE_KEY)
        out["more"] = _more(total, len(chosen), rest(needed), room)
    return out
