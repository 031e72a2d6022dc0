"""Names forgotten too (issue 47 item 4, decision F5 in docs/forgetting.md), on what an mcp-memory
import makes of a person: the entity named ``Farid Haddad`` with observations and relations.

- After a plain ``excise`` no surface suggests the name (CLI ``get`` near misses and case, MCP
  ``about``), while the name itself stays as the published runtime keeps it.
- After ``excise --erase-name`` every surface answers exactly as in a store that never had the name,
  and its bytes are in none of the store's files (database, WAL), a snapshot, a backup, nor the files
  of stores that received the excision by file sync (two hops) or through the memory log adapter.
- The snapshot of such a store restores in the published runtime (FGRAPH_PEER), doctor ok.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

import fgraph
from fgraph.bridges.sync import adapters, files as file_sync
from fgraph.bridges.sync.adapters import memory
from tests.support.canaries import canary_hits
from tests.support.cli import clean_env, run_cli
from tests.support.mcp import OURS, session_run
from tests.support.peerlib import peer_executable

NAME = "Farid Haddad"
# the name's words in every case a stored form may take (the full-text index folds case)
NAME_BYTES = [b"Farid", b"farid", b"FARID", b"Haddad", b"haddad", b"HADDAD"]
FARID = ('{"type":"entity","name":"Farid Haddad","entityType":"person",'
         '"observations":["Prefers mint tea","Moved to Lyon in 2024"]}\n')
OTHERS = ('{"type":"entity","name":"Acme Corp","entityType":"company","observations":["Makes anvils"]}\n'
          '{"type":"entity","name":"Grace Hopper","entityType":"person","observations":["Worked on the Mark I"]}\n')
RELATIONS = ('{"type":"relation","from":"Farid Haddad","to":"Acme Corp","relationType":"works_at"}\n'
             '{"type":"relation","from":"Grace Hopper","to":"Farid Haddad","relationType":"knows"}\n'
             '{"type":"relation","from":"Grace Hopper","to":"Acme Corp","relationType":"advises"}\n')
NEVER = ('{"type":"relation","from":"Grace Hopper","to":"Acme Corp","relationType":"advises"}\n')


def fg(*args, db=None, check=True):
    return run_cli(*args, db=db, env=clean_env(), check=check)


def imported(directory: Path, name: str = "a.db", with_farid: bool = True) -> Path:
    """A store holding an mcp-memory import; without Farid it is the store that never had him."""
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "memory.jsonl"
    source.write_text((FARID + OTHERS + RELATIONS) if with_farid else (OTHERS + NEVER), encoding="utf-8")
    fg("import", "mcp-memory", source, db=directory / name)
    return directory / name


def latest(path: Path) -> int:
    return json.loads(fg("--json", "info", db=path).stdout)["latest_tx"]


def excise(path: Path, *extra) -> dict:
    done = fg("--json", "excise", NAME, "--operation-id", "gdpr-17", "--if-basis-tx", latest(path), *extra, db=path)
    return json.loads(done.stdout)


def surfaces(path: Path) -> dict:
    """What each surface that reads or suggests a name answers about Farid: (exit, stdout, stderr) of
    the CLI reads, the MCP about calls' (error flag, text)."""
    out = {}
    for ref in (NAME, "Farid", "farid haddad", "Haddad"):
        proc = fg("get", ref, db=path, check=False)
        out[f"get {ref}"] = (proc.returncode, proc.stdout, proc.stderr)
    proc = fg("history", NAME, db=path, check=False)
    out["history"] = (proc.returncode, proc.stdout, proc.stderr)

    async def about(session):
        answers = []
        for ref in (NAME, "Farid", "farid haddad"):
            result = await session.call_tool("about", {"entity": ref})
            answers.append((ref, result.is_error, [c.text for c in result.content]))
        return answers
    out["about"] = session_run(OURS, path, about)
    return out


def test_a_plain_excision_keeps_the_name_as_published_but_no_surface_suggests_it(tmp_path):
    path = imported(tmp_path / "s")
    excise(path)
    assert fg("get", NAME, db=path).stdout.strip() == "{}"        # the published behaviour: the name stays
    assert canary_hits(path.parent, "a.db", NAME_BYTES)           # the control: its bytes are there
    for ref in ("Farid", "farid haddad", "Haddad"):               # a near miss, another case, one word
        proc = fg("get", ref, db=path, check=False)
        assert proc.returncode == 1 and proc.stderr.startswith("NotFound: ") and NAME not in proc.stderr, ref
    for ref, is_error, texts in surfaces(path)["about"][1:]:
        assert is_error and NAME not in " ".join(texts), (ref, texts)
    grace = fg("get", "Grace", db=path, check=False)               # the control: suggestions still work
    assert "did you mean 'Grace Hopper'?" in grace.stderr


def test_an_erased_name_answers_everywhere_as_a_name_that_never_existed(tmp_path):
    path = imported(tmp_path / "s")
    never = imported(tmp_path / "never", with_farid=False)
    report = excise(path, "--erase-name")
    assert report["status"] == "applied" and report["scrub"]["complete"] is True
    assert report["asserted"][1]["a"] == "fgraph/excised"
    assert isinstance(report["asserted"][1]["v"]["ref"], int)      # the receipt names it by id
    ours, theirs = surfaces(path), surfaces(never)
    assert ours == theirs
    assert ours[f"get {NAME}"][0] == 1 and ours[f"get {NAME}"][2].startswith("NotFound: ")
    tx = fg("tx", report["tx"], db=path)
    assert "fgraph/excised" in tx.stdout and "Farid" not in tx.stdout
    tail = fg("tail", db=path).stdout
    assert "Farid" not in tail and "Haddad" not in tail
    assert json.loads(fg("--json", "doctor", db=path).stdout)["ok"] is True
    # its bytes: not in the file nor its WAL, nor a snapshot or a backup made afterwards
    assert canary_hits(path.parent, "a.db", NAME_BYTES) == {}
    snapshot = run_cli("snapshot", db=path, env=clean_env(), text=False, check=True).stdout
    assert not any(needle in snapshot for needle in NAME_BYTES)
    fg("backup", tmp_path / "s" / "backup.db", db=path)
    assert canary_hits(path.parent, "backup.db", NAME_BYTES) == {}
    restored = tmp_path / "s" / "restored.db"
    run_cli("restore", "-", db=restored, input=snapshot, text=False, env=clean_env(), check=True)
    assert json.loads(fg("--json", "doctor", db=restored).stdout)["ok"] is True


