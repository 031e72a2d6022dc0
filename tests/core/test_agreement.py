"""Proves the rules of decision 7 on their own (fgraph.core.agreement): a payload's sets, a
stored row rendered to the bytes a payload item keys to, and both sides' verdicts, including a
transaction's own facts and a replaced (entity, attribute)."""

from __future__ import annotations

import orjson
import pytest

from fgraph.core import agreement
from fgraph.core.canonical import dumps
from fgraph.core.genesis import A_AT, A_BY, A_META
from fgraph.core.values import TAG_FLOAT, TAG_INT, TAG_JSON, TAG_REF, TAG_TEXT

EVENT = "12345678-1234-4234-8234-123456789012"
GID = bytes.fromhex(EVENT.replace("-", ""))


def payload(**fields) -> agreement.Payload:
    doc = {"asserted": [], "at": 5, "created": [], "event": EVENT, "fgraph": "event/1", "retracted": []}
    doc.update(fields)
    return agreement.Payload(dumps(doc))


def row(tx, e, a, v, t, en=None, eg=None, an="p/x", blob=None, vn=None, vg=None, fact_id=40):
    return tx, e, a, v, t, en, eg, an, blob, vn, vg, fact_id


def test_a_fact_listed_by_its_event_agrees_and_another_value_does_not():
    sets = payload(asserted=[["ada", "p/x", "hello", "text"], [{"eid": EVENT}, "p/n", 2.5, "float"]]).asserting()
    assert agreement.asserting_agrees(row(70, 66, 67, "hello", TAG_TEXT, en="ada"), sets)
    assert not agreement.asserting_agrees(row(70, 66, 67, "hellp", TAG_TEXT, en="ada"), sets)
    assert agreement.asserting_agrees(row(70, 68, 69, 2.5, TAG_FLOAT, eg=GID, an="p/n"), sets)
    assert not agreement.asserting_agrees(row(70, 68, 69, 2.25, TAG_FLOAT, eg=GID, an="p/n"), sets)


def test_a_transactions_own_facts_are_its_receipt_and_provenance():
    sets = payload(by="me", meta={"k": 0.5}, tx_facts=[["p/why", "because", "text"]]).asserting()
    assert agreement.asserting_agrees(row(70, 70, A_AT, 1, 5), sets)                # its time: the receipt
    assert agreement.asserting_agrees(row(70, 70, A_BY, "me", TAG_TEXT), sets)
    assert not agreement.asserting_agrees(row(70, 70, A_BY, "you", TAG_TEXT), sets)
    assert agreement.asserting_agrees(row(70, 70, A_META, '{"k":0.5}', TAG_JSON), sets)
    assert agreement.asserting_agrees(row(70, 70, 71, "because", TAG_TEXT, an="p/why"), sets)
    assert not agreement.asserting_agrees(row(70, 70, 71, "since", TAG_TEXT, an="p/why"), sets)


def test_a_retraction_is_listed_or_replaced_by_a_new_assertion():
    sets = payload(retracted=[["ada", "p/x", 1, "int"]], asserted=[["bob", "p/y", "new", "text"]]).retracting()
    assert agreement.retracting_agrees(row(71, 66, 67, 1, TAG_INT, en="ada"), sets)
    assert not agreement.retracting_agrees(row(71, 66, 67, 2, TAG_INT, en="ada"), sets)
    assert agreement.retracting_agrees(row(71, 68, 69, "old", TAG_TEXT, en="bob", an="p/y"), sets)
    assert agreement.replaced(sets) == {orjson.dumps(["bob", "p/y"])}


def test_a_ref_renders_as_its_targets_name_or_eid():
    sets = payload(asserted=[["ada", "p/f", {"ref": {"eid": EVENT}}, "ref"]]).asserting()
    assert agreement.asserting_agrees(row(70, 66, 67, 80, TAG_REF, en="ada", an="p/f", vg=GID), sets)
    assert not agreement.asserting_agrees(row(70, 66, 67, 80, TAG_REF, en="ada", an="p/f", vn="bob"), sets)


@pytest.mark.parametrize("text", [None, "not json", dumps({"fgraph": "event/1"}), b"\xff"])
def test_a_payload_that_proves_nothing_has_no_sets(text):
    event = agreement.Payload(text)
    assert event.doc() is None and event.asserting() is None and event.retracting() is None


def test_fact_keys_are_the_canonical_bytes_of_the_wire_fact():
    assert agreement.fact_key("ada", None, "p/x", 1.0, TAG_FLOAT, None, None, None) == b'["ada","p/x",1,"float"]'
    assert agreement.fact_key(None, GID, "p/x", "é\u2028", TAG_TEXT, None, None, None) == \
        dumps([{"eid": EVENT}, "p/x", "é\u2028", "text"]).encode()
    assert agreement.key([{"json": {"b": 1, "a": 0.5}}]) == b'[{"json":{"a":0.5,"b":1}}]'


def test_first_disagreement_prefers_the_lowest_fact_then_the_asserting_side():
    assert agreement.first_disagreement(None, None) is None
    assert agreement.first_disagreement((41, "p/x"), (40, "p/y")) == {"fact": 40, "attribute": "p/y",
                                                                       "side": "retracted"}
    assert agreement.first_disagreement((40, "p/x"), (40, "p/x"))["side"] == "asserted"


def test_the_doctor_module_still_exports_the_same_names():
    from fgraph.ops.doctor import agreement as doctor_agreement
    for name in ("ASSERTED", "RETRACTED", "EXCISION_KEYS", "UNKNOWN", "FactWalk", "Payload", "fact_key",
                 "first_disagreement", "key", "uuid_text", "well_formed", "_keys", "_render"):
        assert hasattr(doctor_agreement, name), name
    assert doctor_agreement.Payload is agreement.Payload
