"""The child of ``fgraph.streams.ahead``: its checks vouch only for lines that are valid and their
own canonical bytes, it answers one flag per line of a batch, and a child that imported another
copy of fgraph answers nothing."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import fgraph
from fgraph.streams import ahead, ahead_child
from tests.support.clock import stepping_clock


def _event() -> bytes:
    db = fgraph.connect(":memory:", clock=stepping_clock())
    db.transact({"id": "ann", "person/name": "Ann", "person/score": 2.5})
    event = [line.encode() for line in db.iter_events(64)][-1]
    db.close()
    return event


def test_the_checks_vouch_only_for_valid_canonical_lines():
    event = _event()
    assert ahead_child.check_apply(event) == 1
    assert ahead_child.check_apply(event.replace(b",", b", ", 1)) == 0       # valid, not canonical
    assert ahead_child.check_apply(b'{"fgraph":"event/1"}') == 0            # canonical, refused
    assert ahead_child.check_apply(event[:-1]) == 0                         # not JSON
    assert ahead_child.check_apply(b"\xff") == 0


def _batch(lines: list[bytes]) -> bytes:
    return struct.pack(f"<I{len(lines)}I", len(lines), *map(len, lines)) + b"".join(lines)


def _child(kind: str, package: str, data: bytes) -> bytes:
    proc = subprocess.run([sys.executable, "-P", "-c", ahead.CHILD_CODE, kind, package], input=data,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0
    return proc.stdout


def test_one_flag_per_line_and_nothing_from_a_foreign_copy():
    event = _event()
    ours = os.path.dirname(os.path.abspath(ahead.__file__))
    assert _child("apply", ours, _batch([event, b"", b"{}"]) + _batch([event])) == b"\x01\x00\x00\x01"
    assert _child("apply", "/elsewhere/fgraph/streams", _batch([event])) == b""