def test_erase_name_after_a_plain_excision_erases_the_name_it_kept(tmp_path):
    path = imported(tmp_path / "s")
    excise(path)
    assert canary_hits(path.parent, "a.db", NAME_BYTES)
    done = fg("--json", "excise", NAME, "--erase-name", "--operation-id", "gdpr-17b", "--if-basis-tx", latest(path),
              db=path)
    assert json.loads(done.stdout)["status"] == "applied"
    assert canary_hits(path.parent, "a.db", NAME_BYTES) == {}
    assert fg("get", NAME, db=path, check=False).returncode == 1


def test_the_erase_name_request_is_another_request(tmp_path):
    """A retry under the same operation id must ask for the same thing: with or without the flag."""
    path = imported(tmp_path / "s")
    basis = latest(path)
    fg("excise", NAME, "--erase-name", "--operation-id", "op", "--if-basis-tx", basis, db=path)
    again = fg("--json", "excise", NAME, "--erase-name", "--operation-id", "op", "--if-basis-tx", basis, db=path)
    assert json.loads(again.stdout)["status"] == "already_applied" and "Farid" not in again.stdout
    other = fg("excise", NAME, "--operation-id", "op", "--if-basis-tx", basis, db=path, check=False)
    assert other.returncode == 1 and other.stderr.startswith("Conflict: ")


def written(path: Path, second_in_its_transaction: bool) -> int:
    """A store written by transactions (whose snapshots the published runtime restores): Farid with
    observations and refs, created first or second in his transaction; returns the latest tx."""
    with fgraph.connect(path) as db:
        db.transact({"id": "Acme Corp", "memory/type": "company"})
        farid = {"id": NAME, "memory/type": "person", "memory/observation": "Prefers mint tea",
                 "rel/works_at": {"ref": "Acme Corp"}}
        other = {"id": "Ben Okafor", "memory/type": "person", "rel/knows": {"ref": NAME}}
        db.transact([other, farid] if second_in_its_transaction else [farid, other])
        db.transact({"id": NAME, "memory/observation": "Moved to Lyon in 2024"})
        db.transact({"id": "Grace Hopper", "rel/knows": {"ref": NAME}, "memory/observation": "Worked on the Mark I"})
        return db.latest_tx()


@pytest.mark.parametrize("second", [False, True])
def test_the_snapshot_of_a_store_with_an_erased_name_restores_in_both_runtimes(tmp_path, second):
    path = tmp_path / "a.db"
    basis = written(path, second)
    with fgraph.connect(path) as db:
        db.excise(NAME, operation_id="gdpr-17", if_basis_tx=basis, erase_name=True)
        snapshot = db.snapshot()
        assert db.doctor()["ok"] is True
    assert "Farid" not in snapshot and "Haddad" not in snapshot
    with fgraph.connect(tmp_path / "ours.db") as restored:
        restored.restore(snapshot)
        assert restored.snapshot() == snapshot
    peer = peer_executable()
    if peer is None:
        pytest.skip("FGRAPH_PEER is not set: the published runtime's restore is not tried")
    target = tmp_path / "peer.db"
    run_cli("restore", "-", db=target, input=snapshot, executable=peer, env=clean_env(), check=True)
    doctor = run_cli("--json", "doctor", db=target, executable=peer, env=clean_env(), check=True)
    assert json.loads(doctor.stdout)["ok"] is True
    assert run_cli("snapshot", db=target, executable=peer, env=clean_env(), check=True).stdout == snapshot


@pytest.fixture
def log_url():
    made = f"memory://erase-name-{uuid.uuid4().hex}"
    yield made
    memory.drop(made)


def test_receivers_by_file_sync_and_by_the_memory_log_forget_the_name_too(tmp_path, log_url):
    a = imported(tmp_path)
    hub, edge, late = tmp_path / "hub.db", tmp_path / "edge.db", tmp_path / "late.db"
    file_sync.sync([str(a)], str(hub))
    file_sync.sync([str(hub)], str(edge))
    adapters.sync([str(a)], log_url, create_stream=True)
    adapters.sync([log_url], str(late))
    for store in (hub, edge, late):
        assert fg("get", NAME, db=store).stdout.strip() != "{}", store   # each holds Farid, named
    excise(a, "--erase-name")
    file_sync.sync([str(a)], str(hub))
    file_sync.sync([str(hub)], str(edge))        # the second hop: hub's own excision carries the flag on
    adapters.sync([str(a)], log_url)
    adapters.sync([log_url], str(late))
    never = imported(tmp_path / "never", with_farid=False)
    for store in (hub, edge, late):
        assert fg("get", NAME, db=store, check=False).stderr == fg("get", NAME, db=never, check=False).stderr, store
        assert json.loads(fg("--json", "doctor", db=store).stdout)["ok"] is True, store
        assert canary_hits(tmp_path, store.name, NAME_BYTES) == {}, store
        assert fg("get", "Grace Hopper", db=store).stdout.strip() != "{}"   # the others stay
