"""The forged-message suite (issue 47 item 1; fgraph/bridges/sync/trust.py, decisions T1–T3 in
docs/forgetting.md), against every log adapter (a real ``nats-server -js`` on loopback and the
memory log) and against file sync: an unsigned excision, one sealed by a stranger's key, one sealed
by the right key but aimed at another store's or the receiver's own data, one replayed from
another stream, one aimed at an attribute, an event with a bad seal and a key rotated without
acceptance are each refused with a typed error naming the record — nothing erased (the receiver's
own ``carol`` and ``person/name`` survive, doctor ok) and the other stores' records still applied;
a legitimate excision still reaches. A trust policy names the keys and may let one erase
anything; a policy with an unknown key format is a typed error that changes nothing."""

from __future__ import annotations

import json
import os
import uuid

import pytest

import fgraph
from fgraph.bridges.sync import adapters, files as file_sync, signing
from fgraph.core.canonical import dumps
from tests.support import canaries, logs
from tests.support.syncing import cli, store_ident as ident, write_items as write

ADAPTERS = [a for a in adapters.DECLARED if a.name in ("memory", "nats")]


@pytest.fixture(params=[a.name for a in ADAPTERS])
def url(request, tmp_path):
    adapter = next(a for a in ADAPTERS if a.name == request.param)
    with getattr(logs, adapter.test_factory)(tmp_path) as made:
        yield made


@pytest.fixture
def stores(tmp_path):
    """a (ada, with canaries), b (bob), and the receiver r with its own carol, person/name first."""
    write(tmp_path / "a.db", {"id": "ada", "note/text": canaries.SHORT, "note/long": canaries.LONG},
          {"id": "p0", "note/text": "plain", "rel/knows": {"ref": "ada"}})
    write(tmp_path / "b.db", {"id": "bob", "note/text": "bob from b"})
    write(tmp_path / "r.db", {"id": "carol", "person/name": "Carol", "note/text": "carol is mine"})
    return tmp_path


def facts(db, name) -> dict:
    """What ``name`` holds now; {} for a name the store never had or whose entity was excised."""
    try:
        return dict(db.entity(name))
    except fgraph.NotFound:
        return {}


def consume(url, target, **options):
    return adapters.sync([url], target, **options)


def survives(tmp, *, ada=True) -> None:
    """The receiver's own carol and person/name, b's bob, and (unless erased) a's ada are all there."""
    with fgraph.connect(tmp / "r.db", read_only=True) as db:
        assert db.entity("carol") == {"person/name": "Carol", "note/text": "carol is mine"}
        assert db.entity("bob")["note/text"] == "bob from b"
        assert bool(facts(db, "ada")) is ada
        assert db.diagnose().ok
    assert (canaries.canary_hits(tmp, "r.db") != {}) is ada


def excision(target) -> tuple[str, str]:
    """A made-up excision record aimed at ``target``: (its message id, its line)."""
    event = str(uuid.uuid4())
    record = {"at": 1, "chain": {}, "event": event, "event_hash": "00", "fgraph": "excision/1", "origin": event,
              "partial": [], "prev": None, "redacts": [], "target": target}
    return "excision:" + event, dumps(record)


def forge(url, store, target, signer=None, scope=None) -> None:
    msg_id, line = excision(target)
    with adapters.open_log(url) as log:
        seal = None if signer is None else signer.seal(scope or log.stream, store, "excision", msg_id, None, line)
        log.put(store, "excision", "", line, msg_id, seal=seal)


def published(tmp, url) -> None:
    adapters.sync([tmp / "a.db"], url)
    adapters.sync([tmp / "b.db"], url)
    consume(url, tmp / "r.db")
    survives(tmp)


def refused_but_others_go_on(tmp, url, match) -> None:
    """Consuming refuses (naming the record), nothing is erased, and b's new record is applied."""
    write(tmp / "b.db", {"id": "bob", "note/more": "after the forgery"})
    adapters.sync([tmp / "b.db"], url)
    with pytest.raises(fgraph.Conflict, match=match) as caught:
        consume(url, tmp / "r.db")
    assert "subject" in caught.value.message and "sequence" in caught.value.message and caught.value.hint
    survives(tmp)
    with fgraph.connect(tmp / "r.db", read_only=True) as db:
        assert db.entity("bob")["note/more"] == "after the forgery"
    with pytest.raises(fgraph.Conflict, match=match):     # refused again, never acknowledged
        consume(url, tmp / "r.db")


