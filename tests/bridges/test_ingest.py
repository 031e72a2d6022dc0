"""Proves the `add` library of spec 09 §4.1: reading DATA, one document vs NDJSON, batches and their summary."""

from __future__ import annotations

import hashlib
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgraph
from fgraph.bridges.add import data_source
from fgraph.bridges.add import ingest
from fgraph.core.canonical import dumps
from fgraph.core.errors import Conflict, FormatError, NotFound, TooLarge, ValueTypeError
from tests.support.clock import stepping_clock


@pytest.fixture
def db(tmp_path):
    with fgraph.connect(str(tmp_path / "t.fgraph"), clock=stepping_clock()) as handle:
        yield handle


def person(name: str, **extra) -> dict:
    return {"id": name, "person/name": name.title(), **extra}


def ndjson(*docs) -> str:
    return "".join(json.dumps(doc) + "\n" for doc in docs)


# --------------------------------------------------------------- reading DATA

class BinaryStdin:
    """A text stream with bytes underneath, like sys.stdin."""

    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def test_inline_data_is_the_text_itself():
    assert ingest.read_data_argument('{"a/b":1}', None) == '{"a/b":1}'


def test_at_path_reads_the_file_keeping_line_ends(tmp_path):
    path = tmp_path / "in.ndjson"
    path.write_bytes(b'{"a/b":1}\r\n{"a/b":2}\r\n\xe2\x80\xa8')
    assert ingest.read_data_argument(f"@{path}", None) == '{"a/b":1}\r\n{"a/b":2}\r\n\u2028'


def test_at_path_decodes_characters_split_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(data_source, "READ_CHUNK", 3)
    text = '{"p/s":"Ådä ✓ 𝄞"}'
    path = tmp_path / "in.json"
    path.write_text(text, encoding="utf-8")
    assert ingest.read_data_argument(f"@{path}", None) == text


@pytest.mark.parametrize("name", ["missing.json", "", "dir"])
def test_unreadable_file_is_format_error(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    with pytest.raises(FormatError):
        ingest.read_data_argument(f"@{name}", None)


def test_non_utf8_file_is_format_error(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes('{"p/s":"café"}'.encode("latin-1"))
    with pytest.raises(FormatError, match="UTF-8"):
        ingest.read_data_argument(f"@{path}", None)


def test_dash_reads_stdin_bytes_as_utf8():
    assert ingest.read_data_argument("-", BinaryStdin('{"p/s":"é"}\n'.encode())) == '{"p/s":"é"}\n'


def test_dash_reads_a_plain_text_stream():
    assert ingest.read_data_argument("-", io.StringIO("{}")) == "{}"


def test_undecodable_stdin_bytes_become_lone_surrogates_like_the_published_runtime():
    # issue 27: the line still parses; the record holding the byte is refused when planned
    assert ingest.read_data_argument("-", BinaryStdin(b'\xff{"a/b":"x\xc3"}')) == '\udcff{"a/b":"x\udcc3"}'
    with pytest.raises(ValueTypeError, match="JSON"):
        ingest.parse_records(ingest.read_data_argument("-", BinaryStdin(b"\xff{}")))


def test_missing_stdin_is_format_error():
    with pytest.raises(FormatError):
        ingest.read_data_argument("-", None)


# --------------------------------------------------------------- one document or NDJSON

def test_one_document_even_when_pretty_printed():
    text = json.dumps({"id": "ada", "person/name": "Ada"}, indent=2)
    assert ingest.parse_records(text) == ([{"id": "ada", "person/name": "Ada"}], True)


def test_surrounding_whitespace_is_ignored():
    assert ingest.parse_records('\u00a0\n {"a/b": 1}\n\u2028\n') == ([{"a/b": 1}], True)


def test_ndjson_skips_blank_lines_and_accepts_crlf():
    text = '{"a/b":1}\r\n\n   \n\t\r\n{"a/b":2}\r\n'
    assert ingest.parse_records(text) == ([{"a/b": 1}, {"a/b": 2}], False)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_only_lf_separates_records(separator):
    text = f'{{"p/s":"a{separator}b"}}\n{{"p/s":"c"}}\n'
    assert ingest.parse_records(text) == ([{"p/s": f"a{separator}b"}, {"p/s": "c"}], False)


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "\t\r\n", "\u00a0", "\u2028"])
def test_empty_or_blank_input_is_type_error(text):
    with pytest.raises(ValueTypeError, match="empty"):
        ingest.parse_records(text)


