"""The import formats are a registry (issue 46 item 1): adding a format is one module plus one
``register`` line. Two throwaway formats defined here — ``lines-of-text`` (line-based, written to
the ``Importer`` protocol directly) and ``paragraphs`` (items located by paragraph, not line) —
are registered at run time and run through the real pipeline and the real CLI: the facts land,
bad items are reported where they are, the CLI offers, documents and completes them. Every
registered format has a description and an example that its help shows and that parses."""

from __future__ import annotations

import json
import shlex

import click
import pytest

import fgraph
from fgraph.bridges.add.data_source import BadLine, open_data
from fgraph.bridges.importers import registry
from fgraph.bridges.importers.items import BadItem, Item
from fgraph.bridges.importers.pipeline import ImportJob, run_import
from fgraph.bridges.importers.records import EventBuilder, event_uuid
from fgraph.cli.main import cli
from fgraph.core.errors import Conflict, NotFound, ValueTypeError
from tests.support.cli import invoke_cli


def note_event(name: str, text: str, context, where, fmt: str) -> dict:
    builder = EventBuilder()
    builder.fact(builder.named(name), builder.attribute("note/text", "text", many=True), text, "text")
    return builder.event(event_uuid(fmt, [name, text]), context.at, by=context.by, source=context.source(where),
                         meta=context.meta)


class LinesOfText:
    """``NAME: text`` per line; anything else is a bad line."""

    name = "lines-of-text"
    description = "One note per line, written NAME: TEXT."
    example = "fgraph --db notes.db import lines-of-text notes.txt --by alice"
    options = frozenset()
    line_based = True

    def items(self, source, context):
        for number, line in source.lines_with_faults():
            if isinstance(line, BadLine):
                yield BadItem(number, line.reason)
            elif ": " not in line:
                yield BadItem(number, "the line has no 'NAME: ' before its text")
            else:
                name, text = line.split(": ", 1)
                yield Item(number, note_event(name, text, context, number, self.name))


class Paragraphs:
    """Paragraphs separated by a blank line, the first line naming the entity; located by paragraph."""

    name = "paragraphs"
    description = "One note per paragraph, its first line the entity's name."
    example = "fgraph --db notes.db import paragraphs notes.md"
    options = frozenset()
    line_based = False

    def items(self, source, context):
        count, lines = 0, []
        for line in (source.whole_text() + "\n\n").split("\n"):
            if line.strip():
                lines.append(line.strip())
            elif lines:
                count += 1
                where = f"paragraph {count}"
                if len(lines) < 2:
                    yield BadItem(where, "a paragraph needs a name line and a text")
                else:
                    yield Item(where, note_event(lines[0], " ".join(lines[1:]), context, where, self.name))
                lines = []


@pytest.fixture
def formats():
    """The two throwaway formats, registered for one test through the public functions."""
    added = [registry.register(LinesOfText()), registry.register(Paragraphs())]
    yield added
    for importer in added:
        registry.unregister(importer.name)
    assert list(registry.FORMATS) == ["mcp-memory", "jsonl-log"]


