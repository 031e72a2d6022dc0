"""Imports that keep every record or say loudly why not (issue 50 item 2, decisions IM1–IM3 of docs/import.md).

``jsonl-log`` takes the variants real decision logs carry — numbers or strings for importance and
confidence, a string or an array for category, an RFC 3339 time with a space, epoch seconds or
milliseconds — and stores each as what it is; a record it cannot take is named with its line and
reason and the command exits 1 unless ``--skip-bad``; a record logged again under its id replaces
its predecessor's alternatives and entities; a plain re-import of a changed MCP memory file counts
what the store holds that the file no longer does and points at ``--mirror``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fgraph
from fgraph.bridges.add.data_source import open_data
from fgraph.bridges.importers.pipeline import ImportJob, run_import
from tests.support.cli import run_cli_json

CLOCK = 1767225600000000
AT = 1772442900000000   # 2026-03-02T09:15:00Z


def record(rid: str = "d1", *, alternatives=("files",), entities=("fgraph",), **metadata) -> dict:
    return {"id": rid, "type": "decision",
            "content": {"what": "use SQLite", "why": "one file", "alternatives": list(alternatives)},
            "entities": list(entities), "identity": {"user_id": "alice"},
            "metadata": {"timestamp": "2026-03-02T09:15:00Z", **metadata}}


def write(path: Path, *lines) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def load(db, path: Path, fmt: str = "jsonl-log", **options) -> dict:
    job = ImportJob(fmt, str(path), **options)
    with open_data("@" + str(path), None) as data:
        return run_import(db, job, data)


def values(db, entity: str, attr: str) -> list:
    return sorted((row["v"] for row in db.datoms("eavt", [entity, attr])["items"]), key=json.dumps)


@pytest.fixture
def db(tmp_path):
    with fgraph.connect(str(tmp_path / "v.db"), clock=CLOCK) as db:
        yield db


@pytest.mark.parametrize("metadata, attr, stored", [
    ({"importance": 0.7}, "decision/importance-score", [0.7]),
    ({"importance": "high"}, "decision/importance", ["high"]),
    ({"confidence": "0.8"}, "decision/confidence", [0.8]),
    ({"confidence": 0.8}, "decision/confidence", [0.8]),
    ({"confidence": "high"}, "decision/confidence-label", ["high"]),
    ({"confidence": "1e999"}, "decision/confidence-label", ["1e999"]),   # no infinity reaches a float
    ({"category": ["payments", "reliability"]}, "decision/category", ["payments", "reliability"]),
    ({"category": "payments"}, "decision/category", ["payments"]),
])
def test_numbers_strings_and_arrays_are_stored_as_they_are(db, tmp_path, metadata, attr, stored):
    report = load(db, write(tmp_path / "d.jsonl", record(**metadata)))
    assert (report["imported"], report["corrupt"]) == (1, 0), report["problems"]
    assert values(db, "decision:d1", attr) == stored


@pytest.mark.parametrize("timestamp", [
    "2026-03-02 09:15:00Z", "2026-03-02 09:15:00+00:00", 1772442900, 1772442900.0, 1772442900000, "1772442900",
])
def test_a_time_with_a_space_or_in_epoch_seconds_or_milliseconds_is_the_records_own_time(db, tmp_path, timestamp):
    report = load(db, write(tmp_path / "d.jsonl", record(timestamp=timestamp)))
    assert (report["imported"], report["corrupt"]) == (1, 0), report["problems"]
    assert values(db, "decision:d1", "decision/at") == [{"instant": "2026-03-02T09:15:00.000000Z"}]
    assert db.receipt(db.latest_tx())["imported_at"] == AT   # the event's at: what context orders by


@pytest.mark.parametrize("timestamp, reason", [
    ("last tuesday", "is not an RFC 3339 time"), (True, "not an RFC 3339 time or epoch"),
    (10 ** 15, "neither epoch seconds nor epoch milliseconds"),
])
def test_a_time_that_is_none_of_these_is_still_a_bad_record(db, tmp_path, timestamp, reason):
    report = load(db, write(tmp_path / "d.jsonl", record(timestamp=timestamp)), skip_bad=True)
    assert report["corrupt"] == 1 and reason in report["problems"][0]["reason"]


def test_a_dropped_record_is_named_and_the_command_fails_unless_skip_bad(tmp_path):
    log = write(tmp_path / "d.jsonl", record("d1"), record("d2", timestamp="last tuesday"), "{not json")
    code, health, err = run_cli_json(tmp_path / "a.db", "import", "jsonl-log", log, seed="variants")
    assert code == 1 and (health["imported"], health["corrupt"]) == (1, 2)   # the summary is still printed
    assert err.startswith("FormatError: ") and "2 of 3 records were not imported" in err
    assert "line 2: metadata.timestamp 'last tuesday' is not an RFC 3339 time" in err and "line 3: " in err
    assert "--skip-bad" in err
    code, health, err = run_cli_json(tmp_path / "b.db", "import", "jsonl-log", log, "--skip-bad", seed="variants")
    assert code == 0 and (health["imported"], health["corrupt"]) == (1, 2) and err == ""


def test_a_relogged_record_replaces_its_alternatives_and_entities(db, tmp_path):
    first = record(alternatives=["files", "Postgres"], entities=["fgraph", "Postgres"])
    load(db, write(tmp_path / "a.jsonl", first))
    again = record(alternatives=["files", "DuckDB"], entities=["fgraph"])
    again["content"]["what"] = "use SQLite, WAL mode"
    report = load(db, write(tmp_path / "b.jsonl", again))
    assert report["imported"] == 1
    assert values(db, "decision:d1", "decision/alternative") == ["DuckDB", "files"]
    assert values(db, "decision:d1", "decision/entity") == [{"ref": "fgraph"}]
    assert values(db, "decision:d1", "decision/what") == ["use SQLite, WAL mode"]
    assert load(db, tmp_path / "b.jsonl")["already_imported"] == 1   # a re-import still changes nothing


def test_a_record_relogged_later_in_the_same_file_and_batch_replaces_too(db, tmp_path):
    log = write(tmp_path / "d.jsonl", record(alternatives=["files", "Postgres"], category=["a", "b"]),
                record(alternatives=["files"], category="a"), record("d2", alternatives=["Postgres"]))
    assert load(db, log)["imported"] == 3
    assert values(db, "decision:d1", "decision/alternative") == ["files"]
    assert values(db, "decision:d1", "decision/category") == ["a"]
    assert values(db, "decision:d2", "decision/alternative") == ["Postgres"]   # another decision keeps its own


def mcp(path: Path, owner: str) -> Path:
    lines = [{"type": "entity", "name": "refund-service", "entityType": "service",
              "observations": ["handles refunds", f"owned by {owner}"]},
             {"type": "entity", "name": owner, "entityType": "person", "observations": ["payments team"]},
             {"type": "relation", "from": owner, "to": "refund-service", "relationType": "owns"}]
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    return path


def test_a_plain_reimport_of_a_changed_memory_file_says_what_disagrees_and_names_mirror(tmp_path):
    memory = mcp(tmp_path / "memory.jsonl", "Priya")
    code, health, err = run_cli_json(tmp_path / "m.db", "import", "mcp-memory", memory, seed="variants")
    assert code == 0 and health["not_in_file"] == {"facts": 0, "records": 0} and err == ""
    mcp(memory, "Tomas")   # the service changed hands: an observation and a relation now differ
    code, health, err = run_cli_json(tmp_path / "m.db", "import", "mcp-memory", memory, seed="variants")
    assert code == 0 and health["imported"] == 3
    # refund-service's old observation, Priya's entity (no longer in the file) and the old relation
    assert health["not_in_file"] == {"facts": 5, "records": 3}
    assert "3 records of this source in the store no longer agree with the file" in err and "--mirror" in err
    code, health, err = run_cli_json(tmp_path / "m.db", "import", "mcp-memory", memory, "--mirror", seed="variants")
    assert code == 0 and health["retracted"]["facts"] == 5
    code, health, err = run_cli_json(tmp_path / "m.db", "import", "mcp-memory", memory, seed="variants")
    assert health["not_in_file"] == {"facts": 0, "records": 0} and err == ""