@pytest.mark.parametrize("text", ["nope", "{} {}", '{"a/b":', "\n\n{bad\n\n", '{"a":1,"a":2}'])
def test_one_line_that_is_not_json_is_type_error(text):
    with pytest.raises(ValueTypeError):
        ingest.parse_records(text)


def test_a_bad_record_names_its_physical_line():
    text = '{"a/b":1}\n\n{"a/b":2}\n{"a/b":\n'
    with pytest.raises(ValueTypeError, match="line 4"):
        ingest.parse_records(text)


def test_a_duplicate_key_in_a_later_record_names_its_line():
    with pytest.raises(ValueTypeError, match="line 2.*duplicate"):
        ingest.parse_records('{"a/b":1}\n{"a/b":1,"a/b":2}\n')


def test_a_too_deep_record_keeps_its_error_name():
    deep = "[" * 90 + "]" * 90
    with pytest.raises(TooLarge, match="line 2"):
        ingest.parse_records(f'{{"a/b":1}}\n{deep}\n')


@settings(max_examples=50, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a/b", "c/d", "id"]),
                                st.one_of(st.integers(-10, 10), st.text(max_size=5), st.booleans()),
                                min_size=1), min_size=2, max_size=6))
def test_ndjson_round_trips(records):
    assert ingest.parse_records("\n".join(dumps(r) for r in records)) == (records, False)


# --------------------------------------------------------------- option checks before any database

@pytest.mark.parametrize("kwargs", [
    {"operation_id_prefix": "p"},
    {"operation_id_prefix": "p", "operation_id": "o", "batch_size": 1},
    {"batch_size": 0},
    {"batch_size": 10001},
    {"batch_size": True},
    {"batch_size": "2"},
])
def test_invalid_option_combinations_are_type_errors(kwargs):
    with pytest.raises(ValueTypeError):
        ingest.prepare("{}", **kwargs)


def test_operation_id_with_ndjson_is_type_error():
    with pytest.raises(ValueTypeError, match="operation-id"):
        ingest.prepare(ndjson({}, {}), operation_id="o")


def test_if_basis_tx_across_ndjson_transactions_is_type_error():
    with pytest.raises(ValueTypeError, match="if-basis-tx"):
        ingest.prepare(ndjson({}, {}), if_basis_tx=64)


def test_prepare_touches_no_database():
    job = ingest.prepare(ndjson({}, {}, {}), batch_size=2, operation_id_prefix="imp")
    assert job.batches() == [[{}, {}], [{}]]


# --------------------------------------------------------------- running: one document, NDJSON

def test_one_document_is_one_transaction_and_one_report(tmp_path):
    with fgraph.connect(str(tmp_path / "a"), clock=stepping_clock()) as a, \
            fgraph.connect(str(tmp_path / "b"), clock=stepping_clock()) as b:
        ours = ingest.add(a, json.dumps(person("ada")), operation_id="op-1")
        direct = b.transact(person("ada"), operation_id="op-1")
    without_event = [{k: v for k, v in report.items() if k != "event"} for report in (ours, direct)]
    assert without_event[0] == without_event[1] and ours["status"] == "applied"


def test_ndjson_is_one_transaction_per_record_in_order(db):
    reports = ingest.add(db, ndjson(person("ada"), person("bob")))
    assert [r["status"] for r in reports] == ["applied", "applied"]
    assert reports[1]["basis_tx"] == reports[0]["tx"]
    assert db.entity("bob") == {"person/name": "Bob"}


def test_a_failing_ndjson_record_keeps_earlier_ones_and_stops(db):
    text = ndjson(person("ada"), {"id": "ada", "person/name": ["x", "y"]}, person("cy"))
    with pytest.raises(Conflict):
        ingest.add(db, text)
    assert db.entity("ada") == {"person/name": "Ada"}
    with pytest.raises(fgraph.NotFound):
        db.entity("cy")