def test_a_registered_format_runs_through_the_pipeline(formats, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("ada: wrote the first program\n\nno colon here\nbabbage: built engines\n"
                     "ada: wrote the first program\n\n", encoding="utf-8")
    job = ImportJob("lines-of-text", str(notes), by="alice")
    with fgraph.connect(str(tmp_path / "n.db")) as db, open_data("@" + str(notes), None) as data:
        health = run_import(db, job, data, on_item=(seen := []).append)
        assert seen == [1, 3, 4, 5]   # progress is per item: the blank lines are not items
        assert (health["items"], health["lines"], health["imported"], health["corrupt"], health["skipped"]) == \
            (4, 6, 2, 1, 1)
        assert health["problems"] == [
            {"line": 3, "kind": "corrupt", "reason": "the line has no 'NAME: ' before its text"},
            {"line": 5, "kind": "skipped", "reason": "repeats line 1"}]
        assert db.entity("ada")["note/text"] == ["wrote the first program"]
        receipt = db.receipt(db.why("babbage", "note/text")[0]["tx"])
        assert (receipt["by"], receipt["source"]) == ("alice", f"{notes}:4")
        again = run_import(db, job, data)
        assert (again["imported"], again["already_imported"]) == (0, 2)


def test_a_format_that_is_not_line_based_reports_its_own_locators(formats, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("Ada\nwrote the first\nprogram\n\nlonely\n\nBabbage\nbuilt engines\n", encoding="utf-8")
    with fgraph.connect(str(tmp_path / "p.db")) as db, open_data("@" + str(notes), None) as data:
        health = run_import(db, ImportJob("paragraphs", "notes.md", source="notebook"), data)
        assert "lines" not in health and (health["items"], health["imported"], health["corrupt"]) == (3, 2, 1)
        assert health["problems"] == [{"at": "paragraph 2", "kind": "corrupt",
                                       "reason": "a paragraph needs a name line and a text"}]
        assert db.entity("Ada")["note/text"] == ["wrote the first program"]
        assert db.receipt(db.why("Babbage", "note/text")[0]["tx"])["source"] == "notebook:paragraph 3"
        with pytest.raises(ValueTypeError) as refused:
            run_import(db, ImportJob("paragraphs", "notes.md", strict=True), data)
        assert "1 of 3 items are not importable (first: paragraph 2, " in refused.value.message


def test_the_cli_offers_documents_and_runs_a_registered_format(formats, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("ada: counted in base 10\nnonsense\n", encoding="utf-8")
    db = str(tmp_path / "c.db")
    code, out, err = invoke_cli(["--db", db, "--json", "import", "lines-of-text", str(notes), "--skip-bad"])
    assert code == 0, err
    health = json.loads(out)
    assert (health["format"], health["imported"], health["problems"][0]["line"]) == ("lines-of-text", 1, 2)
    with fgraph.connect(db, read_only=True) as handle:
        assert handle.entity("ada")["note/text"] == ["counted in base 10"]
    code, out, _ = invoke_cli(["import", "--help"])
    assert code == 0 and LinesOfText.description in out and LinesOfText.example in out
    assert Paragraphs.description in out and Paragraphs.example in out
    code, _, err = invoke_cli(["--db", db, "import", "csv", str(notes)])
    assert code == 2 and "'lines-of-text', 'paragraphs'" in err
    command = cli.get_command(click.Context(cli), "import")
    fmt = next(param for param in command.params if param.name == "fmt")
    completed = [item.value for item in fmt.type.shell_complete(click.Context(command), fmt, "")]
    assert completed == ["mcp-memory", "jsonl-log", "lines-of-text", "paragraphs"]


def test_mirror_is_refused_for_a_format_that_does_not_support_it(formats, tmp_path):
    with pytest.raises(ValueTypeError) as refused:
        ImportJob("lines-of-text", "notes.txt", mirror=True)
    assert refused.value.message == "--mirror is for mcp-memory files, not lines-of-text"
    assert "without --mirror" in refused.value.hint
    notes = tmp_path / "notes.txt"
    notes.write_text("ada: x\n", encoding="utf-8")
    code, out, err = invoke_cli(["--db", str(tmp_path / "m.db"), "import", "lines-of-text", str(notes), "--mirror"])
    assert code == 1 and out == "" and err.startswith("TypeError: --mirror is for mcp-memory files")
    assert "Traceback" not in err


def test_an_unknown_format_is_refused_with_the_registered_names():
    with pytest.raises(ValueTypeError) as refused:
        ImportJob("csv", "x.csv")
    assert refused.value.hint == "choose mcp-memory or jsonl-log"
    assert registry.choices(["a"]) == "a" and registry.choices(["a", "b", "c"]) == "a, b or c"
    with pytest.raises(NotFound):
        registry.unregister("csv")


@pytest.mark.parametrize("change, error", [
    ({"name": "Lines Of Text"}, ValueTypeError),
    ({"name": "mcp-memory"}, Conflict),
    ({"description": ""}, ValueTypeError),
    ({"description": "two\nlines"}, ValueTypeError),
    ({"example": "fgraph --db x.db import mcp-memory f"}, ValueTypeError),   # another format's example
    ({"options": frozenset({"rewind"})}, ValueTypeError),
    ({"line_based": None}, ValueTypeError),
])
def test_a_format_with_a_broken_declaration_is_refused_at_registration(change, error):
    broken = LinesOfText()
    for key, value in change.items():
        setattr(broken, key, value)
    with pytest.raises(error) as refused:
        registry.register(broken)
    assert refused.value.hint
    assert list(registry.FORMATS) == ["mcp-memory", "jsonl-log"]


def test_every_registered_format_is_in_the_help_with_an_example_that_parses():
    code, out, _ = invoke_cli(["import", "--help"])
    assert code == 0
    for name, importer in registry.FORMATS.items():
        assert importer.description.strip() and importer.description in out, name
        assert importer.example in out, name
        words = shlex.split(importer.example)
        assert words[0] == "fgraph" and words[words.index("import") + 1] == name
        cli.make_context("fgraph", words[1:], resilient_parsing=False)   # a UsageError if it does not parse
    for line in out.split("\n"):
        assert len(line) <= 80, line
