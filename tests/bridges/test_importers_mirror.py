"""``fgraph import mcp-memory --mirror`` (issue 30 item 5): the facts one import source holds follow
its file. What the server deleted (an observation, a relation, an entity) is retracted by an ordinary
retraction, so history keeps it; facts written any other way survive; a re-run writes nothing; a line
that is not a record, or a record the store refuses, leaves the store exactly as it was; without
--mirror an import stays additive. Through the library (``run_import``) and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fgraph
from fgraph.bridges.add.data_source import open_data
from fgraph.bridges.importers.records import relation_attribute
from fgraph.bridges.importers.pipeline import ImportJob, run_import
from fgraph.core.errors import FgraphError, ValueTypeError
from tests.support.cli import run_cli, run_cli_json
from tests.support.paths import FIXTURES

CLOCK = 1767225600000000
MEMORY = FIXTURES / "import" / "mcp-memory.jsonl"

ADA = {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["born 1815", "wrote notes"]}
BABBAGE = {"type": "entity", "name": "Babbage", "entityType": "person", "observations": ["built engines"]}
ENGINE = {"type": "entity", "name": "Engine", "entityType": "machine", "observations": ["never finished"]}
WORKED = {"type": "relation", "from": "Ada", "to": "Babbage", "relationType": "worked with"}
DESIGNED = {"type": "relation", "from": "Babbage", "to": "Engine", "relationType": "designed"}
ALL = (ADA, BABBAGE, ENGINE, WORKED, DESIGNED)
NOTHING = {"entities": 0, "facts": 0, "observations": 0, "relations": 0}


def write(path: Path, *records) -> Path:
    """A memory file as the server writes it: one compact line each, no final newline."""
    path.write_text("\n".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) for r in records),
                    encoding="utf-8")
    return path


def without(record: dict, observation: str) -> dict:
    return dict(record, observations=[o for o in record["observations"] if o != observation])


def load(db, path: Path, *, mirror: bool = True, **options) -> dict:
    job = ImportJob("mcp-memory", str(path), mirror=mirror, **options)
    with open_data("@" + str(path), None) as data:
        return run_import(db, job, data)


def fgraph_cli(db: Path, *args, stdin: bytes | None = None) -> tuple[int, object, str]:
    """``run_cli_json`` with this module's event seed."""
    return run_cli_json(db, *args, seed="mirror-tests", stdin=stdin)


def snapshot(db: Path) -> bytes:
    return run_cli("snapshot", db=db, text=False, check=True).stdout


@pytest.fixture
def store(tmp_path):
    """A store holding ALL, imported from ``memory.jsonl`` (the file the tests then edit)."""
    with fgraph.connect(str(tmp_path / "m.db"), clock=CLOCK) as db:
        report = load(db, write(tmp_path / "memory.jsonl", *ALL))
        assert (report["imported"], report["retracted"]) == (5, NOTHING)
        yield db, tmp_path / "memory.jsonl"


def test_a_deleted_observation_is_retracted_and_history_keeps_it(store):
    db, path = store
    report = load(db, write(path, without(ADA, "born 1815"), BABBAGE, ENGINE, WORKED, DESIGNED))
    assert report["retracted"] == {"entities": 0, "facts": 1, "observations": 1, "relations": 0}
    assert (report["imported"], report["already_imported"], report["batches"]) == (1, 4, 1)
    assert db.entity("Ada")["memory/observation"] == ["wrote notes"]
    gone = [f for f in db.history("Ada", "memory/observation") if f["v"] == "born 1815"]
    assert len(gone) == 1 and gone[0]["rx"] is not None and gone[0]["source"] == f"{path}:1"
    assert db.receipt(gone[0]["rx"])["meta"] == {"mirror": "mcp-memory"}


def test_a_rerun_on_the_same_file_writes_nothing(store):
    db, path = store
    write(path, without(ADA, "born 1815"), BABBAGE, ENGINE, DESIGNED)
    load(db, path)
    latest = db.latest_tx()
    again = load(db, path)
    assert db.latest_tx() == latest
    assert (again["imported"], again["already_imported"], again["batches"], again["reasserted"]) == (0, 4, 0, 0)
    assert again["retracted"] == NOTHING and again["mirror"] is True


def test_a_deleted_relation_is_retracted(store):
    db, path = store
    report = load(db, write(path, ADA, BABBAGE, ENGINE, DESIGNED))
    assert report["retracted"] == {"entities": 0, "facts": 1, "observations": 0, "relations": 1}
    assert "rel/worked-with" not in db.entity("Ada")
    assert db.entity("Babbage")["rel/designed"] == [{"ref": "Engine"}]
    assert [f["rx"] is not None for f in db.history("Ada", "rel/worked-with")] == [True]