def test_a_parse_error_commits_nothing(db):
    before = db.latest_tx()
    with pytest.raises(ValueTypeError, match="line 3"):
        ingest.add(db, ndjson(person("ada"), person("bob")) + "{oops\n")
    assert db.latest_tx() == before


def test_empty_array_is_a_noop_outside_batch_mode(db):
    assert ingest.add(db, "[]")["status"] == "noop"


# --------------------------------------------------------------- running: batches

THREE = ndjson(person("b1"), person("b2"), person("b3"))


def test_batch_summary_and_idempotent_rerun(db):
    latest = db.latest_tx()
    summary = ingest.add(db, THREE, batch_size=2, operation_id_prefix="imp")
    assert summary == {"already_applied": 0, "applied": 2, "basis_tx": summary["tx"], "batches": 2, "items": 3,
                       "noop": 0, "tx": summary["tx"]}
    assert summary["tx"] > latest
    again = ingest.add(db, THREE, batch_size=2, operation_id_prefix="imp")
    assert again == {**summary, "already_applied": 2, "applied": 0}


def test_batch_operation_ids_and_request_hashes(db):
    summary = ingest.add(db, THREE, batch_size=2, operation_id_prefix="imp")
    last = db.receipt(summary["tx"])
    first = db.receipt(last["basis_tx"])
    assert (first["operation_id"], last["operation_id"]) == ("imp:00000000", "imp:00000001")
    envelope = {"data": [person("b3")], "options": {}}
    assert last["request_hash"] == "sha256:" + hashlib.sha256(dumps(envelope).encode()).hexdigest()


def test_a_single_document_is_one_batch_item(db):
    summary = ingest.add(db, json.dumps(person("ada")), batch_size=5)
    assert (summary["batches"], summary["items"], summary["applied"]) == (1, 1, 1)


def test_batch_tx_is_null_when_the_last_batch_is_a_noop(db):
    ingest.add(db, json.dumps(person("b2")))
    summary = ingest.add(db, ndjson(person("b1"), person("b2")), batch_size=1)
    assert (summary["applied"], summary["noop"], summary["tx"]) == (1, 1, None)
    assert summary["basis_tx"] == db.latest_tx()


def test_operation_id_may_name_a_single_batch_only(db):
    assert ingest.add(db, THREE, batch_size=3, operation_id="one")["applied"] == 1
    with pytest.raises(ValueTypeError, match="multiple batches"):
        ingest.add(db, THREE, batch_size=2, operation_id="two")


def test_if_basis_tx_may_guard_a_single_batch_only(db):
    latest = db.latest_tx()
    with pytest.raises(ValueTypeError, match="multiple batches"):
        ingest.add(db, THREE, batch_size=1, if_basis_tx=latest)
    with pytest.raises(Conflict):
        ingest.add(db, THREE, batch_size=3, if_basis_tx=latest + 1000)
    assert ingest.add(db, THREE, batch_size=3, if_basis_tx=latest)["applied"] == 1


@pytest.mark.parametrize("text", ['[{"id":"x","p/s":"y"}]', "[]", '[[{"id":"x"}]]', "[1, 2]",
                                  ndjson(person("ok"), [person("x")])])
def test_an_array_given_as_one_batch_item_is_type_error_and_commits_nothing(db, text):
    before = db.latest_tx()
    with pytest.raises(ValueTypeError):
        ingest.add(db, text, batch_size=3)
    assert db.latest_tx() == before


def test_an_operation_is_a_valid_batch_item(db):
    ingest.add(db, json.dumps(person("ada")))
    summary = ingest.add(db, '["retract","ada","person/name","Ada"]', batch_size=2)
    assert summary["applied"] == 1 and db.entity("ada") == {}


def test_a_failing_batch_keeps_earlier_batches(db):
    text = ndjson(person("b1"), {"id": "b1", "person/name": ["x", "y"]})
    with pytest.raises(Conflict):
        ingest.add(db, text, batch_size=1, operation_id_prefix="p")
    assert db.entity("b1") == {"person/name": "B1"}


def test_a_prepared_job_runs_without_options_again(db):
    job = ingest.prepare(THREE, batch_size=3)
    assert ingest.add(db, job)["applied"] == 1
    with pytest.raises(ValueTypeError):
        ingest.add(db, job, batch_size=3)


