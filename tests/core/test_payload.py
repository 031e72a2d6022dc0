"""core/payload (issue 29 item 8): a stored event whose bytes no longer match their hash (a flipped
bit, bytes that are not UTF-8) is a finding of doctor and a typed FormatError naming its
transaction for every read that streams payloads — never an internal error, never altered text."""

from __future__ import annotations

import apsw
import pytest

import fgraph
from fgraph.core.errors import FormatError
from fgraph.core.payload import damage, stored_text, verified_text
from tests.support.constants import CONFORMANCE_CLOCK
from tests.support.torture import cli

GOOD = '{"a":"café"}'.encode()


def test_the_stored_text_is_verified_against_its_hash():
    from hashlib import sha256
    digest = sha256(GOOD).digest()
    assert verified_text(70, GOOD, digest) == '{"a":"café"}' and damage(GOOD, digest) is None
    assert verified_text(70, None, digest) is None
    with pytest.raises(FormatError, match=r"event e-1 \(transaction 70\) is damaged: .*does not match its hash"):
        verified_text(70, GOOD.replace(b"a", b"b"), digest, "e-1")
    bad = GOOD.replace("é".encode(), b"\xe9")
    with pytest.raises(FormatError, match=r"transaction 70 is damaged: .*not valid UTF-8 \(byte 9\)"):
        verified_text(70, bad, digest, lambda: 1 / 0)  # a failing name lookup still names the transaction
    assert stored_text(bad) == bad and stored_text(GOOD) == '{"a":"café"}' and stored_text(None) is None


@pytest.fixture(params=["not utf-8", "altered text"])
def damaged(tmp_path, request):
    path = tmp_path / "d.db"
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        tx = db.transact({"id": "ada", "person/name": "Ada Lovelace"})["tx"]
        db.transact({"id": "bob", "person/name": "Bob"})
    conn = apsw.Connection(str(path))
    replacement = b"\xff" if request.param == "not utf-8" else b"a"
    conn.execute("UPDATE fgraph_events SET event_data = CAST(replace(CAST(event_data AS BLOB), CAST('Ada' AS BLOB), "
                 "?) AS TEXT) WHERE tx = ?", (replacement + b"da", tx))
    conn.close()
    return path, tx


def test_doctor_reports_the_damaged_payload(damaged):
    path, tx = damaged
    with fgraph.connect(str(path), read_only=True) as db:
        report = db.doctor()
    assert not report["ok"] and any(p.startswith(f"event {tx} payload is invalid") for p in report["problems"])


@pytest.mark.parametrize("command", [["tail", "--since", "64"], ["snapshot"], ["info", "--digest"], ["doctor"]])
def test_reads_fail_typed_and_name_the_transaction(damaged, command):
    path, tx = damaged
    code, out, err = cli("--db", str(path), *command)
    assert code == 1 and "Traceback" not in err and "internal error" not in err and len(err) < 400
    if command[0] != "doctor":
        assert err.startswith("FormatError: event ") and f"(transaction {tx}) is damaged" in err
        assert "\ufffd" not in out and "ada" not in out.split("\n")[-1]
    else:
        assert f"event {tx} payload is invalid" in out


@pytest.fixture(params=["a fact's text", "an attribute's name"])
def damaged_text(tmp_path, request):
    """Bytes that are not UTF-8 in a TEXT column outside the event log (a flipped bit in a page)."""
    path = tmp_path / "t.db"
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "ada", "person/name": "Ada Lovelace", "person/born": 1815})
    conn = apsw.Connection(str(path))
    if request.param == "a fact's text":
        conn.execute("UPDATE fgraph_facts SET v = CAST(X'4164ff61' AS TEXT) WHERE v = 'Ada Lovelace'")
    else:
        conn.execute("UPDATE fgraph_ids SET name = CAST(X'706572736f6e2fff626f726e' AS TEXT) WHERE name = 'person/born'")
    conn.close()
    return path


def test_doctor_reports_text_that_is_not_utf8_as_a_finding(damaged_text):
    code, out, err = cli("--db", str(damaged_text), "doctor")
    assert code == 1 and "Traceback" not in err and "internal error" not in err
    assert "not valid UTF-8" in out + err and len(err) < 400


#: the reads that meet the damaged text, per damage; the others must answer as before
MEETS = {"a fact's text": {"get", "history", "datoms", "q"},
         "an attribute's name": {"get", "history", "datoms", "info", "schema"}}


@pytest.mark.parametrize("command", [["get", "ada"], ["history", "ada"], ["datoms", "eavt"], ["info"], ["schema"],
                                     ["q", '{"find":["?n"],"where":[["?e","person/name","?n"]]}']])
def test_every_read_of_text_that_is_not_utf8_is_a_typed_format_error(damaged_text, request, command):
    code, out, err = cli("--db", str(damaged_text), *command)
    assert "Traceback" not in err and "internal error" not in err
    if command[0] in MEETS[request.node.callspec.params["damaged_text"]]:
        assert code == 1 and out == "" and err.startswith("FormatError: the database holds text that is not valid "
                                                          "UTF-8 (byte ") and "Ad" not in err
    else:
        assert code == 0 and err == ""


def test_a_registry_row_lost_to_damage_is_a_typed_format_error(tmp_path):
    path = tmp_path / "r.db"
    with fgraph.connect(str(path), clock=CONFORMANCE_CLOCK) as db:
        db.transact({"id": "ada", "person/name": "Ada Lovelace", "person/born": 1815})
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("DELETE FROM fgraph_ids WHERE name = 'person/born'")   # what a lost cell leaves
    conn.close()
    for command in (["snapshot"], ["search", "--text", "ada"]):
        code, out, err = cli("--db", str(path), *command)
        assert code == 1 and "internal error" not in err and "Traceback" not in err
        assert err.startswith("FormatError: ") and "the file is damaged" in err, (command, err)
    code, out, _ = cli("--db", str(path), "doctor")
    assert code == 1 and "problem" in out
