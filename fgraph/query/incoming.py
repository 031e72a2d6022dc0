"""What refers to an entity (issue 30 item 3; ours, the published runtime has no such read):
every entity whose current facts at the view's basis hold a ref to it, with the attribute.

Two indexed steps, each bounded. First the attributes that hold such a ref: at the latest
transaction a skip-scan of the live VAET index (``v, a, e``), one seek per attribute found;
in a historical view, where VAET (live facts only) cannot answer, one seek per attribute of
the store on AVET (``a, t, v, …``). Then, attribute by attribute in name order, the referring
entities in id order from the same index, ``LIMIT`` the room left plus one, so a ``limit``
never reads more than ``limit + 1`` rows of referrers and says when it cut.
"""

from __future__ import annotations

from fgraph.core.asof import visible_at
from fgraph.core.catalog import Catalog
from fgraph.core.checks import optional_int
from fgraph.core.values import TAG_REF


def incoming(reader, ref, *, limit=None) -> dict:
    """``Db.incoming``: ``{"basis_tx", "items", "truncated"}``; each item is
    ``{"entity", "attribute", "name"}`` (the referrer as name or id, the attribute, its name or
    None), ordered by attribute name, then by entity id. Unknown ``ref`` is NotFound."""
    optional_int(limit, "incoming limit {value!r} is invalid", "pass a positive number of items, or None for all", low=1)
    target = reader.resolve(ref)
    live = reader.basis >= Catalog(reader.conn).latest_tx()
    visible = visible_at(reader.basis, reader.basis if live else None)
    items: list = []
    truncated = False
    for a in sorted(_attributes(reader.conn, target, visible, live), key=reader.cat.name_of):
        room = None if limit is None else limit - len(items)
        if room == 0:
            truncated = True
            break
        referrers = _referrers(reader.conn, target, a, visible, live, room)
        if room is not None and len(referrers) > room:
            referrers, truncated = referrers[:room], True
        attribute = reader.cat.name_of(a)
        for e in referrers:
            name = reader.cat.name_of(e)
            items.append({"entity": e if name is None else name, "attribute": attribute, "name": name})
        if truncated:
            break
    return {"basis_tx": reader.basis, "items": items, "truncated": truncated}


def about(reader, ref, depth: int = 1, *, limit=None) -> dict:
    """``Db.about``: the entity (as ``Db.entity`` renders it) and what refers to it, both read
    at the reader's one basis: ``{"entity", "incoming", "incoming_truncated"}``."""
    page = incoming(reader, ref, limit=limit)
    return {"entity": reader.entity(ref, depth), "incoming": page["items"], "incoming_truncated": page["truncated"]}


def _attributes(conn, target: int, visible: str, live: bool) -> list[int]:
    """The attribute ids holding a visible ref to ``target``, ascending."""
    found: list[int] = []
    after = -1
    while True:
        if live:
            row = conn.execute(f"SELECT a FROM fgraph_facts INDEXED BY fgraph_vaet WHERE v = ? AND t = {TAG_REF} "
                               f"AND {visible} AND a > ? ORDER BY a LIMIT 1", (target, after)).fetchone()
            if row is None:
                return found
            after = row[0]
            found.append(after)
            continue
        row = conn.execute("SELECT a FROM fgraph_facts INDEXED BY fgraph_avet WHERE a > ? ORDER BY a LIMIT 1",
                           (after,)).fetchone()
        if row is None:
            return found
        after = row[0]
        if conn.execute(f"SELECT 1 FROM fgraph_facts INDEXED BY fgraph_avet WHERE a = ? AND t = {TAG_REF} AND v = ? "
                        f"AND {visible} LIMIT 1", (after, target)).fetchone() is not None:
            found.append(after)


def _referrers(conn, target: int, a: int, visible: str, live: bool, room: int | None) -> list[int]:
    """The ids of the entities whose visible ``a`` refers to ``target``, ascending; at most
    ``room + 1`` of them when ``room`` is given."""
    index = "fgraph_vaet" if live else "fgraph_avet"
    sql = (f"SELECT DISTINCT e FROM fgraph_facts INDEXED BY {index} WHERE v = ? AND a = ? AND t = {TAG_REF} "
           f"AND {visible} ORDER BY e")
    if room is None:
        return [e for (e,) in conn.execute(sql, (target, a))]
    return [e for (e,) in conn.execute(sql + " LIMIT ?", (target, a, room + 1))]
