"""``fgraph proposals list|accept|reject`` and ``review``/``render`` of a proposals file (issue 51
item 3, docs/proposals.md): a person decides, exactly what was reviewed is applied, every decision
is audited, an edited file and a store that moved on are refused, an interrupted decision is finished."""

from __future__ import annotations

import json
import os

import pytest

import fgraph
from fgraph.bridges.proposals import decide
from fgraph.bridges.proposals.pending import ProposalFile
from tests.support.cli import invoke_cli
from tests.support.proposals import propose


@pytest.fixture
def setup(tmp_path):
    store, pending = str(tmp_path / "s.db"), str(tmp_path / "p.ndjson")
    with fgraph.connect(store) as db:
        db.transact({"id": "ada", "person/name": "Ada"})
    made = [propose(store, pending, {"id": "ada", "person/name": "Ada L"}, by="agent-1"),
            propose(store, pending, {"id": "bob", "person/name": "Bob"}, by="agent-2", session="s2"),
            propose(store, pending, {"id": "carl", "person/name": "Carl"}, by="agent-1", source="chat 9")]
    return store, pending, made


def cli_json(store, *args):
    code, out, err = invoke_cli(["--db", store, "--json", *args])
    return code, (json.loads(out) if out.strip() else None), err


def store_lines(store) -> list[str]:
    with fgraph.connect(store, read_only=True) as db:
        return list(db.iter_events())


def audit(pending) -> list[dict]:
    try:
        with open(pending + ".decided.ndjson", "rb") as handle:
            return [json.loads(line) for line in handle]
    except FileNotFoundError:
        return []


def test_accept_a_subset_reject_the_rest(setup):
    store, pending, (p1, p2, p3) = setup
    before = store_lines(store)
    code, listed, _ = cli_json(store, "proposals", "list", pending, p1["id"], p2["id"])
    assert code == 0 and [r["id"] for r in listed["proposals"]] == [p1["id"], p2["id"]]
    assert listed["proposals"][1]["by"] == "agent-2" and listed["proposals"][1]["session"] == "s2"
    code, result, err = cli_json(store, "proposals", "accept", pending, p1["id"], p2["id"],
                                 "--expect-digest", listed["digest"], "--by", "alice")
    assert code == 0, err
    assert result["accepted"] == [p1["id"], p2["id"]] and result["applied"]["applied"] == 2
    # the store now holds exactly the accepted events, the bytes the proposals carried
    assert store_lines(store) == before + [p1["event"], p2["event"]]
    assert [r["id"] for r in ProposalFile(pending).records()] == [p3["id"]]
    code, result, err = cli_json(store, "proposals", "reject", pending, "--all", "--reason", "not now", "--by", "bob")
    assert code == 0 and result["rejected"] == [p3["id"]], err
    assert store_lines(store) == before + [p1["event"], p2["event"]]
    assert ProposalFile(pending).records() == []
    first, second = audit(pending)
    assert first["decided_by"] == "alice" and first["digest"] == listed["digest"]
    assert first["accepted"] == [p1, p2] and first["rejected"] == []          # each decided record kept whole
    assert second["decided_by"] == "bob" and second["reason"] == "not now" and second["rejected"] == [p3]
    assert first["decided_at"] == int(__import__("tests.support.cli", fromlist=["x"]).DETERMINISTIC["FGRAPH_CLOCK"])


