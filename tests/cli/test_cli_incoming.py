"""``fgraph get REF --incoming`` through the real executable (issue 30 item 3; ours): the entity
and what refers to it, as ``Db.about`` returns them, at the latest transaction or ``--at``;
without the flag ``get`` prints what it always printed; an unknown entity is NotFound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fgraph
from tests.support.cli import CliResult, run_cli

START = 1767225600000000
ENGINE = "Analytical Engine"


def cli(db: Path, *args) -> CliResult:
    """``run_cli`` with only this module's clock and seed in the environment."""
    return run_cli(*args, db=db, timeout=60, env={"FGRAPH_CLOCK": str(START), "FGRAPH_EVENT_SEED": "cli-incoming"})


def data(db: Path, *args):
    proc = cli(db, "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def store(tmp_path):
    """Ada's note on the Engine, then a decision referring to it (an anonymous entity)."""
    db = tmp_path / "i.db"
    data(db, "add", json.dumps({"id": ENGINE, "thing/kind": "machine"}))
    data(db, "add", json.dumps({"id": "ada", "person/name": "Ada", "notes/on": {"ref": ENGINE}}))
    data(db, "add", json.dumps({"decision/text": "build it", "decision/references": {"ref": ENGINE}}))
    return db


def _decision(db: Path) -> int:
    with fgraph.connect(str(db), read_only=True) as handle:
        return handle.q({"find": ["?e"], "where": [["?e", "decision/text", "build it"]]})["rows"][0][0]["ref"]


def test_get_incoming_lists_the_note_and_the_decision(store):
    decision = _decision(store)
    assert data(store, "get", ENGINE, "--incoming") == {
        "entity": {"thing/kind": "machine"},
        "incoming": [{"attribute": "decision/references", "entity": decision, "name": None},
                     {"attribute": "notes/on", "entity": "ada", "name": "ada"}],
        "incoming_truncated": False}
    with fgraph.connect(str(store), read_only=True) as handle:
        assert data(store, "get", ENGINE, "--incoming") == handle.about(ENGINE)
    pretty = cli(store, "get", ENGINE, "--incoming")
    assert pretty.returncode == 0 and json.loads(pretty.stdout)["incoming"][1]["entity"] == "ada"
    assert pretty.stdout.startswith('{\n  "entity": {')


def test_get_without_incoming_is_unchanged(store):
    assert data(store, "get", ENGINE) == {"thing/kind": "machine"}
    assert data(store, "get", "ada", "--depth", "2") == {"notes/on": {"thing/kind": "machine"}, "person/name": "Ada"}


def test_get_incoming_at_an_earlier_time_and_with_depth(store):
    before = data(store, "info")["latest_tx"]
    data(store, "retract", "ada", "notes/on")
    decision = _decision(store)
    assert data(store, "get", ENGINE, "--incoming")["incoming"] == [
        {"attribute": "decision/references", "entity": decision, "name": None}]
    assert [i["entity"] for i in data(store, "get", ENGINE, "--incoming", "--at", before)["incoming"]] == [decision, "ada"]
    assert data(store, "get", "ada", "--incoming", "--at", before, "--depth", "2") == {
        "entity": {"notes/on": {"thing/kind": "machine"}, "person/name": "Ada"}, "incoming": [],
        "incoming_truncated": False}


def test_get_incoming_of_an_unknown_entity_is_not_found(store):
    proc = cli(store, "get", "nobody", "--incoming")
    assert proc.returncode == 1 and proc.stderr.startswith("NotFound: ") and "Traceback" not in proc.stderr
    assert proc.stdout == ""