# --------------------------------------------------------------- batches are read as they are written (issue 27)

def test_a_bad_line_stops_batch_mode_at_its_batch_and_keeps_the_batches_before_it(db):
    before = db.latest_tx()
    text = ndjson(person("c1"), person("c2"), person("c3")) + "{bad\n"
    with pytest.raises(ValueTypeError, match="line 4"):
        ingest.add(db, text, batch_size=2)
    assert db.entity("c2")["person/name"] == "C2" and db.latest_tx() > before
    with pytest.raises(NotFound):
        db.entity("c3")  # its batch held the bad line


def test_an_array_item_after_the_first_batch_keeps_the_batches_before_it(db):
    with pytest.raises(ValueTypeError, match="batch item 3"):
        ingest.add(db, ndjson(person("d1"), person("d2"), []), batch_size=2)
    assert db.entity("d2")["person/name"] == "D2"


def test_a_guarded_batch_is_refused_before_anything_is_written_once_a_second_batch_shows(db):
    before = db.latest_tx()
    with pytest.raises(ValueTypeError, match="multiple batches"):
        ingest.add(db, ndjson(person("g1"), person("g2"), person("g3")) + "{bad\n", batch_size=2,
                   operation_id="one")
    with pytest.raises(ValueTypeError, match="line 3"):  # the record that shows a second batch is not JSON
        ingest.add(db, ndjson(person("g1"), person("g2")) + "{bad\n", batch_size=2, operation_id="one")
    assert db.latest_tx() == before


def test_outside_batch_mode_every_line_is_parsed_before_the_first_is_written(db):
    before = db.latest_tx()
    with pytest.raises(ValueTypeError, match="line 3"):
        ingest.add(db, ndjson(person("h1"), person("h2")) + "{bad\n")
    assert db.latest_tx() == before


class _Report(dict):
    """A report that can be watched (a plain dict cannot be weakly referenced)."""


class _Watched:
    """A database whose reports are watched: ``most`` is how many were alive at once."""

    def __init__(self, db):
        self._db, self.alive, self.most = db, 0, 0

    def transact(self, *args, **kwargs):
        import weakref
        report = _Report(self._db.transact(*args, **kwargs))
        self.alive += 1
        weakref.finalize(report, self._gone)
        self.most = max(self.most, self.alive)
        return report

    def _gone(self) -> None:
        self.alive -= 1

    def latest_tx(self):
        return self._db.latest_tx()


def test_execute_streams_ndjson_keeping_no_report(db, tmp_path):
    """Issue 31 item 3: the summary path holds one report at a time, however many lines; each is
    handed to on_report and dropped. The list the library's run() returns is the contrast."""
    path = tmp_path / "many.ndjson"
    path.write_text(ndjson(*(person(f"s{i}") for i in range(120))))
    lines, written, seen = [], [], []
    with data_source.open_data(f"@{path}", None) as source:
        job = ingest.prepare(source, on_line=lambda: lines.append(1))
        watched = _Watched(db)
        summary = job.execute(watched, on_report=lambda report: seen.append(report["tx"]),
                              on_written=written.append)
    assert watched.most <= 2 and len(seen) == 120 and sum(lines) == 120 and sum(written) == 120
    assert summary == {"applied": 120, "basis_tx": db.latest_tx(), "last_tx": seen[-1], "noop": 0,
                       "transactions": 120}
    with data_source.open_data(f"@{path}", None) as source:
        listed = _Watched(db)
        reports = ingest.prepare(source).run(listed)
    assert len(reports) == 120 and listed.most == 120 and {r["status"] for r in reports} == {"noop"}


def test_execute_of_one_document_or_batches_is_what_run_returns(db):
    one = ingest.prepare(json.dumps(person("solo")))
    assert one.execute(db)["status"] == "applied"
    written = []
    summary = ingest.prepare(ndjson(person("b1"), person("b2"), person("b3")), batch_size=2).execute(
        db, on_written=written.append)
    assert written == [2, 1] and summary["batches"] == 2 and summary["items"] == 3
    noop = ingest.prepare(ndjson(person("b1"), person("b2"))).execute(db)
    assert noop == {"applied": 0, "basis_tx": db.latest_tx(), "last_tx": None, "noop": 2, "transactions": 2}
