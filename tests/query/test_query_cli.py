"""Proves the CLI of the query surface: q/explain/datoms read QUERY inline, from @file or stdin,
map bad input to typed errors (never a traceback) and open the database read-only."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from tests.support.query_data import people
from tests.support.cli import run_cli

FGRAPH = os.path.join(os.path.dirname(sys.executable), "fgraph")


@pytest.fixture
def db_path(tmp_path):
    path = str(tmp_path / "p.db")
    people(path).close()
    return path


def test_inline_file_and_stdin(db_path, tmp_path):
    query = '{"find":["?n"],"where":[["?e","person/name","?n"]],"order":[["?n","asc"]]}'
    (tmp_path / "q.json").write_text(query)
    expected = {"columns": ["?n"], "rows": [["Alice"], ["Bob"], ["Charlie"]]}
    for args, stdin in (([query], None), ([f"@{tmp_path / 'q.json'}"], None), (["-"], query)):
        rc, out, err = run_cli("q", *args, input=stdin, db=db_path, json=True)
        assert rc == 0 and json.loads(out) == expected, err


@pytest.mark.parametrize("args,code,name", [
    (["q", "[1]"], 1, "QueryError"),
    (["q", "{"], 1, "TypeError"),
    (["q", '{"find":["?n"],"find":["?n"]}'], 1, "TypeError"),
    (["q", '{"find":["?m"],"where":[["?e","person/age","?a"],[">","?a","?m"]],"in":["?m"]}', "--args", "[1]"], 1,
     "TypeError"),
    (["q", "@/nonexistent/q.json"], 1, "FormatError"),
    (["q", '{"find":["?n"],"where":[["?e","person/name","?n"]]}', "--at", "yesterday"], 2, None),
    (["q", '{"find":["?e"],"where":[["?e","?a","?v"]]}', "--query-budget", "5"], 2, None),
    (["datoms", "--components", '"ada"'], 1, "TypeError"),
    (["datoms", "--limit", "0"], 1, "QueryError"),
    (["explain", '{"find":["?n"],"where":[{"rule":["r","?e"]}]}'], 1, "QueryError"),
])
def test_bad_input_is_typed(db_path, args, code, name):
    rc, out, err = run_cli(*args, db=db_path, json=True)
    assert rc == code and "Traceback" not in err
    if name:
        assert err.startswith(f"{name}: ") and out == ""


def test_the_budget_is_a_global_option_and_missing_files_are_not_created(db_path, tmp_path):
    rc, _, err = subprocess.run([FGRAPH, "--db", db_path, "--query-budget", "2", "q",
                                 '{"find":["?e"],"where":[["?e","person/name","_"]]}'],
                                capture_output=True, text=True).returncode, None, None
    assert rc == 1
    missing = str(tmp_path / "missing.db")
    rc, _, err = run_cli("q", '{"find":["?e"],"where":[["?e","a/b","_"]]}', db=missing, json=True)
    assert rc == 1 and err.startswith("NotFound") and not os.path.exists(missing)
    rc, out, _ = run_cli("datoms", "avet", "--components", '["person/age"]', "--limit", "2", db=db_path, json=True)
    page = json.loads(out)
    assert rc == 0 and [i["v"] for i in page["items"]] == [30, 35] and page["next_cursor"]
    rc, out, _ = run_cli("datoms", "avet", "--components", '["person/age"]', "--cursor", page["next_cursor"], db=db_path, json=True)
    assert [i["v"] for i in json.loads(out)["items"]] == [42]


def test_reads_leave_the_file_byte_identical(db_path):
    """q, explain and datoms, answered or refused, never write: the file keeps its bytes and the WAL
    stays empty (a reader of a WAL-mode file may create the empty ``-wal`` SQLite needs)."""
    def state():
        wal = pathlib.Path(db_path + "-wal")
        return pathlib.Path(db_path).read_bytes(), wal.read_bytes() if wal.exists() else b""

    before = state()
    calls = [["q", '{"find":["?n"],"where":[["?e","person/name","?n"]]}'],
             ["--query-budget", "5", "q", '{"find":["?e"],"where":[["?e","?a","?v"],["?x","?b","?w"]]}'],
             ["q", '{"find":["?e"],"where":[["?e","person/name","x\'); DROP TABLE fgraph_facts; --"]]}'],
             ["q", "[1]"], ["explain", '{"find":["?n"],"where":[["?e","person/name","?n"]]}'],
             ["datoms", "eavt", "--limit", "3"], ["datoms", "--cursor", "forged"]]
    codes = [run_cli(*args, db=db_path, json=True)[0] for args in calls]
    assert codes == [0, 1, 0, 1, 0, 0, 1]
    assert state() == before


def test_the_budget_can_come_from_the_environment(db_path):
    query = '{"find":["?e"],"where":[["?e","person/name","_"]]}'
    env = dict(os.environ, FGRAPH_QUERY_BUDGET="2")
    proc = subprocess.run([FGRAPH, "--db", db_path, "q", query], capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and proc.stderr.startswith("TooLarge: ") and "2 units" in proc.stderr
    env["FGRAPH_QUERY_BUDGET"] = "1000"
    proc = subprocess.run([FGRAPH, "--db", db_path, "q", query], capture_output=True, text=True, env=env)
    assert proc.returncode == 0