def test_a_deleted_entity_loses_its_imported_facts_and_keeps_the_rest(store):
    """The server drops an entity with its relations; what was said about it by other means stays."""
    db, path = store
    db.transact({"id": "Engine", "note/status": "in the Science Museum"}, by="alice")
    db.transact(["assert", "Engine", "memory/observation", "restored in 1991"], by="alice")
    report = load(db, write(path, ADA, BABBAGE, WORKED))
    assert report["retracted"] == {"entities": 1, "facts": 4, "observations": 1, "relations": 1}  # name, type too
    assert db.entity("Engine") == {"memory/observation": ["restored in 1991"], "note/status": "in the Science Museum"}
    assert "rel/designed" not in db.entity("Babbage")
    assert {f["a"] for f in db.history("Engine") if f["rx"] is not None} == {"memory/name", "memory/type",
                                                                             "memory/observation"}


def test_facts_added_by_hand_to_an_imported_entity_survive(store):
    db, path = store
    db.transact(["assert", "Ada", "memory/observation", "first programmer"], by="alice")
    db.transact({"id": "Ada", "person/born": 1815, "rel/inspired": {"ref": "Engine"}}, source=f"{path}:1")
    report = load(db, write(path, without(ADA, "wrote notes"), BABBAGE, ENGINE, WORKED, DESIGNED))
    assert report["retracted"] == {"entities": 0, "facts": 1, "observations": 1, "relations": 0}
    ada = db.entity("Ada")
    assert sorted(ada["memory/observation"]) == ["born 1815", "first programmer"]
    # the source looks like the import's, but the transaction was not written by an importer
    assert (ada["person/born"], ada["rel/inspired"]) == (1815, {"ref": "Engine"})


def test_another_source_is_left_alone(store, tmp_path):
    db, path = store
    lab = {"type": "entity", "name": "Lab", "entityType": "place", "observations": ["in London"]}
    load(db, write(tmp_path / "other.jsonl", lab, {"type": "relation", "from": "Lab", "to": "Ada",
                                                   "relationType": "hosted"}))
    report = load(db, write(path, ADA))   # Babbage, Engine and both relations go from this source
    assert report["retracted"] == {"entities": 2, "facts": 8, "observations": 2, "relations": 2}
    assert db.entity("Lab") == {"memory/name": "Lab", "memory/observation": ["in London"], "memory/type": "place",
                                "rel/hosted": [{"ref": "Ada"}]}
    assert db.entity("Babbage") == {} and db.entity("Ada")["memory/observation"] == ADA["observations"]


def test_a_fact_the_file_holds_again_is_asserted_again(store):
    """Retracted by a mirror (or by hand), then back in the file: the old line's event is known, so a
    new event asserts it again; the facts the file holds follow the file."""
    db, path = store
    load(db, write(path, without(ADA, "born 1815"), BABBAGE, ENGINE, WORKED, DESIGNED))
    db.retract("Engine", "memory/observation", "never finished", by="alice")
    report = load(db, write(path, *ALL))
    assert (report["imported"], report["reasserted"], report["already_imported"]) == (0, 2, 3)
    assert sorted(db.entity("Ada")["memory/observation"]) == ["born 1815", "wrote notes"]
    assert db.entity("Engine")["memory/observation"] == ["never finished"]
    assert load(db, path)["batches"] == 0


def test_without_mirror_the_import_stays_additive(store):
    db, path = store
    report = load(db, write(path, without(ADA, "born 1815"), BABBAGE, ENGINE), mirror=False)
    assert "retracted" not in report and "mirror" not in report
    assert sorted(db.entity("Ada")["memory/observation"]) == ["born 1815", "wrote notes"]
    assert db.entity("Ada")["rel/worked-with"] == [{"ref": "Babbage"}]


def test_a_record_the_store_refuses_leaves_everything_unwritten(store):
    """Additions and retractions are one write: the retraction planned before the bad record is gone too."""
    db, path = store
    db.transact({"id": "Someone", "memory/name": "Grace"})   # memory/name is unique: the import collides
    latest = db.latest_tx()
    grace = {"type": "entity", "name": "Grace", "entityType": "person", "observations": []}
    with pytest.raises(FgraphError) as caught:
        load(db, write(path, without(ADA, "born 1815"), BABBAGE, ENGINE, WORKED, DESIGNED, grace))
    assert "line 6" in caught.value.message and "nothing was written" in caught.value.message
    assert db.latest_tx() == latest
    assert sorted(db.entity("Ada")["memory/observation"]) == ["born 1815", "wrote notes"]


def test_another_writer_between_plan_and_write_is_planned_again(store):
    """The plan is read at one basis outside the write; if the store moved, it is made again under the lock."""
    db, path = store
    write(path, without(ADA, "born 1815"), BABBAGE, ENGINE, WORKED, DESIGNED)
    job = ImportJob("mcp-memory", str(path), mirror=True)

    def meanwhile(where) -> None:
        if where == 1:
            with fgraph.connect(db.path, clock=CLOCK) as other:
                other.retract("Engine", "memory/observation", "never finished", by="bob")

    with open_data("@" + str(path), None) as data:
        report = run_import(db, job, data, on_item=meanwhile)
    assert (report["reasserted"], report["retracted"]["observations"]) == (1, 1)
    assert db.entity("Engine")["memory/observation"] == ["never finished"]
    assert db.entity("Ada")["memory/observation"] == ["wrote notes"]


