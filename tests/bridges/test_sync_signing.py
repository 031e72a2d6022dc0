"""A store's signing key and its seals (fgraph/bridges/sync/signing.py, decision T1 in
docs/forgetting.md): the key is created on first use, owner-only and exclusively, and never shown;
a key file that is malformed, a link, a FIFO or readable by others is a typed error with a hint and
nothing is published; a seal verifies for exactly the record it was made for — another stream,
store, kind, id, predecessor or byte does not."""

from __future__ import annotations

import os
import stat
import uuid

import pytest

import fgraph
from fgraph.bridges.sync import adapters, signing
from fgraph.bridges.sync.adapters import memory


def test_the_key_is_created_owner_only_on_first_use_and_read_back_the_same(tmp_path):
    path = tmp_path / "a.db.signing-key"
    first = signing.load(str(path))
    mode = stat.S_IMODE(os.lstat(path).st_mode)
    assert mode == 0o600
    text = path.read_text()
    assert text.startswith(signing.KEY_FORMAT + "\n") and first.key_id.startswith("ed25519:")
    assert signing.load(str(path)).key_id == first.key_id          # read back, not made again
    seed = text.splitlines()[1].split(":", 1)[1]
    assert seed not in repr(first) and seed not in first.key_id     # the private part is never shown


def test_a_seal_verifies_for_its_record_only():
    signer = signing.Signer(os.urandom(32), "memory")
    event, prev = str(uuid.uuid4()), str(uuid.uuid4())
    fields = ("EVENTS", "a" * 32, "event", event, prev, '{"event":"x"}')
    seal = signer.seal(*fields)
    assert signing.verify(seal, *fields)
    for i, other in enumerate(("OTHER", "b" * 32, "excision", str(uuid.uuid4()), None, '{"event":"y"}')):
        changed = list(fields)
        changed[i] = other
        assert not signing.verify(seal, *changed), i
    assert not signing.verify(None, *fields)
    assert not signing.verify(signing.Seal("rsa:abc", seal.sig), *fields)
    flipped = seal.sig[:10] + ("B" if seal.sig[10] == "A" else "A") + seal.sig[11:]   # one bit pattern of R changed
    assert not signing.verify(signing.Seal(seal.key, flipped), *fields)
    stranger = signing.Signer(os.urandom(32), "memory")
    assert not signing.verify(signing.Seal(stranger.key_id, seal.sig), *fields)


def test_an_unknown_key_format_is_a_format_error_with_a_hint():
    with pytest.raises(fgraph.FormatError, match="not a key fgraph knows") as caught:
        signing.public_key_bytes("rsa:AAAA")
    assert "ed25519:" in caught.value.hint


def _store(tmp_path):
    with fgraph.connect(tmp_path / "a.db") as db:
        db.transact({"id": "ada", "person/name": "Ada"})
    return tmp_path / "a.db"


def _publish_refused(tmp_path, error, match):
    url = f"memory://signing-{uuid.uuid4().hex}"
    adapters.open_log(url, create_stream=True).close()
    try:
        with pytest.raises(error, match=match) as caught:
            adapters.sync([tmp_path / "a.db"], url)
        assert caught.value.hint
        with adapters.open_log(url) as log:
            assert log.pending("fgraph-anyone") == 0                 # nothing was published
    finally:
        memory.drop(url)
    return caught.value


def test_a_malformed_key_file_is_refused_and_nothing_is_published(tmp_path):
    _store(tmp_path)
    key = tmp_path / "a.db.signing-key"
    key.write_text("fgraph-signing-key/1\ned25519-seed:not-a-seed\n")
    os.chmod(key, 0o600)
    error = _publish_refused(tmp_path, fgraph.FormatError, "is not an fgraph signing key")
    assert "accept-key" in error.hint
    assert key.read_text().endswith("not-a-seed\n")                    # left as it was


def test_a_key_file_others_may_read_is_refused_and_nothing_is_published(tmp_path):
    _store(tmp_path)
    key = tmp_path / "a.db.signing-key"
    signing.load(str(key))
    os.chmod(key, 0o640)
    error = _publish_refused(tmp_path, fgraph.ReadOnly, "may be read by others")
    assert "chmod 600" in error.hint
    assert stat.S_IMODE(os.lstat(key).st_mode) == 0o640


@pytest.mark.parametrize("kind", ["link", "fifo", "directory"])
def test_a_key_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    _store(tmp_path)
    key = tmp_path / "a.db.signing-key"
    elsewhere = tmp_path / "elsewhere"
    if kind == "link":
        key.symlink_to(elsewhere)                      # dangling: nothing may be created through it
    elif kind == "fifo":
        os.mkfifo(key)
    else:
        key.mkdir()
    _publish_refused(tmp_path, fgraph.Conflict, "symbolic link|not a regular file")
    assert not elsewhere.exists()


def test_a_key_named_by_the_user_is_used_and_created_there(tmp_path):
    _store(tmp_path)
    chosen = tmp_path / "keys" / "a.key"
    chosen.parent.mkdir()
    url = f"memory://signing-{uuid.uuid4().hex}"
    adapters.open_log(url, create_stream=True).close()
    try:
        summary = adapters.sync([tmp_path / "a.db"], url, signing_key=str(chosen))
        assert summary["sources"][0]["key"] == signing.load(str(chosen)).key_id
        assert not (tmp_path / "a.db.signing-key").exists()
    finally:
        memory.drop(url)


def test_a_run_of_chained_records_is_proved_by_one_signature_and_a_changed_record_is_not(monkeypatch):
    from fgraph.bridges.sync import trust
    from fgraph.bridges.sync.log import Record
    signer, store = signing.Signer(os.urandom(32), "memory"), "a" * 32
    records, prev = [], None
    for n in range(5):
        event = str(uuid.uuid4())
        line = '{"event":"%s","n":%d}' % (event, n)
        seal = signer.seal_next("EVENTS", store, "event", event, prev, line)
        records.append(Record(line=line, event=event, store=store, prev=prev, seal=seal))
        prev = event
    calls = []
    real = trust.verify_signed
    monkeypatch.setattr(trust, "verify_signed", lambda *args: calls.append(args) or real(*args))
    assert trust.verified_runs(records, "EVENTS") == {id(r) for r in records} and len(calls) == 1
    assert trust.verified_runs(records, "OTHER") == set()                  # another stream proves nothing
    changed = Record(line=records[2].line.replace('"n":2', '"n":7'), event=records[2].event, store=store,
                     prev=records[2].prev, seal=records[2].seal)
    records[2] = changed
    proved = trust.verified_runs(records, "EVENTS")
    assert id(changed) not in proved and {id(r) for r in records[3:]} <= proved
    assert not signing.verify(changed.seal, "EVENTS", store, "event", changed.event, changed.prev, changed.line)
    assert all(signing.verify(r.seal, "EVENTS", store, "event", r.event, r.prev, r.line) for r in records[:2])
