"""Apply gives the same bytes and the same errors with the lines checked ahead by a child process
(``fgraph.streams.ahead``, issue 52 item 1) as without: stored rows, reports, summaries, and the
error class, message and line of every refused stream — including a child that answers garbage,
dies or is another copy of fgraph, and a source that fails after a bad line."""

from __future__ import annotations

import io
import random

import pytest

import fgraph
from fgraph.core.errors import FgraphError
from fgraph.streams import ahead
from tests.support.clock import stepping_clock
from tests.support.corerows import core_rows_of


def _source_store() -> fgraph.Db:
    rng = random.Random(7)
    db = fgraph.connect(":memory:", clock=stepping_clock())
    db.declare("person/knows", ref=True)
    for i in range(150):
        person = f"person-{rng.randrange(40)}"
        data = {"id": person, "person/name": f"Person {i}", "person/age": rng.randrange(100)}
        if rng.random() < 0.4:
            data["person/score"] = rng.random() * 1000 + 0.1
        if rng.random() < 0.3:
            data["person/knows"] = {"ref": f"person-{rng.randrange(40)}"}
        if rng.random() < 0.2:
            data["person/prefs"] = {"json": {"n": i, "x": [1.5, "é", None]}}
        db.transact(data)
    return db


@pytest.fixture(scope="module")
def events() -> list[bytes]:
    db = _source_store()
    lines = [line.encode() for line in db.iter_events(64)]
    db.close()
    return lines


def _run(lines: list[bytes], start_after: int, monkeypatch, source=None) -> tuple:
    """(outcome, core rows) of applying ``lines`` with the child from ``start_after``."""
    monkeypatch.setattr(ahead, "START_AFTER", start_after)
    monkeypatch.setattr(ahead, "WAIT_SECONDS", 30.0)    # every answer is used (a bound, not a sleep)
    db = fgraph.connect(":memory:", clock=stepping_clock())
    data = source if source is not None else io.BytesIO(b"".join(line + b"\n" for line in lines))
    try:
        reports: list = []
        outcome = (db.apply_summary(data, on_report=reports.append), reports)
    except FgraphError as exc:
        outcome = (type(exc).__name__, str(exc), getattr(exc, "line", None))
    rows = core_rows_of(db.connection)
    db.close()
    return outcome, rows


def _variants(lines: list[bytes]) -> list[list[bytes]]:
    """The clean stream, and the same with lines the child must leave to this process, or refuse."""
    respelled = [lines[0], lines[1].replace(b",", b", ", 1)] + lines[2:]     # valid, not canonical
    bad = list(lines)
    bad[len(bad) // 2] = bad[len(bad) // 2].replace(b'"', b"'", 1)          # not JSON
    late = list(lines)
    late[-3] = b'{"fgraph":"event/1"}'                                     # refused
    utf = list(lines)
    utf[40] = b'{"x":"\xff"}'
    return [lines, respelled, bad, late, utf]


def test_the_same_bytes_and_errors_with_and_without_the_child(events, monkeypatch):
    used = []
    real = ahead.applied_line
    monkeypatch.setattr(ahead, "applied_line", lambda raw: used.append(1) or real(raw))
    for variant in _variants(events):
        alone = _run(variant, -1, monkeypatch)
        for start in (0, 3):
            assert _run(variant, start, monkeypatch) == alone
    assert used, "no line was checked by the child: the test proves nothing"


@pytest.mark.parametrize("child", ["import sys; sys.stdin.buffer.read(4); sys.stdout.buffer.write(b'\\x07' * 300)",
                                   "import sys; sys.exit(3)",
                                   "import sys; sys.stdout.buffer.write(b'\\x00' * 5)",
                                   "import sys; from fgraph.streams.ahead_child import main; "
                                   "main(sys.argv[1], '/elsewhere/fgraph/streams')"])
def test_a_child_that_fails_or_is_not_ours_changes_nothing(child, events, monkeypatch):
    bad = list(events)
    bad[len(bad) // 2] = b'{"fgraph":"event/1"}'
    for variant in (events, bad):
        alone = _run(variant, -1, monkeypatch)
        monkeypatch.setattr(ahead, "CHILD_CODE", child)
        try:
            assert _run(variant, 0, monkeypatch) == alone
        finally:
            monkeypatch.undo()


class _Failing(io.RawIOBase):
    """A source whose read fails once ``limit`` bytes have been read."""

    def __init__(self, data: bytes, limit: int):
        self.data, self.limit, self.at = data, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.at >= self.limit:
            raise OSError("the disk went away")
        n = min(len(buffer), self.limit - self.at, 512)
        buffer[:n] = self.data[self.at:self.at + n]
        self.at += n
        return n


def test_a_source_failing_after_a_bad_line_reports_the_bad_line(events, monkeypatch):
    """Reading ahead meets the source's failure before the bad line is handled: the bad line's error
    still comes first, as without the child; with no bad line, the source's own error."""
    bad = list(events)
    bad[20] = b'{"fgraph":"event/1"}'
    for variant in (events, bad):
        data = b"".join(line + b"\n" for line in variant)
        limit = len(b"".join(line + b"\n" for line in variant[:60])) + 7
        outcomes = []
        for start in (-1, 0):
            try:
                outcomes.append(_run(variant, start, monkeypatch, source=io.BufferedReader(_Failing(data, limit))))
            except OSError as exc:
                outcomes.append(("OSError", str(exc)))
        assert outcomes[0] == outcomes[1]
