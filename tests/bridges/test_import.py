"""``fgraph import`` (issue 16 part 1) through the CLI on real files: the MCP memory server's own
file (made by the real server, tests/fixtures/import/README.md) round-trips — every entity,
observation and relation its ``read_graph`` shows is queryable; decision logs keep their
provenance (by, source file:line, the record's time as fgraph/imported-at); both importers are
idempotent, batch, dry-run, skip and report bad lines, and refuse everything under --strict."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fgraph
from fgraph.core.values import parse_instant
from fgraph.bridges.importers.records import relation_attribute
from tests.support.cli import run_cli_json
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "import"
MEMORY = FIXTURES / "mcp-memory.jsonl"
DECISIONS = FIXTURES / "decisions.jsonl"
CLEAN = FIXTURES / "decisions.clean.jsonl"
FGRAPH = str(Path(sys.executable).with_name("fgraph"))


def fgraph_cli(db: Path, *args, stdin: bytes | None = None, **env) -> tuple[int, object, str]:
    """``run_cli_json`` with this module's event seed."""
    return run_cli_json(db, *args, seed="import-tests", stdin=stdin, **env)


def q(db: Path, query: dict) -> list:
    code, out, err = fgraph_cli(db, "q", json.dumps(query))
    assert code == 0, err
    return out["rows"] if isinstance(out, dict) and "rows" in out else out


def observations(db: Path, name: str) -> list:
    rows = q(db, {"find": ["?o"], "where": [["?e", "memory/name", name], ["?e", "memory/observation", "?o"]]})
    return sorted(row[0] for row in rows)


def test_mcp_memory_round_trip_from_the_real_server(tmp_path):
    db = tmp_path / "m.db"
    code, health, err = fgraph_cli(db, "import", "mcp-memory", MEMORY)
    assert code == 0, err
    assert (health["lines"], health["imported"], health["corrupt"]) == (16, 15, 0)
    assert health["problems"] == [{"kind": "skipped", "line": 15, "reason": "repeats line 8"}]
    graph = json.loads((FIXTURES / "mcp-memory.read_graph.json").read_text(encoding="utf-8"))
    for entity in graph["entities"]:
        rows = q(db, {"find": ["?t"], "where": [["?e", "memory/name", entity["name"]], ["?e", "memory/type", "?t"]]})
        assert rows == [[entity["entityType"]]], entity["name"]
        assert observations(db, entity["name"]) == sorted(entity["observations"]), entity["name"]
    for relation in graph["relations"]:
        rows = q(db, {"find": ["?to"], "where": [["?a", "memory/name", relation["from"]],
                                                  ["?a", relation_attribute(relation["relationType"]), "?b"],
                                                  ["?b", "memory/name", "?to"]]})
        assert [relation["to"]] in rows, relation
    names = {row[0] for row in q(db, {"find": ["?n"], "where": [["?e", "memory/name", "?n"]]})}
    assert names == {e["name"] for e in graph["entities"]} | {"SQLite"}  # the dangling target is an entity too
    assert fgraph_cli(db, "doctor")[0] == 0


def test_reimport_changes_nothing_and_says_so(tmp_path):
    db = tmp_path / "m.db"
    assert fgraph_cli(db, "import", "mcp-memory", MEMORY)[0] == 0
    before = subprocess.run([FGRAPH, "--db", str(db), "snapshot"], capture_output=True).stdout
    code, again, _ = fgraph_cli(db, "import", "mcp-memory", MEMORY, "--batch-size", "3")
    assert code == 0 and (again["imported"], again["already_imported"], again["batches"]) == (0, 15, 0)
    assert subprocess.run([FGRAPH, "--db", str(db), "snapshot"], capture_output=True).stdout == before