def test_an_unsigned_excision_is_refused(stores, url):
    published(stores, url)
    forge(url, ident(stores / "a.db"), "carol")
    refused_but_others_go_on(stores, url, "is unsigned")


def test_an_excision_sealed_by_a_strangers_key_is_refused(stores, url):
    published(stores, url)
    stranger = signing.load(str(stores / "stranger.key"))
    forge(url, ident(stores / "a.db"), "ada", stranger)
    refused_but_others_go_on(stores, url, "but store .* speaks with")


@pytest.mark.parametrize("target", ["carol", "bob", "person/name"])
def test_the_right_key_aimed_at_what_that_store_did_not_bring_is_refused(stores, url, target):
    published(stores, url)
    forge(url, ident(stores / "a.db"), target, signing.for_store(stores / "a.db"))
    refused_but_others_go_on(stores, url, "not from store")


def test_a_new_store_aiming_at_an_attribute_is_refused(stores, url):
    published(stores, url)
    newcomer = signing.load(str(stores / "newcomer.key"))           # trusted on first use, and yet
    forge(url, uuid.uuid4().hex, "person/name", newcomer)
    refused_but_others_go_on(stores, url, "was written here")


def test_an_excision_replayed_from_another_stream_is_refused(stores, url):
    other = url + "Two"
    adapters.open_log(other, create_stream=True).close()
    published(stores, url)
    with fgraph.connect(stores / "a.db") as db:
        db.excise("ada", operation_id="forget-ada", if_basis_tx=db.latest_tx())
    adapters.sync([stores / "a.db"], other)                           # sealed for the other stream
    store = ident(stores / "a.db")
    with adapters.open_log(other) as there, adapters.open_log(url) as here:
        for line in there.excision_records(store):
            record = json.loads(line)
            here.put(store, "excision", "", line, "excision:" + record["event"], seal=line.seal)
    refused_but_others_go_on(stores, url, "does not verify")


def test_an_event_with_a_bad_seal_is_refused(stores, url):
    published(stores, url)
    store, a = ident(stores / "a.db"), signing.for_store(stores / "a.db")
    with adapters.open_log(url) as log:
        prev, event = log.last(store), str(uuid.uuid4())
        line = json.dumps({"event": event, "fgraph": "event/1"})
        seal = a.seal(log.stream, store, "event", event, prev, line.replace("event/1", "event/2"))
        log.append(store, "a.db", line, event, prev, seal=seal)
    refused_but_others_go_on(stores, url, "does not verify")


def test_a_rotated_key_is_refused_until_accepted(stores, url):
    published(stores, url)
    os.replace(stores / "a.db.signing-key", stores / "old.key")       # the owner makes a new key
    write(stores / "a.db", {"id": "ada", "note/after": "rotated"})
    new = adapters.sync([stores / "a.db"], url)["sources"][0]["key"]
    refused_but_others_go_on(stores, url, "speaks with")
    consume(url, stores / "r.db", accept_keys=[f"{ident(stores / 'a.db')}:{new}"])
    with fgraph.connect(stores / "r.db", read_only=True) as db:
        assert db.entity("ada")["note/after"] == "rotated"


def test_a_legitimate_excision_still_reaches(stores, url):
    published(stores, url)
    write(stores / "r.db", {"id": "ada", "note/own": "r's own note on her"})
    with fgraph.connect(stores / "a.db") as db:
        db.excise("ada", operation_id="forget-ada", if_basis_tx=db.latest_tx())
    adapters.sync([stores / "a.db"], url)
    done = consume(url, stores / "r.db")
    assert [e["status"] for e in done["excisions"]] == ["applied"]
    survives(stores, ada=False)                                        # her, with r's note on her; nothing else


# ----------------------------------------------------------------- a trust policy

def policy(tmp, *entries) -> str:
    path = tmp / "trust.json"
    path.write_text(json.dumps({"format": "fgraph-trust/1", "keys": list(entries)}))
    return str(path)


