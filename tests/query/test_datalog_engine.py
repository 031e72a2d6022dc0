"""Proves the evaluation engine (fgraph.query.datalog.engine): work units equal the published runtime's
on every pinned shape of spec 12 §10 and on the sampled rule shapes of §14.1, the budget is
exact (equal succeeds, one less is TooLarge), and relations are TEMP tables that are dropped."""

from __future__ import annotations

import pytest

import fgraph
from tests.support.query_data import P, chain, people, smallest_budget

N = ["?e", "person/name", "?n"]
PINNED = [  # spec 12 §10 table, on dataset P
    ([N], 3),
    ([["alice", "person/name", "?n"]], 1),
    ([N, ["?e", "person/age", "?a"]], 6),
    ([N, ["?e", "person/age", "?a"], [">", "?a", 1]], 9),
    ([["?x", "person/city", "?c"], N], 12),
    ([["?x", "person/city", "?c"], N, ["?e", "person/age", "?a"]], 21),
    ([N, {"not": [["?e", "person/status", "archived"]]}], 4),
    ([N, {"or": [[["?e", "person/city", "Lyon"]], [["?e", "person/city", "Metz"]]]}], 5),
    ([["?e", "?a", "?v"]], 55),
    ([["?e", "?a", "Alice"]], 55),
]
LYON = [{"head": ["lyon", "?x"], "body": [["?x", "person/city", "Lyon"]]}]
ANC = [{"head": ["anc", "?a", "?d"], "body": [["?a", "p/parent", "?d"]]},
       {"head": ["anc", "?a", "?d"], "body": [["?a", "p/parent", "?m"], {"rule": ["anc", "?m", "?d"]}]}]


@pytest.mark.parametrize("where,units", PINNED)
def test_pinned_units(where, units):
    query = {"find": ["?e"] if where[0][0] == "?e" else ["?n"], "where": where}
    assert smallest_budget(lambda b: people(query_budget=b), query) == units


def test_pull_units_count_every_fact_of_every_pulled_entity_before_limit():
    query = {"find": [["pull", "?e", ["person/name"]]], "where": [["?e", "person/name", "_"]]}
    assert smallest_budget(lambda b: people(query_budget=b), query) == 18
    assert smallest_budget(lambda b: people(query_budget=b), dict(query, limit=1)) == 18


def test_rule_units_as_the_published_runtime_counts_them():
    """Each fixed-point round is charged (the last finds nothing new), then binding x rule row pairs."""
    first = {"find": ["?e"], "where": [{"rule": ["lyon", "?e"]}], "rules": LYON}
    after = {"find": ["?e"], "where": [N, {"rule": ["lyon", "?e"]}], "rules": LYON}
    assert smallest_budget(lambda b: people(query_budget=b), first) == 3
    assert smallest_budget(lambda b: people(query_budget=b), after) == 8

    def ancestors(n):
        def make(budget):
            db = fgraph.connect(":memory:", query_budget=budget)
            chain(db, n)
            return db  # smallest_budget closes it
        return smallest_budget(make, {"find": ["?d"], "where": [{"rule": ["anc", "n0", "?d"]}], "rules": ANC})
    assert [ancestors(n) for n in (1, 2, 3, 5)] == [7, 21, 66, 340]  # spec 12 §14.1


def test_the_budget_is_exact_and_too_large_returns_nothing():
    with people(query_budget=3) as db:
        assert len(db.q({"find": ["?n"], "where": [N]})["rows"]) == 3
    with people(query_budget=2) as db:
        with pytest.raises(fgraph.TooLarge, match="work budget"):
            db.q({"find": ["?n"], "where": [N]})
        assert db.at(db.latest_tx()).query_budget == 2  # views inherit the budget


