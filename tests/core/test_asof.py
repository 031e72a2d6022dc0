"""Proves the as-of predicate (fgraph/core/asof.py): visible at a basis means asserted at or
before it and not retracted at or before it; at the latest basis the live form is used."""

from __future__ import annotations

import apsw

from fgraph.core.asof import visible_at


def visible_ids(basis: int, latest: int | None = None) -> list[int]:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE fgraph_facts (id INTEGER PRIMARY KEY, tx INTEGER, rx INTEGER)")
    # 1 asserted at 10, live; 2 asserted at 10, retracted at 20; 3 asserted at 20, live
    conn.execute("INSERT INTO fgraph_facts VALUES (1, 10, NULL), (2, 10, 20), (3, 20, NULL)")
    return [i for (i,) in conn.execute(f"SELECT id FROM fgraph_facts f WHERE {visible_at(basis, latest, 'f')} "
                                       "ORDER BY id")]


def test_a_fact_is_visible_from_its_assertion_until_its_retraction():
    assert visible_ids(9) == []
    assert visible_ids(10) == [1, 2]
    assert visible_ids(19) == [1, 2]
    assert visible_ids(20) == [1, 3]


def test_at_the_latest_basis_the_live_form_gives_the_same_facts():
    assert visible_at(20, 20) == "rx IS NULL"
    assert visible_at(20, 20, "f") == "f.rx IS NULL"
    assert visible_ids(20, 20) == visible_ids(20)
    assert visible_at(19, 20) == "tx <= 19 AND (rx IS NULL OR rx > 19)"


def test_no_other_module_writes_the_predicate():
    """One home (issue 28): the as-of form "asserted at or before, not retracted at or before" is
    written only here; a reader that needs it calls ``visible_at``."""
    import pathlib
    import re

    import fgraph
    package = pathlib.Path(fgraph.__file__).parent
    form = re.compile(r"tx\s*<=.{0,60}rx\s+IS\s+NULL\s+OR\s+\S*rx\s*>", re.IGNORECASE | re.DOTALL)
    writers = sorted(str(p.relative_to(package)) for p in package.rglob("*.py") if form.search(p.read_text()))
    assert writers == ["core/asof.py"]
