"""Pull patterns (spec 12 §7): an entity's live attributes as a map, reverse references, and
one nested level through ref attributes; refs reached deeper render as ``{"ref": …}``, so
cycles are safe.

Each pulled entity costs one indexed read of its live facts (EAVT) and one per reverse item
(VAET); the caller charges the facts read and the reverse datoms found (§10).
"""

from __future__ import annotations

from fgraph.core.asof import visible_at
from fgraph.core.errors import QueryError
from fgraph.core.genesis import A_MANY, A_TYPE
from fgraph.core.values import TAG_REF
from fgraph.query.datalog.pull_syntax import PullPattern, parse_pattern

class Puller:
    """Pulls at one basis; ``charge(n)`` is called with the work of each read."""

    def __init__(self, conn, cat, visible: str, render, charge=None):
        self.conn, self.cat, self.visible, self.render = conn, cat, visible, render
        self.charge = charge or (lambda n: None)
        self.many: dict[int, bool] = {}
        self.checked: set = set()
        self.datom_counts: dict[str, int] = {}

    def is_many(self, a: int) -> bool:
        if a not in self.many:
            row = self.conn.execute(f"SELECT v FROM fgraph_facts WHERE e = ? AND a = ? AND {self.visible} LIMIT 1",
                                    (a, A_MANY)).fetchone()
            self.many[a] = bool(row and row[0] == 1)
        return self.many[a]

    def check_maps(self, pattern: PullPattern) -> None:
        """Every map of the pattern tree is proven a ref attribute; each proof reads (and is charged)
        the attribute's live datoms, once per pulled root, as the published runtime counts it."""
        for name, sub in pattern.nested:
            self.check_nested(name)
            self.charge(self.datom_counts[name])
            self.check_maps(sub)

    def check_nested(self, name: str) -> None:
        """A map needs a ref attribute: declared ref, or holding refs (§7)."""
        if name in self.checked:
            return
        a = self.cat.id_by_name(name)
        ok = False
        if a is not None:
            declared = self.conn.execute(f"SELECT v FROM fgraph_facts WHERE e = ? AND a = ? AND {self.visible} "
                                         "LIMIT 1", (a, A_TYPE)).fetchone()
            ok = (declared is not None and declared[0] == "ref") or self.conn.execute(
                f"SELECT 1 FROM fgraph_facts WHERE a = ? AND t = {TAG_REF} AND {self.visible} LIMIT 1",
                (a,)).fetchone() is not None
        if not ok:
            raise QueryError(f"pull map on {name!r}, which is not a ref attribute",
                             "use a map only on attributes whose values are refs")
        self.checked.add(name)
        self.datom_counts[name] = self.conn.execute(
            f"SELECT count(*) FROM fgraph_facts WHERE a = ? AND {self.visible}", (a,)).fetchone()[0]

    def pull(self, e: int, pattern: PullPattern, depth: int = 0, root: int | None = None) -> dict:
        if depth == 0:
            self.check_maps(pattern)
            root = e
        facts = self.conn.execute(f"SELECT a, v, t FROM fgraph_facts WHERE e = ? AND {self.visible} ORDER BY id",
                                  (e,)).fetchall()
        self.charge(len(facts))
        by_attr: dict[int, list] = {}
        for a, v, t in facts:
            by_attr.setdefault(a, []).append((t, v))
        wanted: dict[str, PullPattern | None] = {}
        if pattern.star:
            for a in by_attr:
                wanted.setdefault(self.cat.name_of(a), None)
        for name in pattern.forward:
            wanted.setdefault(name, None)
        for name, sub in pattern.nested:
            wanted[name] = sub
        out: dict = {}
        for name, sub in wanted.items():
            a = self.cat.id_by_name(name)
            if a is None or a not in by_attr:
                continue
            rendered = []
            for t, v in by_attr[a]:
                if sub is not None and t == TAG_REF and depth == 0 and v != root:
                    rendered.append(self.pull(v, sub, depth + 1, root))
                else:
                    rendered.append(self.render(t, v))
            out[name] = rendered if self.is_many(a) else rendered[-1]
        for key, name in pattern.reverse:
            a = self.cat.id_by_name(name)
            holders = [] if a is None else self.conn.execute(
                f"SELECT e FROM fgraph_facts WHERE a = ? AND t = {TAG_REF} AND v = ? AND {self.visible} ORDER BY id",
                (a, e)).fetchall()
            self.charge(len(holders))
            out[key] = [self.render(TAG_REF, h) for (h,) in holders]
        return out


def pull_entity(reader, ref, pattern) -> dict:
    """``Db.pull``: a selector (``{"ref": …}`` is a TypeError, unknown is NotFound), no budget."""
    parsed = parse_pattern(pattern)
    e = reader.resolve(ref)
    from fgraph.core.catalog import Catalog
    from fgraph.query.datalog.results import Renderer
    from fgraph.query.datalog.terms import Terms
    visible = visible_at(reader.basis, Catalog(reader.conn).latest_tx())
    terms = Terms(reader.conn, reader.cat, visible)
    return Puller(reader.conn, reader.cat, visible, Renderer(reader.cat, terms)).pull(e, parsed)
