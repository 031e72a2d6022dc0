"""Proves `verify` (our addition): whole snapshots and event streams are described, and any damage
is reported with its typed error and line — without a database."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import fgraph
from fgraph.streams.verify import verify
from tests.support.clock import stepping_clock


@pytest.fixture(scope="module")
def files():
    os.environ["FGRAPH_EVENT_SEED"] = "fgraph-conformance-v2"
    try:
        db = fgraph.connect(":memory:", clock=stepping_clock())
    finally:
        del os.environ["FGRAPH_EVENT_SEED"]
    db.transact({"id": "ada", "person/name": "Ada"})
    db.transact([{"id": {"tmp": "t"}, "n/v": "x" * 300}, {"id": "h", "n/l": {"ref": {"tmp": "t"}}}])
    db.transact({"id": "ada", "person/name": "Ada L."})
    snapshot = db.snapshot()
    events = "".join(line + "\n" for line in db.iter_events())
    db.close()
    return snapshot, events


def test_whole_files_are_described(files):
    snapshot, events = files
    s = verify(snapshot)
    assert (s["kind"], s["receipts"], s["ok"]) == ("snapshot/1", 3, True)
    assert s["sha256"] == snapshot.splitlines()[-1].split('"sha256":"')[1][:64]
    e = verify(events.encode())
    assert (e["kind"], e["events"], e["canonical"]) == ("event/1", 3, True)
    spaced = events.replace('","', '", "', 1)
    assert verify(spaced)["noncanonical_lines"] == 1


@pytest.mark.parametrize("damage, error, line", [
    (lambda s: s.replace("Ada L.", "Ada X."), "TypeError", "line 4"),             # payload no longer hashes
    (lambda s: "".join(line + "\n" for line in s.splitlines()[:-1]), "TypeError", None),  # footer removed
    (lambda s: s.replace('"facts":', '"facts":9', 1), "TypeError", None),
    (lambda s: s + '{"x":1}\n', "TypeError", None),
    (lambda s: s[:-20], "TypeError", None),
])
def test_damaged_snapshots(files, damage, error, line):
    with pytest.raises(fgraph.FgraphError) as caught:
        verify(damage(files[0]))
    assert caught.value.name == error
    if line:
        assert line in str(caught.value)


def test_damaged_event_streams(files):
    events = files[1]
    for text, error in ((events.replace('"fgraph":"event/1"', '"fgraph":"event/2"', 1), "TypeError"),
                        (events + "{", "TypeError"), ("", "TypeError"), (b"\xff\n", "FormatError")):
        with pytest.raises(fgraph.FgraphError) as caught:
            verify(text)
        assert caught.value.name == error


def test_cli_exit_codes(files, tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "fgraph")
    good, bad = tmp_path / "s.ndjson", tmp_path / "bad.ndjson"
    good.write_text(files[0])
    bad.write_text(files[0].replace("Ada L.", "Ada X."))
    assert subprocess.run([exe, "verify", str(good)], capture_output=True).returncode == 0
    proc = subprocess.run([exe, "verify", str(bad)], capture_output=True)
    assert proc.returncode == 1 and proc.stderr.startswith(b"TypeError: line 4:")