def test_options_that_do_not_fit_a_mirror_are_refused():
    with pytest.raises(ValueTypeError, match="mcp-memory files, not jsonl-log"):
        ImportJob("jsonl-log", "d.jsonl", mirror=True)
    with pytest.raises(ValueTypeError, match="needs a --source label"):
        ImportJob("mcp-memory", "stdin", mirror=True)
    assert ImportJob("mcp-memory", "stdin", mirror=True, source="laptop").source_label == "laptop"


# ----------------------------------------------------------------- through the CLI

def test_cli_mirror_of_the_real_servers_file(tmp_path):
    """The fixture the real server wrote, then the server deletes Charles Babbage (and so his relations)
    and one of Ada's observations: the mirror retracts exactly that, once."""
    db, path = tmp_path / "c.db", tmp_path / "memory.jsonl"
    path.write_bytes(MEMORY.read_bytes())
    code, first, err = fgraph_cli(db, "import", "mcp-memory", path, "--mirror")
    assert code == 0 and (first["imported"], first["skipped"], first["retracted"]) == (15, 1, NOTHING), err
    lines = [json.loads(line) for line in MEMORY.read_text(encoding="utf-8").split("\n")]
    kept = []
    for line in lines:
        if "Charles Babbage" in (line.get("name"), line.get("from"), line.get("to")):
            continue
        if line.get("name") == "Ada Lovelace":
            line = dict(line, observations=line["observations"][1:])
        kept.append(line)
    dropped = {(line["from"], relation_attribute(line["relationType"]), line["to"]) for line in lines
               if line["type"] == "relation" and "Charles Babbage" in (line["from"], line["to"])}   # line 15 repeats 8
    babbage = next(line for line in lines if line.get("name") == "Charles Babbage")
    write(path, *kept)
    code, health, err = fgraph_cli(db, "import", "mcp-memory", path, "--mirror", "--dry-run")
    assert code == 0 and health["dry_run"] is True, err
    before = snapshot(db)
    code, report, err = fgraph_cli(db, "import", "mcp-memory", path, "--mirror")
    assert code == 0, err
    assert report["retracted"] == health["retracted"] == {
        "entities": 1, "facts": 2 + len(babbage["observations"]) + 1 + len(dropped),
        "observations": len(babbage["observations"]) + 1, "relations": len(dropped)}
    assert fgraph_cli(db, "get", "Charles Babbage")[1] == {}
    his = fgraph_cli(db, "history", "Charles Babbage")[1]   # his name, type, observations, relations from him
    assert len(his) == 2 + len(babbage["observations"]) + sum(1 for r in dropped if r[0] == "Charles Babbage")
    assert all(fact["rx"] is not None for fact in his)
    assert before != snapshot(db)
    after = snapshot(db)
    code, again, _ = fgraph_cli(db, "import", "mcp-memory", path, "--mirror")
    assert code == 0 and again["batches"] == 0 and again["retracted"]["facts"] == 0 and snapshot(db) == after
    assert fgraph_cli(db, "doctor")[0] == 0


def test_cli_a_malformed_line_refuses_the_mirror_and_writes_nothing(tmp_path):
    db, path = tmp_path / "c.db", tmp_path / "memory.jsonl"
    write(path, *ALL)
    assert fgraph_cli(db, "import", "mcp-memory", path, "--mirror")[0] == 0
    before = snapshot(db)
    path.write_text(path.read_text(encoding="utf-8").replace(json.dumps(ENGINE, separators=(",", ":")),
                                                             '{"type":"entity","name":"Engi'), encoding="utf-8")
    code, out, err = fgraph_cli(db, "import", "mcp-memory", path, "--mirror")
    assert code == 1 and out is None and err.startswith("TypeError: ") and "Traceback" not in err
    assert "1 of 5 lines" in err and "line 3" in err and "nothing was written" in err
    assert snapshot(db) == before
    code, additive, err = fgraph_cli(db, "import", "mcp-memory", path)   # without --mirror: reported, and exit 1
    assert code == 1 and additive["corrupt"] == 1 and "line 3" in err and "--skip-bad" in err


def test_cli_dry_run_counts_and_writes_nothing_and_stdin_needs_a_label(tmp_path):
    db, path = tmp_path / "c.db", tmp_path / "memory.jsonl"
    code, _, err = fgraph_cli(db, "import", "mcp-memory", "-", "--mirror", "--source", "laptop",
                              stdin=write(path, *ALL).read_bytes())
    assert code == 0, err
    before = snapshot(db)
    smaller = write(path, ADA, BABBAGE).read_bytes()
    code, dry, err = fgraph_cli(db, "import", "mcp-memory", "-", "--mirror", "--source", "laptop", "--dry-run",
                                stdin=smaller)
    assert code == 0 and dry["dry_run"] is True, err
    assert dry["retracted"] == {"entities": 1, "facts": 5, "observations": 1, "relations": 2}
    assert snapshot(db) == before
    code, _, err = fgraph_cli(db, "import", "mcp-memory", "-", "--mirror", stdin=smaller)
    assert code == 1 and "--source" in err and snapshot(db) == before
    code, _, err = fgraph_cli(db, "import", "jsonl-log", path, "--mirror")
    assert code == 1 and "mcp-memory files" in err
