"""``verify`` on an event stream checks what the format allows and says what it cannot (issue 49
item 3, decision V1 in docs/snapshot.md): every line is a valid event or a redacted stub, no event
appears twice (a collector that restarted from an earlier place), and every report says that an
event line carries no hash of its own, so an edit that leaves it a valid event is found only with its
chain. The old code refused tail's own output once an event was excised (TypeError on the stub),
passed a stream that repeats events as whole, and said ``ok: true`` with no word of what it skipped."""

from __future__ import annotations

import json

import pytest

import fgraph
from fgraph.streams.verify import verify
from tests.support.cli import run_cli, clean_env
from tests.support.stores import seeded_db


@pytest.fixture(scope="module")
def lines():
    with seeded_db() as db:
        for name in ("ada", "bob", "cy"):
            db.transact({"id": name, "p/name": name.title()})
        plain = list(db.iter_events())
        db.excise("bob", operation_id="x1", if_basis_tx=db.latest_tx())
        excised = list(db.iter_events())
    return plain, excised


def _text(lines):
    return "".join(line + "\n" for line in lines)


def test_every_report_says_what_an_event_line_cannot_show(lines):
    plain, _ = lines
    report = verify(_text(plain))
    assert (report["ok"], report["events"], report["redacted"]) == (True, 3, 0)
    assert report["unchecked"] == ["an event/1 line carries no hash of its own: an edit that leaves it a valid "
                                   "event is found only against its hash chain (verify-stream --chain) or the "
                                   "store that wrote it (review)"]
    edited = _text(plain).replace('"Bob"', '"Eve"')     # still a valid, canonical event: said, not caught
    assert verify(edited)["unchecked"] == report["unchecked"]


def test_a_stream_with_a_redacted_stub_is_whole(lines):
    _, excised = lines
    assert any('"redacted":true' in line for line in excised)
    report = verify(_text(excised))
    assert (report["ok"], report["events"], report["redacted"]) == (True, 4, 1)
    assert "1 redacted stubs: their event_hash names a payload the file no longer holds" in report["unchecked"]
    stub = next(line for line in excised if '"redacted":true' in line)
    excision = json.loads(excised[-1])
    excision["redacts"] = excision["redacts"] * 2            # not unique
    for damage in (stub.replace('"event_hash":"', '"event_hash":"zz', 1), stub.replace('"at":', '"at":"x', 1)[:-1],
                   json.dumps(excision)):
        with pytest.raises(fgraph.FgraphError) as caught:
            verify(_text([excised[0], damage]))
        assert caught.value.name == "TypeError" and str(caught.value).startswith("line 2: ")


@pytest.mark.parametrize("repeat", [[0, 1, 2, 1], [0, 1, 2, 0, 1, 2], [0, 0]])
def test_an_event_repeated_is_a_conflict_naming_both_lines(lines, repeat):
    plain, _ = lines
    stream = [plain[i] for i in repeat]
    first = repeat.index(repeat[-1] if len(set(repeat)) == 1 else next(i for n, i in enumerate(repeat) if i in repeat[:n])) + 1
    again = next(n for n, i in enumerate(repeat) if i in repeat[:n]) + 1
    with pytest.raises(fgraph.Conflict) as caught:
        verify(_text(stream))
    event = json.loads(stream[again - 1])["event"]
    assert str(caught.value).startswith(f"line {again}: event {event} repeats line {first}; ")


def test_the_cli_exits_1_on_a_repeated_event(lines, tmp_path):
    plain, _ = lines
    path = tmp_path / "audit.ndjson"
    path.write_text(_text(plain + plain[-1:]))
    code, out, err = run_cli("verify", str(path), env=clean_env())
    assert (code, out) == (1, "") and err.startswith("Conflict: line 4: event ")
    path.write_text(_text(plain))
    code, out, _ = run_cli("verify", str(path), env=clean_env())
    assert code == 0 and json.loads(out)["unchecked"]