def test_sixty_links_exceed_the_default_budget_but_terminate_on_cycles():
    with fgraph.connect(":memory:") as db:
        chain(db, 60)
        with pytest.raises(fgraph.TooLarge):
            db.q({"find": ["?d"], "where": [{"rule": ["anc", "n0", "?d"]}], "rules": ANC})
    with fgraph.connect(":memory:") as small:
        chain(small, 3)
        small.transact({"id": "n3", "p/parent": {"ref": "n0"}})
        rows = small.q({"find": ["?d"], "where": [{"rule": ["anc", "n0", "?d"]}], "rules": ANC})["rows"]
    assert sorted(r[0]["ref"] for r in rows) == ["n0", "n1", "n2", "n3"]


def test_temp_tables_are_dropped_and_reads_stay_read_only(tmp_path):
    path = str(tmp_path / "p.db")
    people(path).close()
    with fgraph.connect(path, read_only=True, query_budget=100) as db:
        db.q({"find": ["?n"], "where": [N, {"not": [["?e", "person/age", 30]]}]})
        with pytest.raises(fgraph.TooLarge):
            db.q({"find": ["?e"], "where": [["?e", "?a", "?v"], ["?x", "?b", "?w"]]})
        left = db.connection.execute("SELECT count(*) FROM temp.sqlite_schema").fetchone()[0]
        assert left == 0
        assert db.connection.execute("PRAGMA query_only").fetchone()[0] == 1
        with pytest.raises(fgraph.ReadOnly):
            db.transact({"id": "x", "a/b": 1})


def test_values_reach_sql_only_as_parameters():
    hostile = "x'); DROP TABLE fgraph_facts; --"
    with people() as db:
        db.transact({"id": "mallory", "person/name": hostile})
        rows = db.q({"find": ["?e"], "where": [["?e", "person/name", hostile]]})["rows"]
        assert rows == [[{"ref": "mallory"}]]
        assert db.q({"find": ["?n"], "where": [[hostile, "person/name", "?n"]]})["rows"] == []
        assert len(P) + 1 == len(db.q({"find": ["?e"], "where": [N]})["rows"])


def test_a_bound_transaction_position_narrows_what_a_pattern_examines():
    # issue 27: the published runtime charges the datoms of that transaction, not a scan
    with people() as db:
        tx = db.latest_tx()
    by_constant = {"find": ["?a"], "where": [["?e", "?a", "?v", tx]]}
    assert smallest_budget(lambda b: people(query_budget=b), by_constant) == 16  # 15 facts + fgraph/at
    joined = {"find": ["?v"], "where": [["alice", "person/age", "_", "?tx"], ["?e", "?a", "?v", "?tx"]]}
    assert smallest_budget(lambda b: people(query_budget=b), joined) == 1 + 16


def test_an_entity_or_attribute_variable_holding_a_plain_value_reads_as_unbound():
    # issue 27: ages are ints, so each binding pays every person/name datom, or every datom
    as_entity = {"find": ["?e"], "where": [["?e", "person/age", "?a"], ["?a", "person/name", "_"]]}
    assert smallest_budget(lambda b: people(query_budget=b), as_entity) == 3 + 3 * 3
    as_attribute = {"find": ["?e"], "where": [["?e", "person/age", "?a"], ["?x", "?a", "_"]]}
    assert smallest_budget(lambda b: people(query_budget=b), as_attribute) == 3 + 3 * 55


def test_rows_keep_their_first_binding_and_ties_keep_evaluation_order():
    with people() as db:
        # status "active" first comes from alice (35): ordered by age desc, archived (charlie, 30) stays last
        rows = db.q({"find": ["?s"], "where": [["?e", "person/status", "?s"], ["?e", "person/age", "?a"]],
                     "order": [["?a", "desc"]]})["rows"]
        assert rows == [["active"], ["archived"]]
        rows = db.q({"find": ["?s"], "where": [["?e", "person/status", "?s"], ["?e", "person/age", "?a"]],
                     "order": [["?a", "asc"]]})["rows"]
        assert rows == [["archived"], ["active"]]
        with pytest.raises(fgraph.QueryError, match="not bound in every result row"):
            db.q({"find": [["count", "?a"]], "where": [["?e", "person/age", "?a"], [">", "?a", 99]],
                  "order": [["?e", "asc"]]})
