"""Proves core/declare.py: declare is exactly transact of one map (spec 03 §4), its errors, and
the request hash vector of 03 §10."""

from __future__ import annotations

import pytest

import fgraph
from fgraph.core.declare import declaration


def test_declaration_maps_options_to_system_attributes():
    assert declaration("p/knows", ref=True, many=True, doc="Knows") == {
        "id": "p/knows", "fgraph/type": "ref", "fgraph/many": True, "fgraph/doc": "Knows"}
    assert declaration("p/v", type="vector", dims=3) == {"id": "p/v", "fgraph/type": "vector", "fgraph/dims": 3}


@pytest.mark.parametrize("call", [
    lambda: declaration("p/x"),                      # nothing to declare
    lambda: declaration("Bad/Attr", many=True),      # not an attribute name
    lambda: declaration("p/x", type="nope"),         # unknown type
    lambda: declaration("p/x", type="int", ref=True),
])
def test_invalid_declarations_are_schema_errors(call):
    with pytest.raises(fgraph.SchemaError):
        call()


def test_request_hash_vector(tmp_path):
    db = fgraph.connect(str(tmp_path / "d.db"))
    try:
        db.declare("p/knows", ref=True, many=True, doc="Knows", operation_id="d1")
        row = db.connection.execute("SELECT hex(request_hash) FROM fgraph_events WHERE operation_id = 'd1'").fetchone()
        assert row[0].lower() == "f5ae218d849123e194442adf0501c212e2608910f8b2a97de0e984e93dabb656"
    finally:
        db.close()