def test_an_edited_proposals_file_is_refused_at_accept(setup, tmp_path):
    store, pending, (p1, p2, p3) = setup
    code, reviewed, _ = cli_json(store, "review", pending)
    assert code == 0 and reviewed["would_apply"] and len(reviewed["proposals"]) == 3
    # someone swaps the first proposal for another well-formed one (id, digest and all consistent)
    forged = propose(store, str(tmp_path / "other.ndjson"), {"id": "ada", "person/name": "Mallory"}, by="agent-1")
    path = tmp_path / "p.ndjson"
    raw = path.read_bytes().split(b"\n")
    raw[0] = json.dumps(forged, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    path.write_bytes(b"\n".join(raw))
    before, pending_before = store_lines(store), path.read_bytes()
    code, out, err = invoke_cli(["--db", store, "proposals", "accept", pending, "--all",
                                 "--expect-digest", reviewed["digest"]])
    assert code == 1 and out == "" and err.startswith("Conflict: the selected proposals have digest")
    assert "review again" in err
    assert store_lines(store) == before and path.read_bytes() == pending_before and audit(pending) == []


def test_a_store_that_moved_on_is_a_shown_conflict(setup):
    store, pending, (p1, p2, p3) = setup
    with fgraph.connect(store) as db:
        db.transact({"id": "ada", "person/name": "Ada B"})           # after p1 was planned on "Ada"
        db.transact({"id": "zed", "person/name": "Zed"})             # unrelated: no conflict
    before = store_lines(store)
    code, listed, _ = cli_json(store, "proposals", "list", pending)
    assert all(row["stale"] for row in listed["proposals"])
    code, shown, _ = invoke_cli(["--db", store, "review", pending])
    assert code == 1 and "Conflicts" in shown and "Ada B" in shown
    code, out, err = invoke_cli(["--db", store, "proposals", "accept", pending, "--all",
                                 "--expect-digest", listed["digest"]])
    assert code == 1 and "nothing was decided" in out and p1["id"] in out and "Ada B" in out, err
    assert store_lines(store) == before and len(ProposalFile(pending).records()) == 3 and audit(pending) == []
    # the others, planned on a store that changed elsewhere, still go in
    code, sub, _ = cli_json(store, "proposals", "list", pending, p2["id"], p3["id"])
    code, result, err = cli_json(store, "proposals", "accept", pending, p2["id"], p3["id"],
                                 "--expect-digest", sub["digest"])
    assert code == 0 and result["accepted"] == [p2["id"], p3["id"]], err
    assert store_lines(store) == before + [p2["event"], p3["event"]]


def test_a_selection_must_include_what_it_was_planned_on(setup):
    store, pending, (p1, p2, p3) = setup
    later = propose(store, pending, {"id": "ada", "person/age": 36})       # planned on top of p1 (same entity)
    code, sub, _ = cli_json(store, "proposals", "list", pending, later["id"])
    code, out, err = invoke_cli(["--db", store, "proposals", "accept", pending, later["id"],
                                 "--expect-digest", sub["digest"]])
    assert code == 1 and err.startswith("Conflict: the selection leaves out") and p1["id"] in err
    code, out, err = invoke_cli(["--db", store, "proposals", "reject", pending, p1["id"]])
    assert code == 1 and err.startswith("Conflict: later pending proposals") and later["id"] in err
    code, out, err = invoke_cli(["--db", store, "proposals", "reject", pending, p1["id"], later["id"]])
    assert code == 0, err


def test_unknown_ids_and_missing_digest(setup):
    store, pending, _ = setup
    code, out, err = invoke_cli(["--db", store, "proposals", "reject", pending, "p-000000000000000000000000"])
    assert code == 1 and err.startswith("NotFound: no pending proposal p-000000000000000000000000")
    code, out, err = invoke_cli(["--db", store, "proposals", "accept", pending, "--all"])
    assert code == 2 and "--expect-digest" in err
    code, out, err = invoke_cli(["--db", store, "proposals", "reject", pending])
    assert code == 1 and err.startswith("FormatError: no proposal was named")


def test_render_and_review_digest_of_a_proposals_file(setup):
    store, pending, (p1, p2, p3) = setup
    code, text, _ = invoke_cli(["render", pending])
    assert code == 0 and text.count("proposal p-") == 3 and 'by "agent-2"' in text and 'source "chat 9"' in text
    assert 'assert bob person/name = "Bob"' in text
    code, digest, _ = invoke_cli(["review", "--digest", pending])
    code, listed, _ = cli_json(store, "proposals", "list", pending)
    assert digest.strip() == listed["digest"]
    code, shown, _ = invoke_cli(["--db", store, "review", pending])
    assert code == 0 and f"--expect-digest {listed['digest']}" in shown and "session \"s2\"" in shown


def test_an_interrupted_decision_is_finished_by_the_next_command(setup, monkeypatch):
    store, pending, (p1, p2, p3) = setup
    digest = decide.stream_digest([p1, p2])

    class Killed(BaseException):
        pass

    def killed(*args, **kwargs):
        raise Killed()
    real = decide.finish
    monkeypatch.setattr(decide, "finish", killed)      # the intent is written, nothing else
    with fgraph.connect(store) as db, pytest.raises(Killed):
        decide.decide(db, pending, [p1["id"], p2["id"]], accept=True, expect_digest=digest, by="alice")
    monkeypatch.setattr(decide, "finish", real)
    before = store_lines(store)
    assert len(ProposalFile(pending).records()) == 3 and audit(pending) == []
    code, listed, err = cli_json(store, "proposals", "list", pending)
    assert code == 0, err
    assert listed["recovered"]["accepted"] == [p1["id"], p2["id"]]
    assert [r["id"] for r in listed["proposals"]] == [p3["id"]]
    assert store_lines(store) == before + [p1["event"], p2["event"]]
    assert [d["accepted"] for d in audit(pending)] == [[p1, p2]]


@pytest.mark.parametrize("kind", ["link", "fifo", "directory", "read-only"])
def test_a_hostile_pending_file_is_a_typed_error_and_nothing_is_decided(setup, tmp_path, kind):
    store, pending, (p1, p2, p3) = setup
    digest = decide.stream_digest([p1, p2, p3])
    before = store_lines(store)
    path = tmp_path / "p.ndjson"
    if kind == "read-only":
        path.chmod(0o444)
    else:
        moved = tmp_path / "moved.ndjson"
        path.rename(moved)
        if kind == "link":
            path.symlink_to(moved)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            path.mkdir()
    code, out, err = invoke_cli(["--db", store, "proposals", "accept", pending, "--all", "--expect-digest", digest])
    expected = {"link": "Conflict: the proposals file", "fifo": "Conflict: the proposals file",
                "directory": "Conflict: the proposals file", "read-only": "ReadOnly: the proposals file"}[kind]
    assert code == 1 and out == "" and err.startswith(expected) and "Traceback" not in err, err
    assert store_lines(store) == before and audit(pending) == [] and not os.path.exists(decide.intent_path(pending))


@pytest.mark.parametrize("kind", ["link", "directory"])
def test_a_hostile_audit_file_is_refused_before_anything_is_written(setup, tmp_path, kind):
    store, pending, (p1, p2, p3) = setup
    before = store_lines(store)
    target = tmp_path / "p.ndjson.decided.ndjson"
    if kind == "link":
        target.symlink_to(tmp_path / "elsewhere")
    else:
        target.mkdir()
    code, out, err = invoke_cli(["--db", store, "proposals", "reject", pending, "--all"])
    assert code == 1 and err.startswith("Conflict: proposals audit"), err
    assert store_lines(store) == before and len(ProposalFile(pending).records()) == 3
    assert not os.path.exists(decide.intent_path(pending)) and not (tmp_path / "elsewhere").exists()


def test_a_missing_store_is_not_created(setup, tmp_path):
    store, pending, _ = setup
    code, out, err = invoke_cli(["--db", str(tmp_path / "new.db"), "proposals", "list", pending])
    assert code == 1 and err.startswith("NotFound: the receiver database") and not (tmp_path / "new.db").exists()


@pytest.mark.parametrize("left", ["torn audit line", "audit written", "pending rewritten and audit written"])
def test_each_step_of_a_decision_is_done_once_when_finished_again(setup, monkeypatch, tmp_path, left):
    """A kill after part of step 4: the next command neither repeats nor loses a step."""
    store, pending, (p1, p2, p3) = setup
    digest = decide.stream_digest([p1])

    class Killed(BaseException):
        pass

    def killed(*args, **kwargs):
        raise Killed()
    real = decide.finish
    monkeypatch.setattr(decide, "finish", killed)
    with fgraph.connect(store) as db, pytest.raises(Killed):
        decide.decide(db, pending, [p1["id"]], accept=True, expect_digest=digest, by="alice")
    monkeypatch.setattr(decide, "finish", real)
    with open(decide.intent_path(pending), "rb") as handle:
        line = (json.dumps(json.loads(handle.read())["decision"], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False) + "\n").encode()
    audit_file = tmp_path / "p.ndjson.decided.ndjson"
    if left == "torn audit line":
        audit_file.write_bytes(line[: len(line) // 2])
    else:
        audit_file.write_bytes(line)
        with fgraph.connect(store) as db:
            db.apply(p1["event"] + "\n")
        if left.startswith("pending rewritten"):
            ProposalFile(pending).replace([p2, p3])
    code, listed, err = cli_json(store, "proposals", "list", pending)
    assert code == 0 and listed["recovered"]["accepted"] == [p1["id"]], err
    assert audit_file.read_bytes() == line                              # one whole line, not two
    assert [r["id"] for r in ProposalFile(pending).records()] == [p2["id"], p3["id"]]
    assert store_lines(store).count(p1["event"]) == 1
    assert not os.path.exists(decide.intent_path(pending))