def test_decision_log_keeps_provenance_and_reports_bad_lines(tmp_path):
    db = tmp_path / "d.db"
    code, health, err = fgraph_cli(db, "import", "jsonl-log", DECISIONS, "--batch-size", "5", "--skip-bad")
    assert code == 0, err
    assert (health["lines"], health["imported"], health["skipped"], health["corrupt"], health["batches"]) == \
        (18, 12, 1, 4, 3)
    assert [(p["line"], p["kind"]) for p in health["problems"]] == [
        (4, "corrupt"), (6, "corrupt"), (10, "corrupt"), (12, "corrupt"), (14, "skipped")]
    first = json.loads(DECISIONS.read_text(encoding="utf-8").split("\n")[0])
    with fgraph.connect(str(db), read_only=True) as handle:
        decision = handle.entity(f"decision:{first['id']}")
        assert decision["decision/what"] == first["content"]["what"]
        assert sorted(decision["decision/alternative"]) == sorted(first["content"]["alternatives"])
        assert sorted(ref["ref"] for ref in decision["decision/entity"]) == sorted(first["entities"])
        tx = handle.why(f"decision:{first['id']}", "decision/what")[0]["tx"]
        receipt = handle.receipt(tx)
        assert receipt["by"] == "alice" and receipt["source"] == f"{DECISIONS}:1"
        assert decision["decision/at"] == {"instant": "2026-03-02T09:15:00.000000Z"}
        assert receipt["meta"]["metadata"]["project"] == "fgraph"
        fgraph_tx = handle.entity("fgraph")
        assert fgraph_tx["rel/stores_data_in"] == [{"ref": "SQLite"}]
    history = fgraph_cli(db, "history", f"decision:{first['id']}", "decision/what")[1]
    assert history[0]["by"] == "alice" and history[0]["source"] == f"{DECISIONS}:1"


def test_the_record_time_is_the_imported_at_of_its_transaction(tmp_path):
    db = tmp_path / "d.db"
    assert fgraph_cli(db, "import", "jsonl-log", CLEAN)[0] == 0
    tail = subprocess.run([FGRAPH, "--db", str(db), "tail"], capture_output=True).stdout.decode()
    events = [json.loads(line) for line in tail.split("\n") if line]
    records = [json.loads(line) for line in CLEAN.read_text(encoding="utf-8").split("\n") if line]
    with fgraph.connect(str(db), read_only=True) as handle:
        for record, event in zip(records, events):
            expected = parse_instant(record["metadata"]["timestamp"])
            assert event["at"] == expected
            tx = handle.resolve({"eid": event["event"]})
            assert handle.receipt(tx)["imported_at"] == expected


def test_strict_refuses_the_whole_file_and_writes_nothing(tmp_path):
    db = tmp_path / "s.db"
    code, _, err = fgraph_cli(db, "import", "jsonl-log", DECISIONS, "--strict")
    assert code == 1 and err.startswith("TypeError: ") and "line 4" in err and "nothing was written" in err
    assert not db.exists() or fgraph_cli(db, "info")[1]["transactions"] == 1
    code, health, _ = fgraph_cli(db, "import", "jsonl-log", CLEAN, "--strict")
    assert code == 0 and health["imported"] == 6 and not health["problems"]


def test_dry_run_counts_and_writes_nothing(tmp_path):
    db = tmp_path / "r.db"
    assert fgraph_cli(db, "init")[0] == 0
    code, health, _ = fgraph_cli(db, "import", "mcp-memory", MEMORY, "--dry-run")
    assert code == 0 and health["imported"] == 15 and health["dry_run"] is True
    assert fgraph_cli(db, "info")[1]["transactions"] == 1


def test_by_source_meta_options_and_stdin(tmp_path):
    db = tmp_path / "o.db"
    code, health, err = fgraph_cli(db, "import", "mcp-memory", "-", "--by", "ops", "--source", "laptop",
                                   "--meta", '{"ticket":7}', stdin=MEMORY.read_bytes())
    assert code == 0 and health["file"] == "stdin", err
    with fgraph.connect(str(db), read_only=True) as handle:
        receipt = handle.receipt(handle.why("Grace Hopper", "memory/type")[0]["tx"])
        assert (receipt["by"], receipt["source"], receipt["meta"]) == ("ops", "laptop:7", {"ticket": 7})
    assert fgraph_cli(tmp_path / "e.db", "import", "jsonl-log", CLEAN, FGRAPH_BY="env-user")[0] == 0


def test_an_applied_import_restores_and_round_trips_through_tail_and_apply(tmp_path):
    src, copy, replica = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "c.db"
    assert fgraph_cli(src, "import", "jsonl-log", DECISIONS, "--skip-bad")[0] == 0
    snap = subprocess.run([FGRAPH, "--db", str(src), "snapshot"], capture_output=True).stdout
    assert fgraph_cli(copy, "restore", "-", stdin=snap)[0] == 0
    stream = subprocess.run([FGRAPH, "--db", str(src), "tail"], capture_output=True).stdout
    assert fgraph_cli(replica, "apply", "-", stdin=stream)[1]["applied"] == 12
    assert subprocess.run([FGRAPH, "--db", str(replica), "tail"], capture_output=True).stdout == stream


