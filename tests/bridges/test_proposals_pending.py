"""The pending proposals file (issue 51, docs/proposals.md P2): never a link, FIFO, directory or a
read-only file silently; whole lines under a lock, also with several writers and a rewriter at once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import fgraph
from fgraph.bridges.proposals import records
from fgraph.bridges.proposals.pending import ProposalFile
from fgraph.core.errors import Conflict, FormatError, ReadOnly

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make(n: int, tag: str = "") -> dict:
    with fgraph.connect(":memory:") as db:
        db.transact({"id": f"e{tag}{n}", "t/n": n}, by="agent")
        line = list(db.iter_events())[-1]
    return records.make_record(tool="remember", arguments={"n": n, "tag": tag}, by="agent", source=None,
                               client=None, session="s", basis_tx=64, proposed_at=n, event_line=line)


def test_append_read_incrementally_and_replace(tmp_path):
    path = str(tmp_path / "p.ndjson")
    pending = ProposalFile(path)
    assert pending.records() == [] and pending.stamp() == (0, 0)
    first, second = make(1), make(2)
    pending.append(first)
    inode, size = pending.stamp()
    pending.append(second)
    assert pending.records() == [first, second]
    after, offset = pending.records_after(size)
    assert after == [second] and offset == pending.stamp()[1]
    pending.replace([second])
    assert pending.records() == [second] and pending.stamp()[0] != inode   # a rewrite is a new inode


def test_a_link_a_fifo_a_directory_are_refused(tmp_path):
    target = tmp_path / "elsewhere.ndjson"
    (tmp_path / "link.ndjson").symlink_to(target)
    os.mkfifo(tmp_path / "fifo.ndjson")
    (tmp_path / "dir.ndjson").mkdir()
    for name, what in (("link.ndjson", "symbolic link"), ("fifo.ndjson", "FIFO"), ("dir.ndjson", "directory")):
        pending = ProposalFile(str(tmp_path / name))
        with pytest.raises(Conflict, match=what) as raised:
            pending.append(make(1))
        assert raised.value.hint
        with pytest.raises(Conflict, match=what):
            pending.records()
    assert not target.exists()


def test_a_link_as_the_lock_is_refused(tmp_path):
    (tmp_path / "p.ndjson.lock").symlink_to(tmp_path / "x")
    with pytest.raises(Conflict, match="symbolic link"):
        ProposalFile(str(tmp_path / "p.ndjson")).append(make(1))
    assert not (tmp_path / "x").exists()


def test_a_read_only_file_is_a_read_only_error(tmp_path):
    """Refused by the permission bits, whoever runs it (root included: the mode says read-only)."""
    path = tmp_path / "p.ndjson"
    ProposalFile(str(path)).append(make(1))
    path.chmod(0o444)
    with pytest.raises(ReadOnly) as raised:
        ProposalFile(str(path)).append(make(2))
    assert "writable" in raised.value.hint
    assert len(ProposalFile(str(path)).records()) == 1


def test_a_partial_last_line_is_refused_not_glued(tmp_path):
    path = tmp_path / "p.ndjson"
    path.write_bytes(records.encode(make(1))[:-20])
    with pytest.raises(FormatError, match="partial line"):
        ProposalFile(str(path)).append(make(2))
    with pytest.raises(FormatError, match="partial line"):
        ProposalFile(str(path)).records()


def test_an_edited_line_names_its_number(tmp_path):
    path = tmp_path / "p.ndjson"
    good = records.encode(make(1))
    path.write_bytes(good + good.replace(b'"n":1', b'"n":2'))
    with pytest.raises(FormatError, match="line 2 of the proposals file"):
        ProposalFile(str(path)).records()


def test_the_lock_is_bounded_and_nests(tmp_path):
    path = str(tmp_path / "p.ndjson")
    holder, other = ProposalFile(path), ProposalFile(path)
    with holder.lock():
        with holder.lock():                 # nested in one object: no self-deadlock
            holder.append(make(1))
        with pytest.raises(Conflict, match="busy") as raised:
            with other.lock(timeout=0.2):
                pass
        assert "wait" in raised.value.hint
    with other.lock(timeout=5):
        other.append(make(2))
    assert len(other.records()) == 2


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from tests.bridges.test_proposals_pending import make
    from fgraph.bridges.proposals.pending import ProposalFile
    pending = ProposalFile({path!r})
    made = [make(n, {tag!r}) for n in range({count})]
    print("ready", flush=True)
    sys.stdin.readline()
    for record in made:
        pending.append(record, sync=False)
""")

DECIDER = textwrap.dedent("""
    import sys, json
    sys.path.insert(0, {root!r})
    from fgraph.bridges.proposals.pending import ProposalFile
    pending = ProposalFile({path!r})
    taken = []
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range({rounds}):
        with pending.lock():
            now = pending.records()
            taken.extend(r["id"] for r in now[::2])
            pending.replace(now[1::2])
    print(json.dumps(taken))
""")


def test_two_writers_and_a_rewriter_interleave_whole_lines(tmp_path):
    """Two processes append 120 records each while a third takes every other pending record out,
    40 times: every record ends up exactly once, taken or pending, and no line is torn."""
    path = str(tmp_path / "p.ndjson")
    count = 120
    procs = [subprocess.Popen([sys.executable, "-c", WRITER.format(root=ROOT, path=path, tag=tag, count=count)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for tag in "ab"]
    procs.append(subprocess.Popen([sys.executable, "-c", DECIDER.format(root=ROOT, path=path, rounds=40)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert [proc.returncode for proc in procs] == [0, 0, 0]
    import json
    taken = json.loads(outputs[2])
    left = [r["id"] for r in ProposalFile(path).records()]       # every line decodes: none torn
    expected = {make_id(n, tag) for tag in "ab" for n in range(count)}
    assert sorted(taken + left) == sorted(expected)               # each exactly once


def make_id(n: int, tag: str) -> str:
    return records.proposal_id("remember", {"n": n, "tag": tag})
