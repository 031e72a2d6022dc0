"""Proves the content digest (issue 48 item 6, docs/replication.md "Comparing copies"): two centrals
fanned in by `fgraph sync` from the same sources, in other orders and at other times, share it while
their `info --digest` differs; any change of knowledge changes it; an excision carried to both keeps
them equal; it is the sha256 of the shared event lines in UUID order, read page by page."""

from __future__ import annotations

import hashlib
import json

import orjson
import pytest

import fgraph
from fgraph.streams import content_digest as content
from tests.support.peerlib import our_executable, peer, peer_executable, run_cli
from tests.support.syncing import fg, write_sources


def info(tmp, db: str) -> dict:
    return json.loads(fg("--db", db, "--json", "info", "--digest", "--content-digest", cwd=tmp).stdout)


def fan_in(tmp, target: str, groups, seed: str) -> None:
    for group in groups:
        fg("--json", "sync", *[a for n in group for a in ("--from", f"{n}.db")], "--to", target, cwd=tmp, seed=seed)


def test_centrals_fanned_in_in_other_orders_share_the_content_digest_not_the_logical_one(tmp_path):
    write_sources(tmp_path, 6)
    fan_in(tmp_path, "one.db", [("a", "b", "c")], seed="central-one")
    fan_in(tmp_path, "two.db", [("c",), ("b",), ("a",)], seed="central-two")
    one, two = info(tmp_path, "one.db"), info(tmp_path, "two.db")
    assert one["digest"] != two["digest"]                      # local receipt times and genesis differ
    assert one["content_digest"] == two["content_digest"] and one["content_events"] == two["content_events"] == 18
    assert one["basis_tx"] == one["latest_tx"]

    doctor = json.loads(fg("--db", "two.db", "--json", "doctor", "--digests", cwd=tmp_path).stdout)
    assert doctor["ok"] and doctor["digests"] == {key: two[key] for key in
                                                  ("basis_tx", "content_digest", "content_events", "digest")}
    plain = json.loads(fg("--db", "two.db", "--json", "doctor", cwd=tmp_path).stdout)
    assert "digests" not in plain and len(plain) == 13        # the published report is unchanged without --digests
    text = fg("--db", "one.db", "doctor", "--digests", cwd=tmp_path).stdout.decode()
    assert f"content {one['content_digest']} (18 events)" in text

    # more knowledge in one copy: the digests part, and meet again once the other has it too
    fg("--db", "a.db", "add", '{"id":"a-new","item/v":99}', cwd=tmp_path, seed="src-a-2")
    fan_in(tmp_path, "one.db", [("a",)], seed="central-one")
    changed = info(tmp_path, "one.db")
    assert changed["content_digest"] != one["content_digest"] and changed["content_events"] == 19
    fan_in(tmp_path, "two.db", [("a",)], seed="central-two")
    assert info(tmp_path, "two.db")["content_digest"] == changed["content_digest"]

    # an excision carried to both: each records it under its own UUID and time, and still they agree
    latest = info(tmp_path, "b.db")["latest_tx"]
    fg("--db", "b.db", "excise", "b-1", "--operation-id", "forget-b-1", "--if-basis-tx", str(latest), cwd=tmp_path,
       seed="src-b-2")
    fan_in(tmp_path, "one.db", [("b",)], seed="central-one")
    fan_in(tmp_path, "two.db", [("b",)], seed="central-two")
    one, two = info(tmp_path, "one.db"), info(tmp_path, "two.db")
    assert one["content_digest"] == two["content_digest"] != changed["content_digest"]
    assert one["content_events"] == 19                          # the excised events count as their stubs


def test_every_new_event_changes_it(tmp_path):
    with fgraph.connect(str(tmp_path / "x.db")) as db:
        db.transact({"id": "ada", "person/name": "Ada"})
        first = db.info(content_digest=True)
        db.transact({"id": "ada", "person/name": "Ada L."})
        second = db.info(content_digest=True)
        db.transact({"id": "bob", "n/x": 1})
        third = db.info(content_digest=True)
    assert len({first["content_digest"], second["content_digest"], third["content_digest"]}) == 3
    assert [first["content_events"], second["content_events"], third["content_events"]] == [1, 2, 3]


def test_it_is_the_sha256_of_the_shared_lines_in_uuid_order_read_a_page_at_a_time(tmp_path, monkeypatch):
    with fgraph.connect(str(tmp_path / "x.db")) as db:
        for i in range(23):
            db.transact({"id": f"e{i % 5}", "item/v": i})
        lines = list(db.iter_events())
        expected = hashlib.sha256(b"".join(
            line.encode() + b"\n" for line in sorted(lines, key=lambda line: orjson.loads(line)["event"]))).hexdigest()
        whole = content.digests_at(db.connection, logical=False)
        monkeypatch.setattr(content, "PAGE", 4)                 # page boundaries fall inside the events
        paged = content.digests_at(db.connection, logical=False)
    assert whole == paged == {"basis_tx": whole["basis_tx"], "content_digest": expected, "content_events": 23}


def test_it_reads_the_uuid_index_and_never_sorts_every_event(tmp_path):
    with fgraph.connect(str(tmp_path / "x.db")) as db:
        db.transact({"id": "ada", "person/name": "Ada"})
        plan = " ".join(str(row[-1]) for row in db.connection.execute(
            "EXPLAIN QUERY PLAN " + content.EVENTS_SQL, (b"", 64, 100, 11, 512)))
    assert content.GID_INDEX in plan and "TEMP B-TREE" not in plan, plan


@pytest.mark.peer
@pytest.mark.skipif(peer_executable() is None, reason="FGRAPH_PEER is not set")
def test_copies_made_by_either_runtime_share_the_content_digest_of_the_peer_written_store(tmp_path):
    source, ours, theirs = tmp_path / "source.db", tmp_path / "ours.db", tmp_path / "theirs.db"
    for record in ('{"id":"ada","person/name":"Ada"}', '{"id":"bob","person/knows":{"ref":"ada"}}',
                   '{"id":"ada","person/name":"Ada L."}'):
        peer(source, "add", record)
    stream = peer(source, "tail")
    run_cli(our_executable(), ours, "apply", "-", stdin=stream, seed="ours")
    run_cli(peer_executable(), theirs, "apply", "-", stdin=stream, seed="theirs")
    found = [info(tmp_path, path.name) for path in (source, ours, theirs)]
    assert len({f["content_digest"] for f in found}) == 1 and found[0]["content_events"] == 3
    assert found[0]["digest"] != found[1]["digest"]           # the receivers hold their own receipts of the events