@pytest.mark.parametrize("line, reason", [
    ('{"type":"entity","name":"a/b","entityType":"x","observations":[]}', "looks like an attribute name"),
    ('{"type":"entity","name":"","entityType":"x","observations":[]}', "entity name is not a non-empty string"),
    ('{"type":"entity","name":"n","entityType":"x","observations":"o"}', "observations is not an array"),
    ('{"type":"relation","from":"a","to":"b"}', "relationType is not a string"),
    ('{"type":"note","text":"x"}', "neither 'entity' nor 'relation'"),
    ('{"type":"entity","name":"x\\u0001","entityType":"x","observations":[]}', "invalid entity name"),
])
def test_bad_mcp_memory_lines_are_reported_with_their_reason(tmp_path, line, reason):
    data = tmp_path / "m.jsonl"
    data.write_text('{"type":"entity","name":"ok","entityType":"t","observations":["o"]}\n' + line + "\n")
    code, health, _ = fgraph_cli(tmp_path / "x.db", "import", "mcp-memory", data, "--skip-bad")
    assert code == 0 and health["imported"] == 1 and health["corrupt"] == 1
    assert health["problems"][0]["line"] == 2 and reason in health["problems"][0]["reason"]


def test_usage_and_input_errors(tmp_path):
    db = tmp_path / "u.db"
    assert fgraph_cli(db, "import", "csv", MEMORY)[0] == 2
    code, _, err = fgraph_cli(db, "import", "mcp-memory", tmp_path / "missing.jsonl")
    assert code == 1 and err.startswith("FormatError: ")
    assert fgraph_cli(db, "import", "mcp-memory", MEMORY, "--batch-size", "0")[0] == 2
    copy = tmp_path / "copy.jsonl"
    shutil.copy(MEMORY, copy)
    assert fgraph_cli(db, "import", "mcp-memory", copy, "--meta", "{bad")[0] == 1


def test_an_undecodable_or_oversized_line_is_one_corrupt_line_not_the_end_of_the_import(tmp_path, monkeypatch):
    """Issue 29 item 13: before, the import stopped at the bad byte after committing the batches
    before it, with no line number and no summary; an oversized line called itself `add input line 1`."""
    good = [json.dumps({"type": "entity", "name": f"E{i}", "entityType": "t", "observations": [f"o{i}"]})
            for i in range(12)]
    big = b'{"type":"entity","name":"big","entityType":"x","observations":["' + b"x" * (33 << 20) + b'"]}'
    data = tmp_path / "m.jsonl"
    data.write_bytes(b"\n".join([*(g.encode() for g in good[:5]),
                                 b'{"type":"entity","name":"caf\xe9","entityType":"x","observations":["\xff"]}',
                                 *(g.encode() for g in good[5:9]), big, *(g.encode() for g in good[9:])])
                     + b"\n\n\n")
    code, health, err = fgraph_cli(tmp_path / "x.db", "import", "mcp-memory", data, "--batch-size", "2",
                                   "--skip-bad")
    assert code == 0, err
    assert health["imported"] == 12 and health["corrupt"] == 2 and health["lines"] == 16   # 14 lines + 2 blank
    first, second = health["problems"]
    assert first == {"kind": "corrupt", "line": 6, "reason": "the line is not valid UTF-8 (byte 29 of the line)"}
    assert second["line"] == 11 and "over" in second["reason"] and "add input" not in second["reason"]
    code, health, err = fgraph_cli(tmp_path / "strict.db", "import", "mcp-memory", data, "--strict")
    assert code == 1 and "2 of 16 lines" in err and "line 6" in err
    assert fgraph_cli(tmp_path / "strict.db", "get", "E0")[0] == 1   # nothing was written


def test_lines_counts_trailing_blank_lines(tmp_path):
    data = tmp_path / "m.jsonl"
    data.write_text('{"type":"entity","name":"ok","entityType":"t","observations":["o"]}\n\n\n\n')
    code, health, _ = fgraph_cli(tmp_path / "x.db", "import", "mcp-memory", data)
    assert code == 0 and health["lines"] == 4 and health["imported"] == 1