def test_a_policy_with_an_unknown_key_format_is_a_typed_error_that_changes_nothing(stores, url):
    adapters.sync([stores / "a.db"], url)
    bad = policy(stores, {"store": ident(stores / "a.db"), "key": "rsa:AAAA", "may_erase": "own"})
    with fgraph.connect(stores / "r.db", read_only=True) as db:
        before = db.latest_tx()
    with pytest.raises(fgraph.FormatError, match="key 1.*not a key fgraph knows") as caught:
        consume(url, stores / "r.db", trust=bad)
    assert "ed25519:" in caught.value.hint
    with fgraph.connect(stores / "r.db", read_only=True) as db:
        assert db.latest_tx() == before
    assert not (stores / "r.db.sync-keys.json").exists()


def test_a_policy_names_the_only_keys_and_may_let_one_erase_anything(stores, url):
    store = ident(stores / "a.db")
    key = signing.for_store(stores / "a.db")
    adapters.sync([stores / "a.db"], url)
    adapters.sync([stores / "b.db"], url)
    with pytest.raises(fgraph.Conflict, match="names no key for store"):   # b is not in it
        consume(url, stores / "r.db", trust=policy(stores, {"store": store, "key": key.key_id}))
    with fgraph.connect(stores / "r.db", read_only=True) as db:
        assert facts(db, "ada") and not facts(db, "bob")
    grant = policy(stores, {"store": store, "key": key.key_id, "may_erase": "any"},
                   {"store": ident(stores / "b.db"), "key": signing.for_store(stores / "b.db").key_id})
    forge(url, store, "carol", key)
    done = consume(url, stores / "r.db", trust=grant)
    assert [e["status"] for e in done["excisions"]] == ["applied"]
    with fgraph.connect(stores / "r.db", read_only=True) as db:
        assert facts(db, "carol") == {} and db.entity("bob")["note/text"] == "bob from b"


# ----------------------------------------------------------------- file sync

def test_file_sync_refuses_an_excision_of_what_the_source_did_not_bring_and_goes_on(stores):
    write(stores / "r.db", {"id": "ada", "note/own": "r met her first"})      # r's own ada, before a's
    file_sync.sync([stores / "a.db", stores / "b.db"], stores / "r.db")
    with fgraph.connect(stores / "a.db") as db:
        db.transact({"id": "carol", "note/text": "a's carol"})
        db.excise("carol", operation_id="forget-carol", if_basis_tx=db.latest_tx())
    write(stores / "b.db", {"id": "bob", "note/more": "in the same run"})
    with pytest.raises(fgraph.Conflict, match="excision of \"carol\" by store .* was written here") as caught:
        file_sync.sync([stores / "a.db", stores / "b.db"], stores / "r.db")
    assert "fgraph excise" in caught.value.hint
    with fgraph.connect(stores / "r.db", read_only=True) as db:
        assert db.entity("carol")["note/text"] == "carol is mine" and db.entity("bob")["note/more"] == "in the same run"
        assert db.diagnose().ok
    assert (stores / "a.db.signing-key").exists() and (stores / "r.db.sync-keys.json").exists()


def test_file_sync_carries_a_legitimate_excision_and_refuses_a_rotated_key_until_accepted(stores):
    file_sync.sync([stores / "a.db", stores / "b.db"], stores / "r.db")
    with fgraph.connect(stores / "a.db") as db:
        db.transact({"id": "p9", "note/text": "to go"})
        db.excise("p9", operation_id="forget-p9", if_basis_tx=db.latest_tx())
    file_sync.sync([stores / "a.db"], stores / "r.db")       # no key yet: made, pinned
    os.replace(stores / "a.db.signing-key", stores / "old.key")
    with fgraph.connect(stores / "a.db") as db:
        db.excise("ada", operation_id="forget-ada", if_basis_tx=db.latest_tx())
    failed = cli("sync", "--from", "a.db", "--to", "r.db", cwd=stores, check=False)
    err = failed.stderr.decode()
    assert failed.returncode == 1 and err.startswith("Conflict: ") and "Traceback" not in err
    assert "--accept-key" in err
    survives(stores)
    new = signing.for_store(stores / "a.db").key_id
    cli("sync", "--from", "a.db", "--to", "r.db", "--accept-key", f"{ident(stores / 'a.db')}:{new}", cwd=stores)
    survives(stores, ada=False)
